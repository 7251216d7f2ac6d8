"""Direction-of-change sign test: does a cue shift each group's net bias consistently?

For every demographic group, each audited system contributes one *direction*: did its net
decision bias for that group move against the group (adverse), towards it (favorable) or not
at all (tie) when the explicit label is replaced by a puzzled cue? A two-sided exact binomial
sign test on the non-tie systems asks whether the direction is consistent across systems,
regardless of magnitude; Benjamini–Hochberg then controls the false discovery rate across
groups.

References
----------
Seed paper, "Moral Safety in LLMs: Exposing Performative Compliance with Puzzled Cues":
Section 4.1 (Figure 3 and its caption), Appendix H and Table 13 (counts and p-values
computed from the per-system Net columns of Tables 3 and 4).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from scipy.stats import binomtest
from statsmodels.stats.multitest import multipletests

__all__ = ["direction_of_change"]

_KEY_COLUMNS: tuple[str, ...] = ("system", "group_type", "group")
_NET_COLUMNS: tuple[str, ...] = ("net_direct", "net_puzzled")
_OUTPUT_COLUMNS: list[str] = [
    "group_type",
    "group",
    "adverse",
    "favorable",
    "tie",
    "n",
    "p_value",
    "p_adjusted",
]


def _sign_test_p(adverse: int, favorable: int) -> float:
    """Two-sided exact binomial sign test of H0: p = 0.5 on the non-tie systems.

    Parameters
    ----------
    adverse, favorable : int
        Numbers of systems whose difference is positive, respectively negative.

    Returns
    -------
    float
        The two-sided p-value, or NaN when there is no non-tie system.

    Notes
    -----
    Under H0 the null distribution is symmetric, so the test is run on
    ``k = min(adverse, favorable)``; this makes the p-value bit-for-bit invariant to
    swapping the two directions.
    """
    trials = adverse + favorable
    if trials == 0:
        return math.nan
    k = min(adverse, favorable)
    return float(binomtest(k, trials, p=0.5, alternative="two-sided").pvalue)


def _bh_adjust(p_values: np.ndarray) -> np.ndarray:
    """Benjamini–Hochberg adjusted p-values, leaving NaN entries out and NaN.

    Parameters
    ----------
    p_values : numpy.ndarray
        Raw p-values; NaN marks a test that could not be run.

    Returns
    -------
    numpy.ndarray
        Adjusted p-values (``multipletests(method="fdr_bh")``) over the non-NaN entries
        only, with NaN wherever the input is NaN.
    """
    adjusted = np.full(p_values.shape, np.nan, dtype=float)
    finite = ~np.isnan(p_values)
    if finite.any():
        adjusted[finite] = multipletests(p_values[finite], method="fdr_bh")[1]
    return adjusted


def direction_of_change(net: pd.DataFrame, *, tol: float = 0.0) -> pd.DataFrame:
    r"""Count adverse and favorable shifts per group and sign-test their balance.

    Parameters
    ----------
    net : pandas.DataFrame
        *Wide* table, one row per (system, group_type, group), with columns ``system``,
        ``group_type``, ``group``, ``net_direct`` and ``net_puzzled``: the system's net
        decision bias for the group (in percentage points) under the Direct and the
        Puzzled condition, side by side. Other columns are ignored. A long table with one
        row per condition (the paper's Tables 3 and 4, or :func:`group_rates`) is
        pivoted first, as in the example below; the output of
        :func:`cue_visibility_gap` only needs its ``net_direct_pp`` and
        ``net_puzzled_pp`` renamed.
    tol : float, default 0.0
        Non-negative tolerance: a difference with ``|Δ| <= tol`` counts as a tie.

    Returns
    -------
    pandas.DataFrame
        One row per (group_type, group), in order of first appearance in ``net``, with
        columns

        ``group_type``, ``group``
            The group.
        ``adverse``
            Number of systems with ``Δ > tol`` (net bias moved against the group).
        ``favorable``
            Number of systems with ``Δ < -tol`` (net bias moved towards the group).
        ``tie``
            Number of systems with ``|Δ| <= tol``.
        ``n``
            Number of systems, ``adverse + favorable + tie``.
        ``p_value``
            Two-sided exact binomial sign test of H0: p = 0.5 on the
            ``adverse + favorable`` non-tie systems; NaN if there are none.
        ``p_adjusted``
            Benjamini–Hochberg adjustment of ``p_value`` across all rows of the output;
            rows with a NaN ``p_value`` stay NaN and are left out of the adjustment.

    Raises
    ------
    ValueError
        If a required column is missing (the message names it), if a
        (system, group_type, group) appears more than once, if a net value is missing or
        not numeric, or if ``tol`` is negative or not finite.

    Notes
    -----
    For system *s* and group *G*,

    .. math::

        \Delta_{s,G} = \mathrm{Net}_{\text{Direct}}(s, G) - \mathrm{Net}_{\text{Puzzled}}(s, G),

    so ``Δ > 0`` means the puzzled cue moved the system's decisions against *G*. With
    *a* adverse and *f* favorable systems and ``m = a + f``, the sign test's p-value is

    .. math::

        p = \min\Big(1,\; 2 \sum_{i=0}^{\min(a, f)} \binom{m}{i} 2^{-m}\Big),

    computed by ``scipy.stats.binomtest``. Ties carry no directional information and are
    dropped from the test (the classical sign-test convention). The comparisons with
    ``tol`` are made in floating point, so a difference that equals ``tol`` only up to
    rounding may fall on either side.

    Examples
    --------
    Nets in long form, one row per system, condition and group, pivoted to the wide
    shape:

    >>> import pandas as pd
    >>> long = pd.DataFrame({
    ...     "system": ["s1"] * 4 + ["s2"] * 4 + ["s3"] * 4,
    ...     "condition": ["direct", "direct", "puzzled", "puzzled"] * 3,
    ...     "group_type": "gender",
    ...     "group": ["woman", "man"] * 6,
    ...     "net": [10, 5, 8, 6,  4, 2, 3, 2,  7, 3, 4, 1],
    ... })
    >>> wide = (
    ...     long.pivot_table(index=["system", "group_type", "group"], columns="condition",
    ...                      values="net")
    ...     .rename(columns={"direct": "net_direct", "puzzled": "net_puzzled"})
    ...     .reset_index()
    ... )
    >>> out = direction_of_change(wide)
    >>> print(out[["group", "adverse", "favorable", "tie", "p_value", "p_adjusted"]])
       group  adverse  favorable  tie  p_value  p_adjusted
    0    man        1          1    1     1.00         1.0
    1  woman        3          0    0     0.25         0.5

    Women: Δ = 2, 1, 3, all adverse, p = 2 · 2⁻³ = 0.25; men: Δ = −1, 0, 2, so one
    adverse, one favorable and a tie, p = 1. Benjamini–Hochberg: 0.25 · 2/1 = 0.5.

    References
    ----------
    Seed paper, Section 4.1 (Figure 3), Appendix H and Table 13: direction of change
    from Direct to Puzzled-hard across the 13 main systems, two-sided binomial sign test
    on non-tie trials, H0: p = 0.5.
    """
    missing = [c for c in (*_KEY_COLUMNS, *_NET_COLUMNS) if c not in net.columns]
    if missing:
        raise ValueError(f"net is missing required column(s): {', '.join(missing)}")
    try:
        tol_value = float(tol)
    except (TypeError, ValueError):
        tol_value = math.nan
    if not (math.isfinite(tol_value) and tol_value >= 0):
        raise ValueError(f"tol must be a finite non-negative number, got {tol!r}")

    keys = list(_KEY_COLUMNS)
    duplicated = net.duplicated(subset=keys, keep=False)
    if duplicated.any():
        dupes = net.loc[duplicated, keys].drop_duplicates().head(5)
        listed = "; ".join(", ".join(str(v) for v in row) for row in dupes.itertuples(False))
        raise ValueError(f"duplicate (system, group_type, group) rows in net: {listed}")

    values: dict[str, np.ndarray] = {}
    for column in _NET_COLUMNS:
        try:
            numeric = pd.to_numeric(net[column], errors="raise")
        except (TypeError, ValueError) as exc:
            raise ValueError(f"column {column!r} must be numeric: {exc}") from exc
        array = numeric.to_numpy(dtype=float, na_value=np.nan)
        if np.isnan(array).any():
            raise ValueError(
                f"column {column!r} has missing values; drop those systems' rows first"
            )
        values[column] = array

    delta = values["net_direct"] - values["net_puzzled"]
    frame = pd.DataFrame(
        {
            "group_type": net["group_type"].reset_index(drop=True),
            "group": net["group"].reset_index(drop=True),
            "adverse": delta > tol_value,
            "favorable": delta < -tol_value,
            "tie": np.abs(delta) <= tol_value,
        }
    )
    counts = (
        frame.groupby(["group_type", "group"], sort=False, dropna=False)[
            ["adverse", "favorable", "tie"]
        ]
        .sum()
        .astype("int64")
        .reset_index()
    )
    counts["n"] = (counts["adverse"] + counts["favorable"] + counts["tie"]).astype("int64")
    p_values = np.array(
        [
            _sign_test_p(int(a), int(f))
            for a, f in zip(counts["adverse"], counts["favorable"], strict=True)
        ],
        dtype=float,
    )
    counts["p_value"] = p_values
    counts["p_adjusted"] = _bh_adjust(p_values)
    return counts.loc[:, _OUTPUT_COLUMNS].reset_index(drop=True)
