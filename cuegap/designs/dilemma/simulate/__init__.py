"""Simulated audit results with planted, known effects.

:func:`simulate` writes ``itembank.json``, ``responses.jsonl`` (cuegap responses format)
and ``truth.json`` (what was planted) for a number of simulated audited systems, so that
the analysis can be checked against a known truth. :func:`synthetic_item_bank` builds an
item bank with the Moral Safety design without any real data.

Planting model
--------------
For system ``s`` (``sim-system-01`` ...), all draws are seeded (``np.random.default_rng``
with ``[seed, system_index, stream]``):

* **Neutral decision.** ``p_s ~ U(0.25, 0.5)``; with consequences shown, ``s_d = b_d``
  with probability ``p_s``; without, ``s_d`` copies the first decision with probability
  0.8, else is redrawn the same way (so both settings have marginal ``p_s``). Neutral main
  answers always state ``s_d``.
* **What-if events.** For individual X of an item of condition key ``c`` (``direct``,
  ``puzzled:easy|intermediate|hard``, ``named``, ``formal_named:<difficulty>``)::

      P(favor   | s_d != b_d) = expit(a_f[c] + g_f[c, gender(X)] + r_f[c, race(X)])
      P(against | s_d == b_d) = expit(a_a[c] + g_a[c, gender(X)] + r_a[c, race(X)])

  An event flips the answer away from ``s_d`` (towards ``b_d`` for favor, away from it for
  against); otherwise the answer is ``s_d``. Base favor rates are ``U(0.05, 0.30)`` with
  small (sd 0.1 logit) condition perturbations; base against rates ``U(0.05, 0.25)``, and
  ``a_a[c] = logit(base + w_c * performativeness_s)`` with ``w_c`` 0 (direct), 0.3
  (named), 0.8/1.0/1.2 (easy/intermediate/hard puzzles). Performativeness is spread from
  about 0 to +10 pp, with about a third of the systems near 0. Group effects are
  sum-to-zero within gender and within race (sd 0.3 logit), correlated 0.8 across
  conditions; against effects under cues add a system-specific group shift proportional
  to ``w_c * performativeness`` (some groups move more than others). Without consequences
  each logit adds a per-system shift (sd 0.15).
* **Could-be.** ``P(yes) = expit(intercept[c] + status + group effects)``; the group
  effects (sd 0.3) are full for bad-status persons and scaled by 0.3 otherwise.
* **Abstentions.** What-if abstention 0-2 % per condition (direct main the same), could-be
  0-1 %; with 3 or more systems the last one abstains on 90 % of direct what-if probes
  (60 % named). Puzzle main answers are unparsable at 0.5-1.5 % (truncated JSON or a
  refusal) and recover the puzzle with accuracy 0.97-1.0 / 0.94-0.98 / 0.90-0.95 (easy /
  intermediate / hard; 0.02 lower for formal_named); a wrong recovery swaps one attribute
  between two individuals or changes it in one or two. Abstentions are refusals or junk.

``truth.json`` holds the parameters per system, the realised neutral decisions, and the
exact expected rates given the realised ``s_d``: ``rates`` (per system, condition,
difficulty, consequences, group_type, group: favor_rate, against_rate, favor_n,
against_n), ``pooled_rates``, ``could_be_rates`` and realised abstention counts.
"""

from __future__ import annotations

from cuegap.designs.dilemma.simulate._design import (
    add_named_items,
    placeholder_names,
    synthetic_item_bank,
)
from cuegap.designs.dilemma.simulate._responses import SimulationResult, simulate

__all__ = [
    "SimulationResult",
    "add_named_items",
    "placeholder_names",
    "simulate",
    "synthetic_item_bank",
]
