"""The conversation planner's minimum detectable gap, found by simulated audits.

The analytic approximation δ + (t_{1−α, K−1} + z_target)·sd/√K (K units) is not the
conversation rule: that rule flags when some condition's two-sided t-test is significant
*and* its unit mean exceeds δ, on every benchmark. With two benchmarks and few
conversations the approximation is optimistic (6 personas, 2 benchmarks, 60
conversations per cell: 0.64 flagged at its "80 %" gap), with many it is about right
(200 per cell: 0.80). So the planner bisects on the gap instead, deciding each candidate
gap by the design's own simulated audits (:func:`mde_search`).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import pandas as pd
from scipy.special import logit

from cuegap.designs.conversation.stats._frame import DEFAULT_PAIRS

__all__ = ["gap_effect", "mde_condition", "mde_finder", "mde_search"]


def mde_condition(cells: pd.DataFrame) -> tuple[str, str] | None:
    """Where the minimum detectable gap is planted: the disadvantaged side of the first
    default pair the cells hold, under their first instantiation (sorted); None without
    a pair. The gap is planted there alone: a system unfair on one condition."""
    demographics = set(cells["demographics"].astype(str))
    pair = next((d1 for d1, d2 in DEFAULT_PAIRS if {d1, d2} <= demographics), None)
    if pair is None:
        return None
    return pair, sorted(set(cells["instantiation"].astype(str)))[0]


def mde_finder(
    flag_rate: Callable[[float], float],
    approx: Callable[[float], float],
    *,
    top: float,
    tol: float,
    possible: bool,
) -> Callable[[float], float]:
    """``target -> mde``: :func:`mde_search` from ``approx(target)``, once per target;
    NaN when a flag is not ``possible`` at all (below the floor of disagreements, too few
    units, no pair), without simulating."""
    found: dict[float, float] = {}

    def mde_at(target: float) -> float:
        if not possible:
            return math.nan
        if target not in found:
            found[target] = mde_search(flag_rate, target, start=approx(target), top=top, tol=tol)
        return found[target]

    return mde_at


def gap_effect(lambda_base: float, gap: float) -> float:
    """The logit reveal effect that moves a shift rate from λ to λ + gap (capped below
    1): logit(min(λ + gap, 0.999)) − logit(λ)."""
    return float(logit(min(lambda_base + gap, 0.999)) - logit(lambda_base))


def mde_search(
    flag_rate: Callable[[float], float],
    target: float,
    *,
    start: float,
    top: float,
    tol: float,
) -> float:
    """The smallest gap g in (0, ``top``] with ``flag_rate(g)`` ≥ ``target``, to within
    ``tol``; NaN when ``top`` does not reach it.

    Parameters
    ----------
    flag_rate : callable
        The share of simulated audits flagged when the true gap is g (common random
        numbers: one seed for every g, so the share rises with g).
    target : float
        The decision probability to reach, in (0, 1).
    start : float
        The first gap tried (the analytic approximation); doubled until it reaches
        ``target``, then the bracket from the last gap that did not is bisected.
    top : float
        The largest gap that can be planted.
    tol : float
        The bracket's width at the end; the upper end (which reaches ``target``) is
        returned.

    Returns
    -------
    float
    """
    if not 0 < target < 1:
        raise ValueError(f"target must be in the interval (0, 1), but got {target!r}")
    if not (top > 0 and tol > 0):
        raise ValueError(f"top and tol must be positive, but got top={top!r}, tol={tol!r}")
    hi = min(start, top) if math.isfinite(start) and start > 0 else top / 2
    lo = 0.0
    while flag_rate(hi) < target:
        if hi >= top:
            return math.nan
        lo, hi = hi, min(2 * hi, top)
    while hi - lo > tol:
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if flag_rate(mid) < target else (lo, mid)
    return hi
