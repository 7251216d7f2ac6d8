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
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from cuegap.designs.prompt_variance.stats._frame import BY, as_names, check_table, combination_means

__all__ = ["extreme_ratio", "pv_extremes"]


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
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.where(lo != 0, hi / np.where(lo != 0, lo, 1.0), np.where(hi != 0, np.inf, np.nan))
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
