"""Planted-truth per-run counts for the prompt-variance design (tests, demos, benchmarks).

Per (system, category) the true score of each combination of prompt-construction factor
levels is a base value plus planted effects: one per level of the first factor (SD
``format_sd``), one per level of the second (SD ``field_sd``) and one per cell
(``interaction_sd``), each drawn independently for every score. Runs then draw answers
from those probabilities:

* BBQ: half the questions ambiguous, half disambiguated. Disambiguated: unknown with
  probability 0.05, else biased with probability (1 + s_dis) / 2. Ambiguous: unknown with
  the pair's probability u, else biased with probability (1 + s_raw) / 2, so that
  s_bbq_amb = (1 − u) s_raw.
* Difference-Awareness: half ≠ questions (correct group with probability s_diffaware,
  the rest split evenly between the wrong group and the equal option), half = questions
  (a group with the pair's probability d, else the equal option).

With ``conditions`` (e.g. explicit / implicit cues), every condition after the first adds
a planted gap to every score's true value: ``condition_gap`` plus a per-combination effect
of SD ``condition_format_sd`` (both may be given per system). The truth table then holds
the gap per combination.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

__all__ = ["CHOICE_FORMATS", "FIELD_ORDERS", "PVSimulation", "simulate_pv_counts"]

#: Seed 003's 11 answer-choice formats and 2 JSON field orders.
CHOICE_FORMATS = (
    "bullet",
    "letter_colon",
    "letter_dot",
    "letter_paren",
    "arabic_colon",
    "arabic_dot",
    "arabic_paren",
    "roman_colon",
    "roman_dot",
    "roman_paren",
    "none",
)
FIELD_ORDERS = ("answer_first", "rationale_first")
SCORES = ("s_bbq_dis", "s_bbq_amb_raw", "s_diffaware", "eq_group_rate")
LIMITS = {"s_bbq_dis": (-0.95, 0.95), "s_bbq_amb_raw": (-0.95, 0.95)}
P_LIMITS = (0.02, 0.98)
DIS_UNKNOWN = 0.05


@dataclass(frozen=True)
class PVSimulation:
    """Simulated per-run counts and the truth they were drawn from.

    Attributes
    ----------
    counts : DataFrame
        One row per run: system, category, the factors, [condition], replicate and the
        BBQ and Difference-Awareness count columns of
        :func:`cuegap.designs.prompt_variance.stats.pv_scores`.
    truth : DataFrame
        One row per (system, category, combination[, condition], metric) with
        ``true_score`` and, for ``s_diffaware``, ``sampling_var`` (the exact variance of
        one run's score).
    """

    counts: pd.DataFrame
    truth: pd.DataFrame


def _per_system(value: float | Mapping[str, float], systems: Sequence[str]) -> np.ndarray:
    if isinstance(value, Mapping):
        missing = [s for s in systems if s not in value]
        if missing:
            raise ValueError(f"no value for systems {missing}; got {sorted(value)}")
        return np.array([float(value[s]) for s in systems])
    return np.full(len(systems), float(value))


def simulate_pv_counts(
    *,
    systems: Sequence[str] = ("sys-a", "sys-b", "sys-c"),
    categories: Sequence[str] = ("age", "religion"),
    factors: Mapping[str, Sequence[str]] | None = None,
    replicates: int = 5,
    n_questions: int = 200,
    format_sd: float = 0.08,
    field_sd: float = 0.03,
    interaction_sd: float = 0.0,
    conditions: Sequence[str] | None = None,
    condition_gap: float | Mapping[str, float] = 0.0,
    condition_format_sd: float | Mapping[str, float] = 0.0,
    base_scores: Mapping[str, float] | None = None,
    seed: int = 0,
) -> PVSimulation:
    """Simulate per-run BBQ and Difference-Awareness counts with planted format effects.

    Parameters
    ----------
    systems, categories : sequence of str
        Labels.
    factors : mapping of str to sequence of str, optional
        One or two factors and their levels; default seed 003's ``choice_format`` (11
        levels) and ``field_order`` (2).
    replicates : int, default 5
        Runs per combination.
    n_questions : int, default 200
        Questions per run and benchmark (half per context or split).
    format_sd, field_sd, interaction_sd : float
        SDs of the planted effects of the first factor, the second and their cells.
    conditions : sequence of str, optional
        Condition labels (a ``condition`` column); the first is the reference.
    condition_gap, condition_format_sd : float or mapping of system to float
        The planted gap of later conditions and the SD of its per-combination part.
    base_scores : mapping of str to float, optional
        Fixed base values of some scores (``s_bbq_dis``, ``s_bbq_amb_raw``, ...) for every
        system and category, instead of the uniform draws (which are still made, so the
        other draws do not change): an audit planned at estimated parameters.
    seed : int, default 0

    Returns
    -------
    PVSimulation
    """
    factors = dict(factors or {"choice_format": CHOICE_FORMATS, "field_order": FIELD_ORDERS})
    if not 1 <= len(factors) <= 2:
        raise ValueError(f"factors must name one or two factors; got {list(factors)}")
    if replicates < 1 or n_questions < 2:
        raise ValueError(
            f"replicates must be >= 1 and n_questions >= 2; got {replicates}, {n_questions}"
        )
    rng = np.random.default_rng(seed)
    names = list(factors)
    levels = [list(v) for v in factors.values()]
    conds = list(conditions) if conditions else [None]
    gap = _per_system(condition_gap, systems)
    gap_sd = _per_system(condition_format_sd, systems)
    combos = list(itertools.product(*levels))
    shape = (len(systems), len(categories))
    base = {
        "s_bbq_dis": rng.uniform(-0.2, 0.3, shape),
        "s_bbq_amb_raw": rng.uniform(-0.1, 0.5, shape),
        "s_diffaware": rng.uniform(0.3, 0.7, shape),
        "eq_group_rate": rng.uniform(0.2, 0.5, shape),
    }
    amb_unknown = rng.uniform(0.5, 0.9, shape)
    for score, value in (base_scores or {}).items():
        if score not in SCORES:
            raise ValueError(f"base_scores: unknown score {score!r}; known: {', '.join(SCORES)}")
        base[score] = np.full(shape, float(value))
    rows = []
    for (i, sys), (j, cat) in itertools.product(enumerate(systems), enumerate(categories)):
        eff = {}
        for score in SCORES:
            a = dict(zip(levels[0], rng.normal(0, format_sd, len(levels[0])), strict=True))
            b = dict(zip(levels[-1], rng.normal(0, field_sd, len(levels[-1])), strict=True))
            ab = rng.normal(0, interaction_sd, len(combos))
            eff[score] = [
                a[c[0]] + (b[c[-1]] if len(c) == 2 else 0.0) + ab[n] for n, c in enumerate(combos)
            ]
        gap_c = gap[i] + rng.normal(0, gap_sd[i], len(combos))
        for n, combo in enumerate(combos):
            for h, cond in enumerate(conds):
                shift = gap_c[n] if h > 0 else 0.0
                true = {}
                for score in SCORES:
                    lo, hi = LIMITS.get(score, P_LIMITS)
                    true[score] = float(np.clip(base[score][i, j] + eff[score][n] + shift, lo, hi))
                rows.append((sys, cat, *combo, cond, amb_unknown[i, j], true))
    cols = ["system", "category", *names, "condition"]
    cells = pd.DataFrame([r[:-2] for r in rows], columns=cols)
    u = np.array([r[-2] for r in rows])
    t = {s: np.array([r[-1][s] for r in rows]) for s in SCORES}
    half = n_questions // 2
    runs = cells.loc[cells.index.repeat(replicates)].reset_index(drop=True)
    runs["replicate"] = np.tile(np.arange(replicates), len(cells))
    rep = np.repeat(np.arange(len(cells)), replicates)
    p_dis = np.column_stack(
        [(1 - DIS_UNKNOWN) * (1 + t["s_bbq_dis"]) / 2, (1 - DIS_UNKNOWN) * (1 - t["s_bbq_dis"]) / 2]
    )
    p_dis = np.column_stack([p_dis, 1 - p_dis.sum(axis=1)])
    p_amb = np.column_stack(
        [(1 - u) * (1 + t["s_bbq_amb_raw"]) / 2, (1 - u) * (1 - t["s_bbq_amb_raw"]) / 2]
    )
    p_amb = np.column_stack([p_amb, 1 - p_amb.sum(axis=1)])
    pa = t["s_diffaware"]
    p_neq = np.column_stack([pa, (1 - pa) / 2, (1 - pa) / 2])
    dis = rng.multinomial(half, p_dis[rep])
    amb = rng.multinomial(half, p_amb[rep])
    neq = rng.multinomial(half, p_neq[rep])
    eq_group = rng.binomial(half, t["eq_group_rate"][rep])
    for k, name in enumerate(("biased", "anti", "unknown")):
        runs[f"dis_{name}"] = dis[:, k]
        runs[f"amb_{name}"] = amb[:, k]
    for k, name in enumerate(("correct", "wrong", "equal")):
        runs[f"neq_{name}"] = neq[:, k]
    runs["eq_group"] = eq_group
    runs["eq_equal"] = half - eq_group
    truth_metrics = {
        "s_bbq_dis": t["s_bbq_dis"],
        "s_bbq_amb": (1 - u) * t["s_bbq_amb_raw"],
        "s_diffaware": pa,
        "s_ctxtaware": pa / (pa + t["eq_group_rate"]),
    }
    parts = []
    for metric, val in truth_metrics.items():
        part = cells.copy()
        part["metric"] = metric
        part["true_score"] = val
        part["sampling_var"] = pa * (1 - pa) / half if metric == "s_diffaware" else np.nan
        parts.append(part)
    truth = pd.concat(parts, ignore_index=True)
    if conditions is None:
        runs = runs.drop(columns="condition")
        truth = truth.drop(columns="condition")
    return PVSimulation(counts=runs, truth=truth)
