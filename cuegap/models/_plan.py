"""Audit planning: how likely an audit of a given size is to reach a decision.

Pure statistics (numpy and scipy only) shared by every design's planner
(``Design.plan``). The verdict rule is the one :mod:`cuegap.models._verdict` applies to a
gap estimate ĝ with standard error s, under the policy's δ and probability q:

* **flag** when P(gap > δ) = 1 − Φ((δ − ĝ)/s) >= q, that is when the lower end of the
  one-sided q interval, ĝ − z_q s, is above δ;
* **pass** when P(|gap| < δ) = Φ((δ − ĝ)/s) − Φ((−δ − ĝ)/s) >= q, that is when |ĝ| <= c(s)
  with c the pass bound (:func:`pass_bound`); no c exists when 2Φ(δ/s) − 1 < q.

The planner treats ĝ as N(g, s²) around the true gap g, with s the standard error at the
planned size. s scales as 1/√n in the resampling unit (dilemmas, questions: clusters of
responses), so s(n) = s_ref √(n_ref / n) from one reference (a stored bootstrap SD, or
:func:`contrast_se` from stated rates and an intra-item correlation).

References
----------
Kish, L. (1965). *Survey Sampling*, design effect 1 + (m − 1)ρ; for unequal cluster sizes
the weighted mean size Σm²/Σm replaces m. Fleiss, J. L. (1981), ANOVA estimator of the
intra-class correlation for binary outcomes.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

import numpy as np
from scipy.optimize import brentq
from scipy.stats import norm

__all__ = [
    "Decision",
    "contrast_se",
    "decision_probability",
    "design_effect",
    "icc_anova",
    "min_detectable_gap",
    "pass_bound",
    "required_size",
    "se_at",
]

Decision = Literal["flag", "pass"]


def _check_probability(name: str, value: float, *, low: float = 0.0) -> None:
    if not (math.isfinite(value) and low < value < 1):
        raise ValueError(f"{name} must be in the interval ({low:g}, 1), but got {value!r}")


def design_effect(cluster_sizes: float | Sequence[float], icc: float) -> float:
    """Variance inflation of a rate estimated from clustered responses.

    Parameters
    ----------
    cluster_sizes : float or sequence of float
        Responses per cluster (item): one number for equal sizes, or one per cluster.
    icc : float
        Intra-cluster correlation ρ, in [0, 1].

    Returns
    -------
    float
        DEFF = 1 + (m_w − 1) ρ with m_w = Σm² / Σm (equal to m for equal sizes).
    """
    if not (math.isfinite(icc) and 0 <= icc <= 1):
        raise ValueError(f"icc must be in the interval [0, 1], but got {icc!r}")
    sizes = np.atleast_1d(np.asarray(cluster_sizes, dtype=float))
    if sizes.size == 0 or (sizes <= 0).any() or not np.isfinite(sizes).all():
        raise ValueError(f"cluster_sizes must be positive numbers, but got {cluster_sizes!r}")
    m_w = float((sizes**2).sum() / sizes.sum())
    return 1.0 + (m_w - 1.0) * icc


def icc_anova(events: Sequence[float], trials: Sequence[float]) -> float:
    """ANOVA estimate of the intra-cluster correlation of binary responses.

    Parameters
    ----------
    events, trials : sequence of float
        Per cluster (item): the responses with the outcome, and all responses.

    Returns
    -------
    float
        ρ̂ = (MSB − MSW) / (MSB + (m0 − 1) MSW), NaN when it is undefined (fewer than two
        clusters, or no variation at all). Not truncated: a negative value means less
        spread between items than binomial noise.

    Notes
    -----
    With k clusters, N = Σm_i, p_i = y_i/m_i, p̄ = Σy_i/N:
    MSB = Σ m_i (p_i − p̄)² / (k − 1), MSW = Σ m_i p_i (1 − p_i) / (N − k),
    m0 = (N − Σm_i²/N) / (k − 1).
    """
    y = np.asarray(events, dtype=float)
    m = np.asarray(trials, dtype=float)
    keep = m > 0
    y, m = y[keep], m[keep]
    k, n = len(m), float(m.sum())
    if k < 2 or n <= k:
        return math.nan
    p = y / m
    pbar = y.sum() / n
    msb = float((m * (p - pbar) ** 2).sum() / (k - 1))
    msw = float((m * p * (1 - p)).sum() / (n - k))
    m0 = (n - float((m**2).sum()) / n) / (k - 1)
    denom = msb + (m0 - 1) * msw
    return (msb - msw) / denom if denom > 0 else math.nan


def contrast_se(
    rate_a: float,
    rate_b: float,
    *,
    items: float,
    responses_per_item: float | Sequence[float] = 1.0,
    icc: float = 0.0,
    paired_correlation: float = 0.0,
) -> float:
    """Standard error of the difference of two rates, each from ``items`` clustered items.

    Parameters
    ----------
    rate_a, rate_b : float
        The rates on each side, in [0, 1].
    items : float
        Items (clusters) on each side.
    responses_per_item : float or sequence of float
        Responses per item (see :func:`design_effect`).
    icc : float
        Intra-item correlation ρ.
    paired_correlation : float
        Correlation r of an item's two side means when both sides ask the same items
        (a paired contrast); 0 for independent items (unpaired).

    Returns
    -------
    float
        √(v_a + v_b − 2 r √(v_a v_b)) with v = p (1 − p) DEFF / (items · m̄).
    """
    for name, rate in (("rate_a", rate_a), ("rate_b", rate_b)):
        if not (math.isfinite(rate) and 0 <= rate <= 1):
            raise ValueError(f"{name} must be in the interval [0, 1], but got {rate!r}")
    if not (math.isfinite(paired_correlation) and -1 <= paired_correlation <= 1):
        raise ValueError(f"paired_correlation must be in [-1, 1], but got {paired_correlation!r}")
    if not items > 0:
        raise ValueError(f"items must be positive, but got {items!r}")
    deff = design_effect(responses_per_item, icc)
    mean_m = float(np.mean(np.atleast_1d(np.asarray(responses_per_item, dtype=float))))
    va = rate_a * (1 - rate_a) * deff / (items * mean_m)
    vb = rate_b * (1 - rate_b) * deff / (items * mean_m)
    var = va + vb - 2 * paired_correlation * math.sqrt(va * vb)
    return math.sqrt(max(var, 0.0))


def se_at(size: float, se_ref: float, size_ref: float) -> float:
    """The standard error at ``size`` units, from s_ref at ``size_ref``: s_ref √(n_ref/n)."""
    if not (size > 0 and size_ref > 0):
        raise ValueError(f"sizes must be positive, but got size={size!r}, size_ref={size_ref!r}")
    return se_ref * math.sqrt(size_ref / size)


def pass_bound(se: float, delta: float, probability: float) -> float:
    """The largest |ĝ| the pass rule accepts at standard error ``se``; NaN when none does.

    Solves Φ((δ − c)/s) − Φ((−δ − c)/s) = q for c in [0, δ]; the left side falls as c
    grows, and at c = 0 it is 2Φ(δ/s) − 1.
    """
    _check_probability("probability", probability, low=0.5)
    if se <= 0:
        return delta
    at_zero = 2 * norm.cdf(delta / se) - 1
    if at_zero < probability:
        return math.nan

    def excess(c: float) -> float:
        return norm.cdf((delta - c) / se) - norm.cdf((-delta - c) / se) - probability

    if excess(0.0) == 0:
        return 0.0
    return float(brentq(excess, 0.0, delta, xtol=1e-12))


def decision_probability(
    gap: float, se: float, delta: float, probability: float, decision: Decision
) -> float:
    """Probability that the verdict rule reaches ``decision`` when the true gap is ``gap``.

    Parameters
    ----------
    gap : float
        The true gap g.
    se : float
        Standard error of the estimate at the planned size.
    delta, probability : float
        The policy's δ and required probability q.
    decision : {"flag", "pass"}
        Which decision.

    Returns
    -------
    float
        flag: 1 − Φ(z_q + (δ − g)/s); pass: Φ((c − g)/s) − Φ((−c − g)/s) with c the pass
        bound, 0 when no c exists.
    """
    _check_probability("probability", probability, low=0.5)
    if decision not in ("flag", "pass"):
        raise ValueError(f"decision must be 'flag' or 'pass', but got {decision!r}")
    if not se > 0:  # no sampling error: the estimate is the truth
        return float(gap > delta if decision == "flag" else abs(gap) < delta)
    if decision == "flag":
        return float(1 - norm.cdf(norm.ppf(probability) + (delta - gap) / se))
    c = pass_bound(se, delta, probability)
    if math.isnan(c):
        return 0.0
    return float(norm.cdf((c - gap) / se) - norm.cdf((-c - gap) / se))


def required_size(
    gap: float,
    *,
    se_ref: float,
    size_ref: float,
    delta: float,
    probability: float,
    decision: Decision,
    target: float = 0.8,
    min_size: float = 1.0,
    max_size: float = 1e7,
) -> float:
    """The smallest size (in the reference's unit) at which ``decision`` has probability
    ``target``; NaN when none up to ``max_size`` reaches it.

    ``min_size`` is the size below which the rule cannot decide (a policy minimum of
    parsable responses, in the same unit): the answer is never below it. The search walks
    a doubling grid from ``min_size`` and bisects the first step that reaches ``target``
    (the probability rises with size wherever a decision is reachable).
    """
    _check_probability("target", target)

    def p(n: float) -> float:
        return decision_probability(gap, se_at(n, se_ref, size_ref), delta, probability, decision)

    lo = max(min_size, 1.0)
    if p(lo) >= target:
        return float(math.ceil(lo))
    hi = lo
    while p(hi) < target:
        lo, hi = hi, hi * 2
        if hi > max_size:
            return math.nan
    while hi - lo > 1:
        mid = math.floor((lo + hi) / 2)
        lo, hi = (mid, hi) if p(mid) < target else (lo, mid)
    return float(math.ceil(hi))


def min_detectable_gap(se: float, delta: float, probability: float, target: float = 0.8) -> float:
    """The smallest true gap that is flagged with probability ``target`` at standard error
    ``se``: δ + (z_q + z_target) s."""
    _check_probability("probability", probability, low=0.5)
    _check_probability("target", target)
    return delta + (norm.ppf(probability) + norm.ppf(target)) * se
