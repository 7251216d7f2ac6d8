"""Statistics of the multi-agent conversation design (seed 003, §4-5 and Appendix B).

Two agents of one system discuss a benchmark question over rounds: an *identity agent*
(demographics, persona, instantiation human / AI) and a *baseline agent* (no
demographics, no persona, AI). A *reveal condition* says whether each sees the other's
identity. Fairness shows in who moves toward whom: the shift rates λ_iden and λ_base
(Eqs. 1-2) and their contrasts between demographics, reveal conditions and
instantiations. Pure: DataFrames in, DataFrames out; the public names are re-exported
from :mod:`cuegap.models`.

Pipeline and tables
-------------------
===============================  ====================  ===============================
function                         table                 seed 003
===============================  ====================  ===============================
:func:`conv_transition_counts`   the count frame       §4.3 (transitions r − 1 → r)
:func:`conv_shift_rates`         ``conv_shift_rates``  §4.3, Eqs. 1-2
:func:`conv_contrasts`           ``conv_contrasts``    §5.1-5.2, App. B.2
:func:`conv_tests`               ``conv_tests``        §5 footnote 6 (unit: ours)
:func:`conv_consistency`         ``conv_consistency``  §5 (significant on all three)
:func:`conv_consistency_summary` (findings per         §5: 10, 6, 3, 1, 1
                                 contrast)
:func:`simulate_conv_counts`,    planted truth         beyond the paper
:func:`simulate_conv_opinions`
:func:`fit_conv_bayes`,          ``conv_bayes_         beyond the paper: posterior
:func:`conv_bayes_tables`        contrasts``,          intervals, P(same sign on every
                                 ``conv_bayes_         benchmark)
                                 consistency``
:func:`conv_verdicts`,           ``verdicts``,         beyond the paper: flagged /
:func:`conv_bayes_verdicts`      ``conv_bayes_policy`` passed / inconclusive per system
===============================  ====================  ===============================

Input contract: the count frame
-------------------------------
One row per cell, with key columns

* ``system`` (the audited LLM), ``benchmark`` (e.g. ``BBQ``, ``DifferenceAwareness``,
  ``DiscrimEval``), ``category`` (benchmark sub-category),
* ``demographics`` and ``persona`` of the identity agent; the null level (∅) is the
  string ``"none"`` (None / NaN are read as ``"none"``),
* ``instantiation``: ``"human"`` or ``"ai"`` (MAC-Fairness ``if_as_human``),
* ``reveal``: ``"revealed"`` or ``"anonymous"`` (MAC-Fairness ``identity_reveal_config``
  all true / all false; other values, e.g. ``"partial"``, are kept but no contrast uses
  them),
* optionally ``question`` or any other unit column for :func:`conv_tests`,

and four non-negative integer counts of cross-round transitions (r − 1 → r, both rounds
present, rounds 0-indexed):

* ``iden_disagree``: transitions where the identity agent's and the baseline's round
  r − 1 opinions differed (and the identity agent's round r opinion is known);
* ``iden_shift``: those where the identity agent's round r opinion equals the baseline's
  round r − 1 opinion;
* ``base_disagree``, ``base_shift``: the same for the baseline agent moving to the
  identity agent's previous opinion.

A move to a third option counts in the denominator only. Counts are sums over
conversations, so the schema layer can produce them with one SQL ``GROUP BY``; for
tests and small data :func:`conv_transition_counts` builds them from a tidy per-round
opinion frame (``conversation``, ``round``, ``role`` = ``"identity"`` / ``"baseline"``,
``opinion``). The transcript structure is stair-lab/mac-fairness
``schema/2025-12-10/schemas.ts`` (``conversation_rounds[].messages[]``, ``agent_id``,
``structured_response.opinion``); which agent is the identity agent and which the baseline
comes from the run's ``agent_definitions`` (:mod:`cuegap.ingest._conv_snapshot`).

Elsewhere: the store and its SQL count frame (:func:`cuegap.schema.conv_counts`), the
MAC-Fairness reader (:mod:`cuegap.ingest.mac_conversation`), the verdict rules
(:mod:`cuegap.designs.conversation.stats._verdict`, ``_conv_bayes_verdict``), the orchestration
(:mod:`cuegap.designs.conversation._analysis`) and the report
(:mod:`cuegap.designs.conversation._report`).
Seed 003's own analysis code (the t-tests behind Figures 3-10) is not in the public
repository as stored, so the t-test's unit is an option here.
"""

from __future__ import annotations

from cuegap.designs.conversation.stats._bayes import (
    CONV_MODEL_VERSION,
    ConvBayesFit,
    conv_bayes_tables,
    fit_conv_bayes,
)
from cuegap.designs.conversation.stats._bayes_verdict import conv_bayes_verdicts
from cuegap.designs.conversation.stats._contrasts import CONTRASTS as CONV_CONTRASTS
from cuegap.designs.conversation.stats._contrasts import conv_contrasts
from cuegap.designs.conversation.stats._counts import conv_transition_counts
from cuegap.designs.conversation.stats._frame import DEFAULT_PAIRS as CONV_PAIRS
from cuegap.designs.conversation.stats._rates import conv_shift_rates
from cuegap.designs.conversation.stats._sim import (
    ConvSimulation,
    conv_design,
    simulate_conv_counts,
    simulate_conv_opinions,
)
from cuegap.designs.conversation.stats._tests import (
    conv_consistency,
    conv_consistency_summary,
    conv_tests,
)
from cuegap.designs.conversation.stats._verdict import conv_verdicts

__all__ = [
    "CONV_CONTRASTS",
    "CONV_MODEL_VERSION",
    "CONV_PAIRS",
    "ConvBayesFit",
    "ConvSimulation",
    "conv_bayes_tables",
    "conv_bayes_verdicts",
    "conv_consistency",
    "conv_consistency_summary",
    "conv_contrasts",
    "conv_design",
    "conv_shift_rates",
    "conv_tests",
    "conv_transition_counts",
    "conv_verdicts",
    "fit_conv_bayes",
    "simulate_conv_counts",
    "simulate_conv_opinions",
]
