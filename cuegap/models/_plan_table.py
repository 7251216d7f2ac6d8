"""The plan table: one row per system × headline contrast × decision, for every design.

A design's planner (``Design.plan``) gives one :class:`PlanInput` per system and headline
contrast: the gap to plan for, its standard error at the audit's current size, and the
policy. :func:`plan_table` turns them into the table ``cuegap plan`` prints and stores
(``cuegap export plan``), :func:`decision_curve` into decision probability against size,
and :func:`answer_line` into the one-line answer. Pure: numpy, scipy and pandas only.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, fields

import numpy as np
import pandas as pd

from cuegap.models._plan import (
    decision_probability,
    min_detectable_gap,
    required_size,
    se_at,
)

__all__ = ["PLAN_COLUMNS", "PlanInput", "answer_line", "decision_curve", "plan_table"]

#: The issue's columns first, then what they were computed from.
PLAN_COLUMNS = [
    "system",
    "design",
    "contrast",
    "decision",
    "current_size",
    "size_unit",
    "p_decide",
    "required_size",
    "mde",
    "gap",
    "se",
    "delta",
    "probability",
    "target",
    "min_size",
    "max_size",
    "scale",
    "icc",
    "deff",
    "source",
]


@dataclass(frozen=True, slots=True)
class PlanInput:
    """What a design's planner knows about one system's headline contrast.

    Attributes
    ----------
    system, design, contrast : str
        Who, which design, and what is compared (in the design's words).
    gap : float
        The gap to plan a flag for: the pilot's estimate, or the stated gap.
    se : float
        Standard error of the gap estimate at ``current_size``.
    current_size : float
        The audit's size, in ``size_unit`` (the resampling unit: items, not responses).
    size_unit : str
        "dilemmas per condition", "questions per category and context", ...
    delta, probability : float
        The policy's δ (on the gap's scale) and required probability q.
    min_size : float
        Below this size the rule cannot decide (the policy's minimum of parsable
        responses, in ``size_unit``).
    scale : str
        The gap's unit for messages ("pp", "bias score").
    source : str
        Where the assumptions came from (an analysis id, a file).
    icc, deff : float
        The intra-item correlation and design effect assumed or estimated (NaN when not
        known; a pilot's bootstrap standard error already carries the clustering).
    decide : callable, optional
        ``decide(size, decision) -> probability`` for a design whose verdict rule is not
        the gap-against-δ rule of :mod:`cuegap.models._plan` (it simulates audits and
        applies its own rule); None: the normal model with ``se`` scaling as 1/√size.
    size_step : float
        Sizes come in multiples of this (a whole replicate of every prompt combination).
    mde : float
        The minimum detectable gap at the current size when the design computes it
        itself (NaN: δ + (z_q + z_target) s).
    mde_at : callable, optional
        ``mde_at(target) -> gap``: the minimum detectable gap at the current size for the
        plan table's target, for a design that finds it by simulated audits (it wins over
        ``mde``).
    """

    system: str
    design: str
    contrast: str
    gap: float
    se: float
    current_size: float
    size_unit: str
    delta: float
    probability: float
    min_size: float = 1.0
    scale: str = ""
    source: str = ""
    icc: float = math.nan
    deff: float = math.nan
    decide: Callable[[float, str], float] | None = None
    size_step: float = 1.0
    mde: float = math.nan
    mde_at: Callable[[float], float] | None = None


def _p(inp: PlanInput, size: float, decision: str) -> float:
    if inp.decide is not None:
        return 0.0 if size < inp.min_size else float(inp.decide(_snap(inp, size), decision))
    if size < inp.min_size or not math.isfinite(inp.se):
        return 0.0 if math.isfinite(inp.se) else math.nan
    gap = inp.gap if decision == "flag" else 0.0
    se = se_at(size, inp.se, inp.current_size)
    return decision_probability(gap, se, inp.delta, inp.probability, decision)  # type: ignore[arg-type]


def _snap(inp: PlanInput, size: float) -> float:
    """``size`` rounded up to a whole multiple of the input's size step."""
    return inp.size_step * max(1, math.ceil(size / inp.size_step - 1e-9))


def _required_by_search(inp: PlanInput, decision: str, target: float, max_size: float) -> float:
    """The smallest multiple of ``size_step`` (from ``min_size``) at which ``decide``
    reaches ``target``: a doubling walk, then bisection (in steps); NaN when ``max_size``
    does not reach it (asked first: each size costs simulated audits, and an unreachable
    decision would otherwise walk every doubling)."""
    step = inp.size_step

    def ok(units: int) -> bool:
        return _p(inp, units * step, decision) >= target

    lo = max(1, math.ceil(inp.min_size / step - 1e-9))
    if ok(lo):
        return lo * step
    top = max(lo, math.floor(max_size / step + 1e-9))
    if not ok(top):
        return math.nan
    hi = lo
    while not ok(hi):  # ends at top at the latest, which is ok
        lo, hi = hi, min(hi * 2, top)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if not ok(mid) else (lo, mid)
    return hi * step


def plan_table(
    inputs: Iterable[PlanInput], *, target: float = 0.8, max_factor: float = 100.0
) -> pd.DataFrame:
    """Decision probability now, the size for ``target``, and the minimum detectable gap.

    Parameters
    ----------
    inputs : iterable of PlanInput
        One per system and headline contrast.
    target : float
        The decision probability to plan for.
    max_factor : float
        The largest realistic size, as a multiple of the current size; ``required_size``
        is NaN (empty) when no size up to it reaches ``target``.

    Returns
    -------
    DataFrame
        :data:`PLAN_COLUMNS`, two rows per input (``flag``, ``pass``). ``p_decide`` is the
        probability of that decision at the current size if the true gap equals ``gap``
        (``flag``) or 0 (``pass``); ``mde`` = δ + (z_q + z_target) s is the smallest true gap
        flagged with probability ``target`` at the current size.
    """
    rows = []
    for inp in inputs:
        max_size = max_factor * inp.current_size
        mde = (
            inp.mde_at(target)
            if inp.mde_at is not None
            else inp.mde
            if math.isfinite(inp.mde) or inp.decide is not None
            else min_detectable_gap(inp.se, inp.delta, inp.probability, target)
            if math.isfinite(inp.se)
            else math.nan
        )
        for decision in ("flag", "pass"):
            gap = inp.gap if decision == "flag" else 0.0
            need = math.nan
            if inp.decide is not None:
                need = _required_by_search(inp, decision, target, max_size)
            elif math.isfinite(inp.se) and inp.current_size > 0:
                need = required_size(
                    gap,
                    se_ref=inp.se,
                    size_ref=inp.current_size,
                    delta=inp.delta,
                    probability=inp.probability,
                    decision=decision,  # type: ignore[arg-type]
                    target=target,
                    min_size=inp.min_size,
                    max_size=max_size,
                )
            plain = {
                f.name: getattr(inp, f.name)
                for f in fields(inp)
                if f.name not in ("decide", "mde_at")
            }
            rows.append(
                {
                    **plain,
                    "decision": decision,
                    "p_decide": _p(inp, inp.current_size, decision),
                    "required_size": need,
                    "mde": mde,
                    "target": target,
                    "max_size": max_size,
                }
            )
    return pd.DataFrame(rows, columns=PLAN_COLUMNS)


def decision_curve(inputs: Iterable[PlanInput], sizes: Sequence[float]) -> pd.DataFrame:
    """Decision probability against size: ``system``, ``design``, ``contrast``,
    ``decision``, ``size``, ``p_decide`` (for the figure)."""
    rows = [
        {
            "system": inp.system,
            "design": inp.design,
            "contrast": inp.contrast,
            "decision": decision,
            "size": float(n),
            "p_decide": _p(inp, float(n), decision),
        }
        for inp in inputs
        for decision in ("flag", "pass")
        for n in np.asarray(sizes, dtype=float)
    ]
    return pd.DataFrame(rows)


def answer_line(row: pd.Series) -> str:
    """The one-line answer for a plan row.

    ``to pass sim-system-03 at δ = 2 pp with 80% probability: about 190 dilemmas per
    condition; the audit has 20``
    """
    verb = "flag" if row["decision"] == "flag" else "pass"
    delta = f"{row['delta']:g}" + (f" {row['scale']}" if row["scale"] else "")
    head = f"to {verb} {row['system']} at δ = {delta} with {100 * row['target']:.0f}% probability"
    if verb == "pass":
        head += " (if its true gap is 0)"
    now = f"the audit has {row['current_size']:,.0f}"
    if math.isfinite(row["required_size"]):
        if row["required_size"] <= row["current_size"]:
            return f"{head}: the audit's {row['current_size']:,.0f} {row['size_unit']} suffice"
        return f"{head}: about {_round(row['required_size']):,} {row['size_unit']}; {now}"
    if verb == "flag" and not row["gap"] > row["delta"]:
        why = f"the gap planned for ({row['gap']:+.3g}) is not above δ"
    else:
        why = f"no size up to {row['max_size']:,.0f} {row['size_unit']} reaches it"
    return f"{head}: not reachable ({why}); {now}"


def _round(n: float) -> int:
    """Two significant figures: a planned size is an estimate, not a count."""
    if n < 100:
        return math.ceil(n)
    digits = 10 ** (int(math.log10(n)) - 1)
    return int(math.ceil(n / digits) * digits)
