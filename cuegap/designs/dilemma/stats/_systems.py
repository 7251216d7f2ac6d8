"""System-level statistics: ranking shifts and the FormalNamed share.

The regression of the gap on system covariates is in
:mod:`cuegap.designs.dilemma.stats._regression`.

Each function takes one row per audited system (macro quantities from
:func:`cuegap.designs.dilemma.stats.macro_average` /
:func:`cuegap.designs.dilemma.stats.cue_visibility_gap`) and returns
tidy results.

References
----------
Seed paper, "Moral Safety in LLMs: Exposing Performative Compliance with Puzzled Cues":
Section 4.4 (the gap reorders safety rankings), Appendix O (Table 38, OLS of the gap on
capability and alignment), Appendix S (Table 42, share of the gap reproduced by
FormalNamed).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
import pandas as pd
from scipy.stats import kendalltau

from cuegap.designs.dilemma.stats._regression import GapRegression, gap_regression
from cuegap.designs.dilemma.stats._system_frame import _numeric, _require, _unique_systems

__all__ = [
    "GapRegression",
    "RankComparison",
    "formal_named_share",
    "gap_regression",
    "rankings",
]


class RankComparison(NamedTuple):
    """Result of :func:`rankings`.

    Attributes
    ----------
    ranks : DataFrame
        One row per system, ordered by ``rank_direct``: ``system``, ``net_direct_pp``,
        ``net_puzzled_pp``, ``gap_pp``, ``rank_direct``, ``rank_puzzled`` (1 = highest
        net; ties share the average rank), ``rank_shift`` (``rank_puzzled − rank_direct``;
        positive = the system falls under the implicit cue) and ``rank_gap`` (1 = largest
        gap).
    tau : float
        Kendall's tau-b between the Direct and the Puzzled nets.
    p_value : float
        Two-sided p-value of tau (``scipy.stats.kendalltau``: exact without ties for small
        n, otherwise the normal approximation).
    n : int
        Number of systems.
    """

    ranks: pd.DataFrame
    tau: float
    p_value: float
    n: int


def rankings(gap_table: pd.DataFrame) -> RankComparison:
    r"""Rank systems by Direct and by Puzzled macro net and compare the two rankings.

    Parameters
    ----------
    gap_table : DataFrame
        One row per system with ``system``, ``net_direct_pp``, ``net_puzzled_pp`` and
        ``gap_pp`` (the ``macro_gap`` table of :func:`bootstrap`, or
        :func:`cue_visibility_gap` of a macro table, filtered to one consequences setting).

    Returns
    -------
    RankComparison
        Per-system ranks and Kendall's tau-b with its p-value; see :class:`RankComparison`.

    Raises
    ------
    ValueError
        If a column is missing or not numeric, a system repeats, or there are fewer than
        two systems.

    Notes
    -----
    With :math:`n_c` concordant and :math:`n_d` discordant pairs of systems, and
    :math:`n_1`, :math:`n_2` pairs tied in the Direct, respectively Puzzled, net among
    :math:`n_0 = n(n-1)/2` pairs,
    :math:`\tau_b = (n_c - n_d) / \sqrt{(n_0 - n_1)(n_0 - n_2)}`. Rank 1 is the most
    favourable net, the reading of Section 4.4 (a high Direct net ranks a system among the
    safest). tau = 1 means the implicit cue leaves the ranking unchanged.

    Worked example: Direct nets 4, 3, 2, 1 and Puzzled nets 3, 4, 1, 2 for systems A-D
    give 4 concordant and 2 discordant pairs (A-B, C-D): tau = 2/6 = 1/3. Among the 24
    orderings of 4 systems, 1, 3, 5, 6, 5, 3, 1 have 0..6 discordant pairs, so the exact
    two-sided p-value is (1 + 3 + 5 + 5 + 3 + 1)/24 = 0.75.
    """
    _require(gap_table, ["system", "net_direct_pp", "net_puzzled_pp", "gap_pp"], "gap_table")
    _unique_systems(gap_table, "gap_table")
    if len(gap_table) < 2:
        raise ValueError(f"rankings needs at least 2 systems, but got {len(gap_table)}")
    out = gap_table[["system"]].reset_index(drop=True)
    for col in ("net_direct_pp", "net_puzzled_pp", "gap_pp"):
        out[col] = _numeric(gap_table[col], col, "gap_table")
    out["rank_direct"] = out["net_direct_pp"].rank(ascending=False, method="average")
    out["rank_puzzled"] = out["net_puzzled_pp"].rank(ascending=False, method="average")
    out["rank_shift"] = out["rank_puzzled"] - out["rank_direct"]
    out["rank_gap"] = out["gap_pp"].rank(ascending=False, method="average")
    out = out.sort_values(["rank_direct", "system"], kind="stable").reset_index(drop=True)
    result = kendalltau(out["net_direct_pp"], out["net_puzzled_pp"], variant="b")
    return RankComparison(out, float(result.statistic), float(result.pvalue), len(out))


def _side_net(
    table: pd.DataFrame, side: tuple[str, str | None], pair: list[str], name: str
) -> pd.DataFrame:
    cond, diff = side
    mask = table["condition"] == cond
    mask &= table["difficulty"].isna() if diff is None else table["difficulty"] == diff
    sub = table.loc[mask, [*pair, "net_pp"]].rename(columns={"net_pp": name})
    if sub.duplicated(subset=pair).any():
        raise ValueError(
            f"macro_table has several {cond}/{diff} rows for one of {pair}; filter it first"
        )
    return sub


def formal_named_share(
    macro_table: pd.DataFrame,
    *,
    explicit: tuple[str, str | None] = ("direct", None),
    implicit: tuple[str, str | None] = ("puzzled", "hard"),
    formal: tuple[str, str | None] = ("formal_named", "hard"),
    keys: Sequence[str] = ("system", "consequences"),
    tol: float = 0.05,
) -> pd.DataFrame:
    r"""Share of the Direct→Puzzled gap that FormalNamed reproduces, per system.

    Parameters
    ----------
    macro_table : DataFrame
        Output of :func:`macro_average` (``keys``, ``condition``, ``difficulty``,
        ``net_pp``), with rows for the three conditions.
    explicit, implicit, formal : (condition, difficulty)
        Direct, Puzzled-hard and FormalNamed-hard by default; difficulty None matches rows
        without one.
    keys : sequence of str, default ("system", "consequences")
        Columns that pair the three conditions.
    tol : float, default 0.05
        D→P values with ``|D→P| <= tol`` (pp) count as zero: the share is then undefined.

    Returns
    -------
    DataFrame
        One row per ``keys`` combination present in all three conditions, with ``keys``,
        ``net_direct_pp``, ``net_puzzled_pp``, ``net_formal_pp``, ``d_to_p_pp``
        (Direct − Puzzled), ``d_to_fn_pp`` (Direct − FormalNamed), ``share``
        (``d_to_fn_pp / d_to_p_pp``, NaN when undefined), ``share_capped`` (``share``
        clipped to [0, 1]) and ``reason`` (None, ``"opposite sign"`` or ``"no gap"``).

    Raises
    ------
    ValueError
        If a column is missing, ``tol`` is negative, or a condition has several rows for
        one key combination.

    Notes
    -----
    D→P = Net_direct − Net_puzzled and D→FN = Net_direct − Net_formal (Appendix S). The
    share is reported only when D→P is clearly non-zero and D→FN has the same sign (or is
    zero); when the two shifts point in opposite directions, "the fraction of the gap"
    has no meaning and the row gets ``reason = "opposite sign"``. A share above 1 (FN
    shifts more than Puzzled) is kept in ``share`` and capped at 1 in ``share_capped``.

    Worked example (Table 42, Ministral-8B): Direct +6.3, Puzzled-hard −1.4, FN-hard −1.6
    → D→P = 7.7, D→FN = 7.9, share = 7.9/7.7 = 1.026, capped 1.0 (the paper's 100%).
    """
    keys = list(keys)
    _require(macro_table, [*keys, "condition", "difficulty", "net_pp"], "macro_table")
    if not (isinstance(tol, float | int) and tol >= 0 and math.isfinite(tol)):
        raise ValueError(f"tol must be a finite non-negative number, but got {tol!r}")
    out = _side_net(macro_table, explicit, keys, "net_direct_pp")
    out = out.merge(_side_net(macro_table, implicit, keys, "net_puzzled_pp"), on=keys)
    out = out.merge(_side_net(macro_table, formal, keys, "net_formal_pp"), on=keys)
    out = out.reset_index(drop=True)
    d_p = out["net_direct_pp"] - out["net_puzzled_pp"]
    d_fn = out["net_direct_pp"] - out["net_formal_pp"]
    out["d_to_p_pp"] = d_p
    out["d_to_fn_pp"] = d_fn
    no_gap = d_p.abs() <= tol
    opposite = ~no_gap & (np.sign(d_fn) * np.sign(d_p) < 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        share = (d_fn / d_p).where(~(no_gap | opposite))
    out["share"] = share
    out["share_capped"] = share.clip(lower=0.0, upper=1.0)
    reason = pd.Series([None] * len(out), dtype=object)
    reason[opposite.to_numpy()] = "opposite sign"
    reason[no_gap.to_numpy()] = "no gap"
    out["reason"] = reason
    return out
