r"""Score extremes across prompt-construction combinations (seed 003, Tables 2-23).

Per group (by default one (system, category, metric)) the score of each combination is
the mean of its replicates ("decoding stochasticity accounted for by averaging scores over
repeated runs"). From those combination means:

* ``max_abs``: the signed mean with the largest \|s\| (the least fair combination for a
  BBQ score); ``min_abs``: the signed mean with the smallest \|s\| (the fairest);
* ``ratio`` = max_abs / min_abs, signed: negative when the two extremes have opposite
  signs. When min_abs = 0 and max_abs ≠ 0 the ratio is +∞ (printed "∞"; a zero has no sign
  to carry); when both are 0 it is NaN (printed "N/A");
* ``extremes_flip``: max_abs and min_abs are both non-zero and of opposite sign;
* ``any_flip``: some combination mean is > 0 and another is < 0 (zeros flip nothing);
* ``max``, ``min``, ``range`` = max − min: the Difference-Awareness columns of Tables
  13-23 (reported for every metric).

Ties in \|s\| go to the first combination in sorted order of the factor levels. The
``*_combination`` columns name the combination (levels joined with ``/``).

The combination means are computed exactly, so that a mean that is exactly 0 is 0 (and the
ratio ∞, as seed 003 prints it) rather than a rounding residue such as −2.3e−18 that
would give a ratio of 10¹⁶. Each of seed 003's scores is an integer over its ``n_used``
(s_bbq_dis = (b − a)/(b + a), s_bbq_amb = (b − a)/N, s_diffaware and s_ctxtaware = A over
their denominators), so where the table has ``n_used`` the numerators are recovered from
the floats and the mean is the correctly rounded value of the exact fraction. Without
``n_used`` (or where a score is not such a fraction) the mean is ``math.fsum`` of the
scores over their number: exact to the last bit for scores that cancel.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction

import numpy as np
import pandas as pd

from cuegap.designs.prompt_variance.stats._frame import BY, as_names, check_table, combination_means

__all__ = ["exact_mean", "extreme_ratio", "pv_extremes"]

#: The most a score times its ``n_used`` may be off an integer and still be read as one.
_INTEGER_TOL = 1e-6


def exact_mean(
    values: Sequence[float] | np.ndarray, n_used: Sequence[float] | None = None
) -> float:
    """The mean of scores, correctly rounded from the exact value where it can be known.

    Parameters
    ----------
    values : array_like of float
        The scores (no NaN).
    n_used : array_like of float, optional
        Each score's denominator: a score is an integer over it. When every
        ``values[i] * n_used[i]`` is an integer (to 1e-6), the mean is the float nearest
        Σ kᵢ/nᵢ / len, computed in fractions; otherwise ``math.fsum(values) / len``.

    Returns
    -------
    float
        NaN for no values.

    Examples
    --------
    >>> exact_mean([-0.33333333333333337, 0.0, 0.33333333333333326], [3, 2, 3])
    0.0
    >>> exact_mean([-0.025, 0.0, 0.025])
    0.0
    """
    v = np.asarray(values, dtype=float)
    if v.size == 0:
        return float("nan")
    if n_used is not None:
        n = np.asarray(n_used, dtype=float)
        k = np.rint(v * n)
        ok = np.isfinite(n).all() and (n > 0).all() and (n == np.rint(n)).all()
        if ok and (np.abs(v * n - k) <= _INTEGER_TOL).all():
            if (n == n[0]).all():  # one denominator: integer sums, one correct rounding
                return int(k.sum()) / (int(n[0]) * v.size)
            total = sum((Fraction(int(a), int(b)) for a, b in zip(k, n, strict=True)), Fraction(0))
            return float(total / v.size)
    return math.fsum(v.tolist()) / v.size


def _exact_means(
    df: pd.DataFrame, means: pd.DataFrame, *, by: Sequence[str], factors: Sequence[str], value: str
) -> pd.Series:
    """:func:`exact_mean` per row of ``means`` (the output of ``combination_means``)."""
    ok = df[df[value].notna()]
    group = ok.groupby([*by, *factors], sort=True, observed=True, dropna=False).ngroup()
    order = np.argsort(group.to_numpy(), kind="stable")
    bounds = np.flatnonzero(np.diff(group.to_numpy()[order])) + 1
    vals = ok[value].to_numpy(float)[order]
    n = ok["n_used"].to_numpy(float)[order] if "n_used" in ok.columns else None
    out = [
        exact_mean(vals[idx], None if n is None else n[idx])
        for idx in np.split(np.arange(len(order)), bounds)
        if len(idx)
    ]
    return pd.Series(out, index=means.index, dtype=float)


def extreme_ratio(max_abs: np.ndarray | float, min_abs: np.ndarray | float) -> np.ndarray:
    """Signed ratio of the extremes: max_abs / min_abs, +∞ when only min_abs is 0, NaN
    when both are 0.

    Parameters
    ----------
    max_abs, min_abs : array_like
        The signed scores with the largest and the smallest absolute value.

    Returns
    -------
    ndarray of float
    """
    hi = np.asarray(max_abs, dtype=float)
    lo = np.asarray(min_abs, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        r = np.where(lo != 0, hi / np.where(lo != 0, lo, 1.0), np.where(hi != 0, np.inf, np.nan))
    r = np.where(np.isinf(r), np.inf, r)  # an overflow has no sign to keep either
    return np.where(np.isnan(hi) | np.isnan(lo), np.nan, r)


def pv_extremes(
    scores: pd.DataFrame,
    *,
    factors: str | Sequence[str],
    by: Sequence[str] = BY,
    value: str = "score",
) -> pd.DataFrame:
    """Extremes, their ratio and sign flips across factor combinations.

    Parameters
    ----------
    scores : DataFrame
        The ``pv_scores`` table (or any table with ``by``, ``factors``, ``replicate`` and
        ``value``).
    factors : str or sequence of str
        Factor columns; their level combinations are compared.
    by : sequence of str, default ("system", "category", "metric")
        One row per distinct value of these columns.
    value : str, default "score"
        The score column.

    Returns
    -------
    DataFrame
        The ``pv_extremes`` table: ``*by``, ``n_combinations``, ``max_abs``,
        ``max_abs_combination``, ``min_abs``, ``min_abs_combination``, ``ratio``,
        ``extremes_flip``, ``any_flip``, ``max``, ``max_combination``, ``min``,
        ``min_combination``, ``range``. Groups whose every score is NaN are left out.

    Notes
    -----
    Definitions: module docstring. Seed 003, Section 3 ("Directional and Magnitude
    Shifts") and Appendix A.
    """
    factors = as_names(factors, "factors")
    by = as_names(by, "by")
    df = check_table(scores, by=by, factors=factors, value=value, what="pv_extremes scores")
    means = combination_means(df, by=by, factors=factors, value=value)
    means["mean"] = _exact_means(df, means, by=by, factors=factors, value=value)
    means["_abs"] = means["mean"].abs()
    g = means.groupby(by, sort=True, dropna=False)
    pick = {
        "max_abs": g["_abs"].idxmax(),
        "min_abs": g["_abs"].idxmin(),
        "max": g["mean"].idxmax(),
        "min": g["mean"].idxmin(),
    }
    out = g.size().rename("n_combinations").to_frame()
    for name, idx in pick.items():
        out[name] = means.loc[idx.to_numpy(), "mean"].to_numpy()
        out[f"{name}_combination"] = means.loc[idx.to_numpy(), "combination"].to_numpy()
    out["ratio"] = extreme_ratio(out["max_abs"], out["min_abs"])
    out["extremes_flip"] = np.sign(out["max_abs"]) * np.sign(out["min_abs"]) < 0
    out["any_flip"] = g["mean"].max().gt(0) & g["mean"].min().lt(0)
    out["range"] = out["max"] - out["min"]
    cols = [
        "n_combinations",
        "max_abs",
        "max_abs_combination",
        "min_abs",
        "min_abs_combination",
        "ratio",
        "extremes_flip",
        "any_flip",
        "max",
        "max_combination",
        "min",
        "min_combination",
        "range",
    ]
    return out[cols].reset_index()
