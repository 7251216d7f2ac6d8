r"""Shift rates λ_iden and λ_base per condition (seed 003, §4.3, Eqs. 1-2).

λ_iden(d, [varied], i; c) = P(o_iden^(curr) = o_base^(prev) | o_iden^(prev) ≠ o_base^(prev))
is estimated as Σ iden_shift / Σ iden_disagree over every cell that shares the
condition's keys: the persona is "[varied]" in the paper's notation, so cells of every
persona (and every category and question of the benchmark) are pooled by summing counts,
i.e. each transition with prior disagreement weighs the same. λ_base is the same with the
baseline agent's counts. A condition with no disagreement has λ = NaN.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
from scipy import stats

from cuegap.designs.conversation.stats._frame import as_list, check_counts

__all__ = ["RATE_BY", "conv_shift_rates", "pooled_rates"]

#: Keys of one λ in seed 003 §5: persona, category and question pooled.
RATE_BY = ("system", "benchmark", "demographics", "instantiation", "reveal")
AGENTS = ("iden", "base")


def pooled_rates(counts: pd.DataFrame, by: Sequence[str]) -> pd.DataFrame:
    """Summed counts and λ per ``by`` for both agents, wide (internal; checked input).

    Columns: ``by``, ``iden_disagree``, ``iden_shift``, ``base_disagree``, ``base_shift``,
    ``lambda_iden``, ``lambda_base``.
    """
    cols = ["iden_disagree", "iden_shift", "base_disagree", "base_shift"]
    g = counts.groupby(list(by), sort=True, observed=True)[cols].sum().reset_index()
    for agent in AGENTS:
        den = g[f"{agent}_disagree"].to_numpy(float)
        num = g[f"{agent}_shift"].to_numpy(float)
        with np.errstate(invalid="ignore", divide="ignore"):
            g[f"lambda_{agent}"] = np.where(den > 0, num / den, np.nan)
    return g


def conv_shift_rates(
    counts: pd.DataFrame,
    *,
    by: str | Sequence[str] = RATE_BY,
    confidence: float = 0.95,
) -> pd.DataFrame:
    """The ``conv_shift_rates`` table: λ_iden and λ_base per condition, long by agent.

    Parameters
    ----------
    counts : DataFrame
        The transition count frame (see :mod:`cuegap.designs.conversation.stats`).
    by : str or sequence of str, default ("system", "benchmark", "demographics",
        "instantiation", "reveal")
        Keys of one rate; counts of all other columns (persona, category, question) are
        summed. Add ``"persona"`` for per-persona rates.
    confidence : float, default 0.95
        Level of the Wilson score interval.

    Returns
    -------
    DataFrame
        One row per (``by``, ``agent``): ``agent`` (``"iden"`` or ``"base"``),
        ``disagreements`` (transitions with prior disagreement), ``shifts``, ``rate``
        (λ; NaN without disagreement), ``lower`` and ``upper`` (Wilson interval, treating
        transitions as independent).

    Raises
    ------
    ValueError
        On a bad count frame or ``confidence`` outside (0, 1).

    Notes
    -----
    Eq. 1: λ_iden = Σ iden_shift / Σ iden_disagree; Eq. 2: λ_base = Σ base_shift /
    Σ base_disagree (seed 003, §4.3). The two need not agree (footnote 4).
    """
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), but got {confidence!r}")
    keys = as_list(by, "by")
    counts = check_counts(counts, keys=keys)
    g = pooled_rates(counts, keys)
    z = stats.norm.ppf(0.5 + confidence / 2)
    parts = []
    for agent in AGENTS:
        n = g[f"{agent}_disagree"].to_numpy(float)
        k = g[f"{agent}_shift"].to_numpy(float)
        with np.errstate(invalid="ignore", divide="ignore"):
            p = np.where(n > 0, k / n, np.nan)
            centre = (p + z**2 / (2 * n)) / (1 + z**2 / n)
            half = z * np.sqrt(p * (1 - p) / n + z**2 / (4 * n**2)) / (1 + z**2 / n)
        part = g[keys].copy()
        part["agent"] = agent
        part["disagreements"] = n.astype(np.int64)
        part["shifts"] = k.astype(np.int64)
        part["rate"] = p
        part["lower"] = np.where(n > 0, centre - half, np.nan)
        part["upper"] = np.where(n > 0, centre + half, np.nan)
        parts.append(part)
    out = pd.concat(parts, ignore_index=True)
    return out.sort_values([*keys, "agent"], kind="stable", ignore_index=True)
