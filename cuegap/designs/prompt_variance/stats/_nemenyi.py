r"""Which systems' ranks stay apart across prompt combinations: the Nemenyi post-hoc test
after the Friedman test of :func:`cuegap.designs.prompt_variance.stats.pv_rank_discordance`
(cuegap's, beyond
seed 003, which only plots the rankings in its Figure 2).

What is compared
----------------
Per (category, metric) the Friedman test (χ² and p in ``pv_rank_discordance``) treats the
prompt combinations as *blocks* and the systems as *treatments*: each combination ranks
the systems, fairest first (direction as in :func:`pv_rank_discordance`). The question a
board asks after "do the rankings agree?" is "which of these systems can I actually tell
apart, whatever the prompt format?", so the post-hoc compares every *pair of systems*
(not pairs of combinations: a combination is a rater here, and a pairwise test between
raters would ask whether two prompt formats rank alike, which Kendall's τ-b already
answers in ``pv_rank_discordance``).

Nemenyi's test (Demšar 2006, §3.2.2): with k systems, N combinations and mean ranks
R̄_i, the pair (i, j) differs when |R̄_i − R̄_j| exceeds the critical difference
CD = q_α √(k(k + 1) / (6N)), q_α being the studentized range quantile (k, ∞) divided by
√2; the p-value is P(Q_{k,∞} > √2 · |R̄_i − R̄_j| / √(k(k + 1) / (6N))). p-values from
``scikit_posthocs.posthoc_nemenyi_friedman``; they adjust for all k(k − 1)/2 pairs (the
family-wise error of the studentized range), so no further correction is applied.

Reading it: combinations are not independent samples of the world but the formats a
store happens to use, so a small p says the two systems' ranks differ consistently over
*these* formats. Averaged ranks ignore ties' variance (scikit-posthocs "does not test for
ties"); with many tied scores the test is conservative.

References
----------
J. Demšar (2006), Statistical comparisons of classifiers over multiple data sets. JMLR 7,
1-30. P. Nemenyi (1963), Distribution-free multiple comparisons, PhD thesis, Princeton.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
from scipy import stats

from cuegap.designs.prompt_variance.stats._frame import as_names, check_table, combination_means
from cuegap.designs.prompt_variance.stats._ranks import _direction
from cuegap.designs.prompt_variance.stats._scores import METRIC_DIRECTION

__all__ = ["nemenyi_cd", "pv_nemenyi"]

COLUMNS = ["system_a", "system_b", "mean_rank_a", "mean_rank_b", "rank_diff", "p", "cd",
           "significant", "n_systems", "n_combinations"]  # fmt: skip


def nemenyi_cd(k: int, n: int, *, alpha: float = 0.05) -> float:
    """Nemenyi's critical difference of mean ranks, q_α √(k(k + 1) / (6n)).

    Parameters
    ----------
    k : int
        Treatments compared (systems), at least 2.
    n : int
        Blocks (combinations), at least 1.
    alpha : float, default 0.05

    Returns
    -------
    float
        E.g. 1.25 for k = 4, n = 14 at α = 0.05 (Demšar 2006, §3.2.2).
    """
    if k < 2 or n < 1:
        raise ValueError(f"need k >= 2 treatments and n >= 1 blocks; got k={k}, n={n}")
    if not 0 < alpha < 1:
        raise ValueError(f"alpha should be in the interval (0, 1) but got {alpha}")
    q = stats.studentized_range.ppf(1 - alpha, k, np.inf) / np.sqrt(2)
    return float(q * np.sqrt(k * (k + 1) / (6 * n)))


def pv_nemenyi(
    scores: pd.DataFrame,
    *,
    factors: str | Sequence[str],
    by: Sequence[str] = ("category", "metric"),
    system: str = "system",
    value: str = "score",
    direction: Mapping[str, str] | None = None,
    alpha: float = 0.05,
) -> pd.DataFrame:
    r"""Pairwise Nemenyi tests between systems' ranks across prompt combinations.

    Parameters
    ----------
    scores : DataFrame
        The ``pv_scores`` table (or any table with ``by``, ``system``, ``factors``,
        ``replicate`` and ``value``).
    factors : str or sequence of str
        Factor columns; each level combination is one block (one ranking).
    by : sequence of str, default ("category", "metric")
        One test per distinct value; must include ``metric``.
    system : str, default "system"
    value : str, default "score"
    direction : mapping of str to {"abs", "high", "low"}, optional
        Per metric, what ranks first (as :func:`pv_rank_discordance`).
    alpha : float, default 0.05
        Level of ``cd`` and ``significant``.

    Returns
    -------
    DataFrame
        The ``pv_nemenyi`` table, one row per (group, pair of systems): ``system_a``,
        ``system_b`` (sorted), their ``mean_rank_a`` / ``mean_rank_b`` (1 = fairest),
        ``rank_diff`` (a − b), ``p``, ``cd`` (critical difference at ``alpha``),
        ``significant`` (p < alpha), ``n_systems``, ``n_combinations``. Groups with fewer
        than two systems or two complete combinations give no rows. Only combinations
        every system of the group has a score for are used.
    """
    import scikit_posthocs as sp

    if not 0 < alpha < 1:
        raise ValueError(f"alpha should be in the interval (0, 1) but got {alpha}")
    factors, by = as_names(factors, "factors"), as_names(by, "by")
    if "metric" not in by:
        raise ValueError(f"by must include 'metric' (rank direction is per metric); got {by}")
    dirs = {**METRIC_DIRECTION, **(direction or {})}
    keys = [*by, system]
    df = check_table(scores, by=keys, factors=factors, value=value, what="pv_nemenyi scores")
    means = combination_means(df, by=keys, factors=factors, value=value)
    rows = []
    for key, grp in means.groupby(by, sort=True, dropna=False):
        key = key if isinstance(key, tuple) else (key,)
        head = dict(zip(by, key, strict=True))
        d = _direction(head["metric"], dirs)
        wide = grp.pivot(index="combination", columns=system, values="mean").dropna(axis=0)
        n, k = wide.shape
        if k < 2 or n < 2:
            continue
        vals = wide.to_numpy(float)
        block = pd.DataFrame({"abs": np.abs(vals), "high": -vals, "low": vals}[d],
                             columns=wide.columns)  # fmt: skip
        p = sp.posthoc_nemenyi_friedman(block)
        mean_rank = stats.rankdata(block.to_numpy(), axis=1).mean(axis=0)
        cd = nemenyi_cd(k, n, alpha=alpha)
        names = list(wide.columns)
        for i, j in itertools.combinations(range(k), 2):
            pij = float(p.iloc[i, j])
            rows.append({
                **head, "system_a": names[i], "system_b": names[j],
                "mean_rank_a": mean_rank[i], "mean_rank_b": mean_rank[j],
                "rank_diff": mean_rank[i] - mean_rank[j], "p": pij, "cd": cd,
                "significant": pij < alpha, "n_systems": k, "n_combinations": n,
            })  # fmt: skip
    return pd.DataFrame(rows, columns=[*by, *COLUMNS])
