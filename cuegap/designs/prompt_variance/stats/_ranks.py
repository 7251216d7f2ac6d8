r"""Discordance of system rankings across prompt-construction combinations (seed 003,
Figure 2; the statistics are cuegap's, the paper only plots the rankings).

Per (category, metric), each combination ranks the systems by their replicate-mean score,
fairest first: \|s\| ascending for the BBQ scores (0 is unbiased), s descending for the
Difference-Awareness scores (higher is more aware). Tied systems share the average rank.
Only combinations that every system of the group has a score for are used.

* Rank range per system: max − min of its rank over the combinations.
* Kendall's W (coefficient of concordance) with the m combinations as raters of the n
  systems: R_i = Σ_j r_ij, S = Σ_i (R_i − m(n + 1)/2)²,
  W = 12 S / (m²(n³ − n) − m Σ_j T_j), with T_j = Σ (t³ − t) over the tie groups of
  combination j (Kendall & Babington Smith's correction; without ties T_j = 0). W = 1 is
  perfect agreement, 0 none. The Friedman statistic is χ² = m(n − 1) W on n − 1 degrees
  of freedom, the same tie-corrected value as ``scipy.stats.friedmanchisquare``.
* Kendall's τ-b (``scipy.stats.kendalltau``, which corrects for ties) between every pair
  of combinations' scores; the summary gives its distribution.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from cuegap.designs.prompt_variance.stats._frame import as_names, check_table, combination_means
from cuegap.designs.prompt_variance.stats._scores import METRIC_DIRECTION

__all__ = ["RankDiscordance", "kendall_w", "pv_rank_discordance"]


@dataclass(frozen=True)
class RankDiscordance:
    """Result of :func:`pv_rank_discordance`.

    Attributes
    ----------
    summary : DataFrame
        The ``pv_rank_discordance`` table, one row per (category, metric): ``n_systems``,
        ``n_combinations``, ``kendall_w``, ``friedman_chi2``, ``friedman_p``,
        ``tau_b_min``, ``tau_b_q25``, ``tau_b_median``, ``tau_b_mean``, ``tau_b_q75``,
        ``tau_b_max``, ``share_tau_negative``, ``max_rank_range``.
    systems : DataFrame
        One row per (category, metric, system): ``rank_min``, ``rank_max``,
        ``rank_range``, ``rank_mean``, ``best_combination``, ``worst_combination``.
    ranks : DataFrame
        One row per (category, metric, system, combination): ``mean`` and ``rank`` (the
        data of seed 003's Figure 2).
    pairs : DataFrame
        One row per (category, metric, pair of combinations): ``tau_b``, ``p``.
    """

    summary: pd.DataFrame
    systems: pd.DataFrame
    ranks: pd.DataFrame
    pairs: pd.DataFrame


def kendall_w(ranks: np.ndarray) -> float:
    """Kendall's W with tie correction.

    Parameters
    ----------
    ranks : ndarray, shape (m, n)
        Row j holds rater j's ranks of the n objects (average ranks for ties).

    Returns
    -------
    float
        W in [0, 1]; NaN with fewer than two objects or raters, or when every rater ties
        every object.
    """
    r = np.asarray(ranks, dtype=float)
    if r.ndim != 2:
        raise ValueError(f"ranks must be a 2-d array (raters × objects), but got {r.ndim}-d")
    m, n = r.shape
    if m < 2 or n < 2:
        return float("nan")
    s = float(((r.sum(axis=0) - m * (n + 1) / 2) ** 2).sum())
    ties = 0.0
    for row in r:
        _, t = np.unique(row, return_counts=True)
        ties += float((t**3 - t).sum())
    den = m**2 * (n**3 - n) - m * ties
    return 12 * s / den if den > 0 else float("nan")


def _direction(metric: str, direction: Mapping[str, str]) -> str:
    d = direction.get(metric)
    if d not in ("abs", "high", "low"):
        known = ", ".join(sorted(direction))
        raise ValueError(
            f"no rank direction for metric {metric!r} (got {d!r}); known metrics: {known}. "
            "Pass direction={metric: 'abs' | 'high' | 'low'}"
        )
    return d


def pv_rank_discordance(
    scores: pd.DataFrame,
    *,
    factors: str | Sequence[str],
    by: Sequence[str] = ("category", "metric"),
    system: str = "system",
    value: str = "score",
    direction: Mapping[str, str] | None = None,
) -> RankDiscordance:
    r"""Rank ranges, Kendall's W and pairwise Kendall τ-b across combinations.

    Parameters
    ----------
    scores : DataFrame
        The ``pv_scores`` table (or any table with ``by``, ``system``, ``factors``,
        ``replicate`` and ``value``).
    factors : str or sequence of str
        Factor columns; each level combination is one ranking.
    by : sequence of str, default ("category", "metric")
        One analysis per distinct value; must include ``metric``.
    system : str, default "system"
        The column of the ranked objects.
    value : str, default "score"
        The score column.
    direction : mapping of str to {"abs", "high", "low"}, optional
        Per metric, what ranks first: smallest \|s\| (``"abs"``), largest s (``"high"``)
        or smallest s (``"low"``). Defaults cover the four seed-003 scores; entries given
        here are added to them.

    Returns
    -------
    RankDiscordance
    """
    factors = as_names(factors, "factors")
    by = as_names(by, "by")
    if "metric" not in by:
        raise ValueError(f"by must include 'metric' (rank direction is per metric); got {by}")
    dirs = {**METRIC_DIRECTION, **(direction or {})}
    keys = [*by, system]
    df = check_table(scores, by=keys, factors=factors, value=value, what="pv_rank scores")
    means = combination_means(df, by=keys, factors=factors, value=value)
    summary, systems, ranks, pairs = [], [], [], []
    for key, grp in means.groupby(by, sort=True, dropna=False):
        key = key if isinstance(key, tuple) else (key,)
        head = dict(zip(by, key, strict=True))
        d = _direction(head["metric"], dirs)
        wide = grp.pivot(index=system, columns="combination", values="mean").dropna(axis=1)
        vals = wide.to_numpy(float)
        sort_key = {"abs": np.abs(vals), "high": -vals, "low": vals}[d]
        rk = stats.rankdata(sort_key, axis=0, method="average") if vals.size else sort_key
        n_sys, m = vals.shape
        long = pd.DataFrame(
            {
                system: np.repeat(wide.index.to_numpy(), m),
                "combination": np.tile(wide.columns.to_numpy(), n_sys),
                "mean": vals.ravel(),
                "rank": rk.ravel(),
            }
        )
        ranks.append(long.assign(**head))
        for i, name in enumerate(wide.index):
            row = rk[i] if m else np.array([np.nan])
            systems.append(
                {
                    **head,
                    system: name,
                    "rank_min": float(np.min(row)),
                    "rank_max": float(np.max(row)),
                    "rank_range": float(np.max(row) - np.min(row)),
                    "rank_mean": float(np.mean(row)),
                    "best_combination": wide.columns[int(np.argmin(row))] if m else None,
                    "worst_combination": wide.columns[int(np.argmax(row))] if m else None,
                }
            )
        taus = []
        for a, b in itertools.combinations(range(m), 2):
            res = stats.kendalltau(sort_key[:, a], sort_key[:, b], variant="b")
            taus.append(float(res.statistic))
            pairs.append(
                {
                    **head,
                    "combination_a": wide.columns[a],
                    "combination_b": wide.columns[b],
                    "tau_b": float(res.statistic),
                    "p": float(res.pvalue),
                }
            )
        w = kendall_w(rk.T) if m else float("nan")
        chi2 = m * (n_sys - 1) * w
        t = np.asarray(taus, float)
        t = t[~np.isnan(t)]
        q = np.quantile(t, [0, 0.25, 0.5, 0.75, 1]) if len(t) else [np.nan] * 5
        rr = [s["rank_range"] for s in systems[-n_sys:]] if n_sys else [np.nan]
        summary.append(
            {
                **head,
                "n_systems": n_sys,
                "n_combinations": m,
                "kendall_w": w,
                "friedman_chi2": chi2,
                "friedman_p": float(stats.chi2.sf(chi2, n_sys - 1)) if n_sys > 1 else np.nan,
                "tau_b_min": q[0],
                "tau_b_q25": q[1],
                "tau_b_median": q[2],
                "tau_b_mean": float(t.mean()) if len(t) else np.nan,
                "tau_b_q75": q[3],
                "tau_b_max": q[4],
                "share_tau_negative": float((t < 0).mean()) if len(t) else np.nan,
                "max_rank_range": float(np.max(rr)),
            }
        )
    rank_cols = [*by, system, "combination", "mean", "rank"]
    ranks_df = pd.concat(ranks, ignore_index=True)[rank_cols] if ranks else pd.DataFrame()
    return RankDiscordance(
        summary=pd.DataFrame(summary),
        systems=pd.DataFrame(systems),
        ranks=ranks_df,
        pairs=pd.DataFrame(pairs),
    )
