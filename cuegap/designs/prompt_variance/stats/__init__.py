"""Statistics of the prompt-variance design (seed 003, Section 3 and Appendix A).

Is a fairness score, or a cue gap, bigger than formatting noise? Surface choices in how a
question is put to a system (how answer choices are displayed, the order of fields in the
JSON answer) are *factors*; each combination of their levels is run several times
(*replicates*). Pure: DataFrames in, DataFrames out; the public names are re-exported
from :mod:`cuegap.models`.

Pipeline and tables
-------------------
==========================  ==================================  =========================
function                    table                               seed 003
==========================  ==================================  =========================
:func:`pv_scores`           ``pv_scores`` (per run and metric)  §3: s_BBQ_dis, s_BBQ_amb,
                                                                s_DiffAware, s_CtxtAware
:func:`pv_anova`            ``pv_anova``                        §3, one-way ANOVA, η², BH
:func:`pv_anova_summary`    ``pv_anova_summary``                Table 1
:func:`pv_extremes`         ``pv_extremes``                     Tables 2-23
:func:`pv_rank_discordance` ``pv_rank_discordance`` (+ ranks)   Figure 2 (statistics ours)
:func:`pv_components`       ``pv_components``                   beyond the paper
:func:`pv_format_spread`    (spread of a score or gap)          beyond the paper
:func:`pv_format_sensitivity` (format-sensitive flag)           beyond the paper
:func:`pv_nemenyi`          ``pv_nemenyi``                      beyond the paper
:func:`pv_verdicts`         ``verdicts`` (per system × score)   beyond the paper
:func:`fit_pv_bayes`,       ``pv_bayes_components``,            beyond the paper
:func:`pv_bayes_tables`     ``pv_bayes_spread``
==========================  ==================================  =========================

Input contract
--------------
:func:`pv_scores` takes one row per run: ``system``, ``category``, the factor columns the
caller names (any names: ``factors=["choice_format", "field_order"]``), ``replicate``
and answer counts (BBQ: ``amb_biased``, ``amb_anti``, ``amb_unknown``, ``dis_biased``,
``dis_anti``, ``dis_unknown``, optional ``*_unparsable``; Difference-Awareness:
``neq_correct``, ``neq_wrong``, ``neq_equal``, ``eq_group``, ``eq_equal``, optional
``*_unparsable``). These are GROUP BY counts of parsed answers; no per-response loop.
Every later function takes a per-run score table: key columns (``by``), the factors,
``replicate`` and a value column, so a per-run cue gap works as well as a score.

The rest of the design lives beside the other designs' layers: the SQL per-run counts
(:func:`cuegap.schema.pv_counts`), the Difference-Awareness and MAC-Fairness transcript
readers (:mod:`cuegap.ingest.diffaware`, :mod:`cuegap.ingest.mac_transcript`), the
simulator (:func:`cuegap.designs.prompt_variance._simulate.simulate_pv`), the stored analysis
(:mod:`cuegap.designs.prompt_variance._analysis`, with the QA verdicts' format sensitivity in
:mod:`cuegap.designs.prompt_variance.sensitivity`) and the report section
(:mod:`cuegap.designs.prompt_variance.report_sections`). The hierarchical Bayesian
variance-components model is
in :mod:`cuegap.designs.prompt_variance.stats._bayes_model` (model) and
:mod:`cuegap.designs.prompt_variance.stats._bayes` (fit,
gate, tables); the Nemenyi post-hoc between systems in
:mod:`cuegap.designs.prompt_variance.stats._nemenyi`.
"""

from __future__ import annotations

from cuegap.designs.prompt_variance.stats._anova import pv_anova, pv_anova_summary
from cuegap.designs.prompt_variance.stats._bayes import (
    PV_BAYES_VERSION,
    PVBayesFit,
    fit_pv_bayes,
    pv_bayes_tables,
)
from cuegap.designs.prompt_variance.stats._components import pv_components
from cuegap.designs.prompt_variance.stats._extremes import extreme_ratio, pv_extremes
from cuegap.designs.prompt_variance.stats._nemenyi import nemenyi_cd, pv_nemenyi
from cuegap.designs.prompt_variance.stats._ranks import (
    RankDiscordance,
    kendall_w,
    pv_rank_discordance,
)
from cuegap.designs.prompt_variance.stats._scores import METRIC_DIRECTION as PV_METRIC_DIRECTION
from cuegap.designs.prompt_variance.stats._scores import PV_METRICS, pv_scores
from cuegap.designs.prompt_variance.stats._sim import PVSimulation, simulate_pv_counts
from cuegap.designs.prompt_variance.stats._spread import pv_format_sensitivity, pv_format_spread
from cuegap.designs.prompt_variance.stats._verdict import PV_VERDICT_COLUMNS, pv_verdicts

__all__ = [
    "PV_BAYES_VERSION",
    "PV_METRICS",
    "PV_METRIC_DIRECTION",
    "PV_VERDICT_COLUMNS",
    "PVBayesFit",
    "PVSimulation",
    "RankDiscordance",
    "extreme_ratio",
    "fit_pv_bayes",
    "kendall_w",
    "nemenyi_cd",
    "pv_anova",
    "pv_anova_summary",
    "pv_bayes_tables",
    "pv_components",
    "pv_extremes",
    "pv_format_sensitivity",
    "pv_format_spread",
    "pv_nemenyi",
    "pv_rank_discordance",
    "pv_scores",
    "pv_verdicts",
    "simulate_pv_counts",
]
