r"""One-way ANOVA of a score over prompt-construction combinations (seed 003, Table 1).

Per group (by default one (system, category, metric)), the combinations of the factor
levels are the groups of a one-way ANOVA and the replicates its observations:

* SS_between = Σ_c n_c (ȳ_c − ȳ)², SS_within = Σ_c Σ_r (y_cr − ȳ_c)²,
  SS_total = SS_between + SS_within;
* df_between = k − 1, df_within = N − k (k combinations, N runs with a score);
* F = (SS_between / df_between) / (SS_within / df_within), p = P(F_{k−1, N−k} > F);
* η² = SS_between / SS_total, the share of the score's variance that prompt
  construction explains.

Runs whose score is NaN are dropped (counted in ``n_missing``). Edge cases, each named in
``note``:

* fewer than two combinations: F, p, η² NaN;
* no replication (N = k, df_within = 0): F, p NaN, and η² NaN too, since it is 1 by
  construction and says nothing;
* SS_total = 0 (every run has the same score): F, p, η² NaN ("no variance"); nothing to
  explain, and scipy's ``f_oneway`` also returns NaN;
* SS_within = 0 < SS_between (replicates agree exactly, combinations differ): F = ∞,
  p = 0, η² = 1, as scipy's ``f_oneway`` returns.

"Zero" means below 1e-12 of the group's Σ y² (floating-point sums of equal values).

Benjamini–Hochberg (statsmodels ``multipletests(method="fdr_bh")``) runs over all groups
that share a ``metric`` (seed 003: all (system, category) pairs of one metric); groups with
NaN p are left out and get NaN q.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
from scipy import stats
from statsmodels.stats.multitest import multipletests

from cuegap.designs.prompt_variance.stats._frame import BY, as_names, check_table

__all__ = ["pv_anova", "pv_anova_summary"]

PERCENTILES = (10, 25, 50, 75, 90)
NOTE_ONE = "fewer than two combinations"
NOTE_NOREP = "no replicates within combinations"
NOTE_CONST = "no variance: every run has the same score"
NOTE_INF = "no variance within combinations: F infinite"


def _bh(p: np.ndarray) -> np.ndarray:
    q = np.full(len(p), np.nan)
    ok = ~np.isnan(p)
    if ok.any():
        q[ok] = multipletests(p[ok], method="fdr_bh")[1]
    return q


def pv_anova(
    scores: pd.DataFrame,
    *,
    factors: str | Sequence[str],
    by: Sequence[str] = BY,
    value: str = "score",
    family: str | Sequence[str] | None = "metric",
) -> pd.DataFrame:
    """One-way ANOVA over factor combinations, with η² and Benjamini–Hochberg q.

    Parameters
    ----------
    scores : DataFrame
        The ``pv_scores`` table, or any table with ``by``, ``factors``, ``replicate`` and
        ``value`` columns (e.g. a per-run gap).
    factors : str or sequence of str
        Factor columns; their level combinations are the ANOVA's groups.
    by : sequence of str, default ("system", "category", "metric")
        One ANOVA per distinct value of these columns.
    value : str, default "score"
        The observation column.
    family : str, sequence of str or None, default "metric"
        Columns defining a Benjamini–Hochberg family; None for a single family.

    Returns
    -------
    DataFrame
        The ``pv_anova`` table: ``*by``, ``n_combinations``, ``n_runs``, ``n_missing``,
        ``ss_between``, ``ss_within``, ``ss_total``, ``df_between``, ``df_within``, ``f``,
        ``p``, ``eta2``, ``q`` and ``note``; one row per group.

    Notes
    -----
    Formulas and edge cases: module docstring. Seed 003, Section 3 and Table 1.
    """
    factors = as_names(factors, "factors")
    by = as_names(by, "by")
    fam = [] if family is None else as_names(family, "family")
    if not set(fam) <= set(by):
        raise ValueError(f"family columns must be among by ({', '.join(by)}); got {fam}")
    df = check_table(scores, by=by, factors=factors, value=value, what="pv_anova scores")
    n_missing = df.groupby(by, sort=True, dropna=False)[value].apply(lambda s: s.isna().sum())
    ok = df[df[value].notna()].copy()
    keys = [*by, *factors]
    ok["_dev2"] = (
        ok[value] - ok.groupby(keys, dropna=False, observed=True)[value].transform("mean")
    ) ** 2
    ok["_sq"] = ok[value] ** 2
    cells = ok.groupby(keys, sort=True, dropna=False, observed=True)
    cell = cells.agg(
        n=(value, "count"), mean=(value, "mean"), ss=("_dev2", "sum"), sumsq=("_sq", "sum")
    )
    cell["sum"] = cell["n"] * cell["mean"]
    cell = cell.reset_index()
    g = cell.groupby(by, sort=True, dropna=False)
    out = g.agg(
        n_combinations=("n", "size"),
        n_runs=("n", "sum"),
        total=("sum", "sum"),
        ss_within=("ss", "sum"),
        sumsq=("sumsq", "sum"),
    )
    grand = out["total"] / out["n_runs"]
    cell = cell.join(grand.rename("grand"), on=by)
    cell["ssb"] = cell["n"] * (cell["mean"] - cell["grand"]) ** 2
    out["ss_between"] = cell.groupby(by, sort=True, dropna=False)["ssb"].sum()
    out["ss_total"] = out["ss_between"] + out["ss_within"]
    out = out.reindex(n_missing.index)
    out["n_missing"] = n_missing
    out[["n_combinations", "n_runs"]] = out[["n_combinations", "n_runs"]].fillna(0)
    k = out["n_combinations"].to_numpy(float)
    n = out["n_runs"].to_numpy(float)
    ssb, ssw = out["ss_between"].to_numpy(float), out["ss_within"].to_numpy(float)
    tol = 1e-12 * np.maximum(out["sumsq"].to_numpy(float), np.finfo(float).tiny)
    out["df_between"] = k - 1
    out["df_within"] = n - k
    one = k < 2
    norep = ~one & (n - k < 1)
    const = ~one & ~norep & ~(ssb + ssw > tol)
    inf = ~one & ~norep & ~const & (ssw <= tol)
    regular = ~(one | norep | const | inf)
    f = np.full(len(out), np.nan)
    p = np.full(len(out), np.nan)
    eta2 = np.full(len(out), np.nan)
    with np.errstate(divide="ignore", invalid="ignore"):
        f[regular] = (ssb[regular] / (k[regular] - 1)) / (ssw[regular] / (n[regular] - k[regular]))
        eta2[regular] = ssb[regular] / (ssb[regular] + ssw[regular])
    p[regular] = stats.f.sf(f[regular], k[regular] - 1, n[regular] - k[regular])
    f[inf], p[inf], eta2[inf] = np.inf, 0.0, 1.0
    out["f"], out["p"], out["eta2"] = f, p, eta2
    note = np.full(len(out), "", dtype=object)
    for mask, text in ((one, NOTE_ONE), (norep, NOTE_NOREP), (const, NOTE_CONST), (inf, NOTE_INF)):
        note[mask] = text
    out["note"] = note
    out = out.reset_index()
    if fam:
        out["q"] = np.nan
        for _, grp in out.groupby(fam, sort=False, dropna=False):
            out.loc[grp.index, "q"] = _bh(grp["p"].to_numpy(float))
    else:
        out["q"] = _bh(out["p"].to_numpy(float))
    cols = [
        *by,
        "n_combinations",
        "n_runs",
        "n_missing",
        "ss_between",
        "ss_within",
        "ss_total",
        "df_between",
        "df_within",
        "f",
        "p",
        "eta2",
        "q",
        "note",
    ]
    out = out[cols]
    for c in ("n_combinations", "n_runs", "n_missing", "df_between", "df_within"):
        out[c] = out[c].astype("int64")
    return out


def pv_anova_summary(
    anova: pd.DataFrame,
    *,
    by: str | Sequence[str] = "metric",
    alpha: float = 0.05,
    percentiles: Sequence[float] = PERCENTILES,
) -> pd.DataFrame:
    """η² percentiles and the Benjamini–Hochberg count per metric (seed 003, Table 1).

    Parameters
    ----------
    anova : DataFrame
        The ``pv_anova`` table.
    by : str or sequence of str, default "metric"
        One summary row per distinct value.
    alpha : float, default 0.05
        A group counts as significant when q < alpha.
    percentiles : sequence of float, default (10, 25, 50, 75, 90)
        η² percentiles to report (numpy's default linear interpolation; seed 003 does not
        state its method). NaN η² are left out.

    Returns
    -------
    DataFrame
        The ``pv_anova_summary`` table: ``*by``, ``n_groups``, ``n_eta2`` (groups with a
        defined η²), ``eta2_p10`` … ``eta2_p90``, ``n_significant`` (q < alpha) and
        ``bh`` (e.g. ``"90/99"``: significant / all groups, as Table 1 prints it).
    """
    by = as_names(by, "by")
    if not isinstance(anova, pd.DataFrame):
        raise TypeError(f"anova must be a pandas DataFrame, but got {type(anova).__name__}")
    missing = [c for c in (*by, "eta2", "q") if c not in anova.columns]
    if missing:
        raise ValueError(f"anova needs columns {', '.join(missing)}; got {list(anova.columns)}")
    if not 0 < alpha < 1:
        raise ValueError(f"alpha should be in the interval (0, 1) but got {alpha}")
    pct = [float(x) for x in percentiles]
    if any(not 0 <= x <= 100 for x in pct):
        raise ValueError(f"percentiles should be in [0, 100] but got {list(percentiles)}")
    rows = []
    for key, grp in anova.groupby(by, sort=True, dropna=False):
        key = key if isinstance(key, tuple) else (key,)
        eta = grp["eta2"].to_numpy(float)
        eta = eta[~np.isnan(eta)]
        row = dict(zip(by, key, strict=True))
        row["n_groups"] = len(grp)
        row["n_eta2"] = len(eta)
        for x in pct:
            row[f"eta2_p{x:g}"] = float(np.percentile(eta, x)) if len(eta) else np.nan
        sig = int((grp["q"].to_numpy(float) < alpha).sum())
        row["n_significant"] = sig
        row["bh"] = f"{sig}/{len(grp)}"
        rows.append(row)
    cols = [*by, "n_groups", "n_eta2", *[f"eta2_p{x:g}" for x in pct], "n_significant", "bh"]
    return pd.DataFrame(rows, columns=cols)
