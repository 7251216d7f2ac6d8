r"""One-sample t-tests of the conversation contrasts and cross-benchmark consistency.

Seed 003 (§5, footnote 6) tests "whether the measured difference is significantly
different from zero" with one-sample t-tests but does not say over what. Here the sample
is the contrast computed within each level of a *unit* column, named by the caller and
recorded in the table (``unit``):

* ``"persona"`` (default): the persona is "[varied]" in every λ of the paper, so the
  paired per-persona differences are the natural replicates (the null persona is a
  level like any other);
* ``"question"``: per question (needs a ``question`` column; each question's λ rests on
  few transitions, so many are undefined and dropped);
* ``"category"``: per benchmark category (Discrim-Eval has only two).

For one evaluation condition with unit contrasts x_1..x_n (NaN ones dropped, counted in
``n_dropped``): mean x̄, sample SD s (ddof 1), t = x̄ / (s / √n), df = n − 1, two-sided
p = 2 P(T_df > |t|), as ``scipy.stats.ttest_1samp``. n < 2 gives NaN; s = 0 gives
t = ±∞, p = 0 when x̄ ≠ 0 and NaN when x̄ = 0 (``note`` says so). ``estimate`` is the
pooled contrast (all units' counts summed), which is what the paper plots; it is not
what is tested, so every table that shows a sign or a p shows it beside ``mean``, the
tested estimate, and its own (1 − α) t-interval ``low``..``high`` (x̄ ± t_{1−α/2, df}
s/√n: it excludes 0 exactly when p < α).

Too few units (``min_df``, the policy's ``conversation.min_unit_df``): a test with
df < ``min_df`` keeps its t and p, but ``df_ok`` is False, it is never ``significant``
and ``note`` says why (for example "2 personas: df 1 < policy minimum 4; not counted as
significant"). With two units one discordant unit decides p (issue 27: t = 334.5,
p = 0.002 on 1 df).

Benjamini–Hochberg (statsmodels ``multipletests(method="fdr_bh")``) is optional; its
family is every test sharing the ``family`` columns (default one contrast on one
benchmark), NaN p left out.

Cross-benchmark consistency (§5, "findings with statistical significance on multiple
benchmarks"): an evaluation condition (contrast, system, demographic or pair,
instantiation) is a *finding* when it is significant with the same sign on every
benchmark required (default: every benchmark in the table), is tested on all of them,
and there are at least two such benchmarks: seed 003 counts cross-dataset evidence only
when it is significant on every dataset, so one benchmark can give no cross-benchmark
finding. ``all_significant`` records "significant with one sign on every required
benchmark" whatever their number (on one benchmark: significant there).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np
import pandas as pd
from scipy import stats
from statsmodels.stats.multitest import multipletests

from cuegap.designs.conversation.stats._contrasts import CONDITION, CONTRASTS, conv_contrasts
from cuegap.designs.conversation.stats._frame import DEFAULT_PAIRS, as_list

__all__ = ["conv_consistency", "conv_consistency_summary", "conv_tests", "few_df_note"]

NOTE_FEW = "fewer than two units with a contrast"
NOTE_CONST = "no variance across units"
_TINY = 1e-12


def _t_table(unit_contrasts: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    x = unit_contrasts
    g = x.groupby(keys, sort=False, observed=True)["estimate"]
    out = g.agg(mean="mean", sd="std", n_units="count", size="size").reset_index()
    out["n_dropped"] = out.pop("size") - out["n_units"]
    n = out["n_units"].to_numpy(float)
    m = out["mean"].to_numpy(float)
    s = out["sd"].to_numpy(float)
    const = (n >= 2) & (s <= _TINY * np.maximum(1.0, np.abs(m)))
    with np.errstate(invalid="ignore", divide="ignore"):
        t = m / (s / np.sqrt(n))
        t = np.where(const, np.where(np.abs(m) > _TINY, np.sign(m) * np.inf, np.nan), t)
        t = np.where(n >= 2, t, np.nan)
        df = np.where(n >= 2, n - 1, np.nan)
        p = np.where(np.isfinite(t), 2 * stats.t.sf(np.abs(t), df), np.nan)
        p = np.where(np.isinf(t), 0.0, p)
    out["sd"] = np.where(n >= 2, s, np.nan)
    out["t"], out["df"], out["p"] = t, df, p
    note = np.where(n < 2, NOTE_FEW, np.where(const, NOTE_CONST, ""))
    out["note"] = note
    return out


def few_df_note(n_units: int, unit: str, min_df: int) -> str:
    """Why a t-test over ``n_units`` units does not count: ``2 personas: df 1 < policy
    minimum 4; not counted as significant``."""
    noun = {"category": "categories"}.get(unit, f"{unit}s") if n_units != 1 else unit
    return (
        f"{n_units} {noun}: df {max(n_units - 1, 0)} < policy minimum {min_df}; "
        "not counted as significant"
    )


def _bh(p: np.ndarray) -> np.ndarray:
    q = np.full(len(p), np.nan)
    ok = ~np.isnan(p)
    if ok.any():
        q[ok] = multipletests(p[ok], method="fdr_bh")[1]
    return q


def conv_tests(
    counts: pd.DataFrame,
    *,
    unit: Literal["persona", "question", "category"] | str = "persona",
    alpha: float = 0.05,
    correction: Literal["none", "bh"] = "none",
    family: str | Sequence[str] = ("contrast", "benchmark"),
    pairs: Sequence[tuple[str, str]] = DEFAULT_PAIRS,
    contrasts: Sequence[str] = CONTRASTS,
    inst_null: bool = False,
    min_df: int = 1,
) -> pd.DataFrame:
    """The ``conv_tests`` table: a one-sample t-test of each contrast against zero.

    Parameters
    ----------
    counts : DataFrame
        The transition count frame (see :mod:`cuegap.designs.conversation.stats`).
    unit : {"persona", "question", "category"} or str, default "persona"
        The column whose levels are the t-test's observations (module docstring).
    alpha : float, default 0.05
        Significance level.
    correction : {"none", "bh"}, default "none"
        ``"bh"``: significance from Benjamini–Hochberg q within ``family``.
    family : str or sequence of str, default ("contrast", "benchmark")
        Columns that define one BH family.
    pairs, contrasts, inst_null
        As in :func:`conv_contrasts`.
    min_df : int, default 1
        Fewest degrees of freedom whose significance counts (the policy's
        ``conversation.min_unit_df``; module docstring).

    Returns
    -------
    DataFrame
        One row per evaluation condition: ``contrast``, ``system``, ``benchmark``,
        ``demographic``, ``reference``, ``instantiation``, ``estimate`` (pooled contrast),
        ``mean`` (the tested unit mean), ``sd``, ``n_units``, ``n_dropped``, ``t``,
        ``df``, ``p``, ``low``, ``high`` ((1 − α) t-interval of ``mean``), ``q`` (BH, NaN
        unless ``correction="bh"``), ``df_ok`` (df ≥ ``min_df``), ``significant`` (bool;
        never with ``df_ok`` False), ``sign`` (+1 / −1 / 0 of ``mean``), ``note``,
        ``unit``, ``alpha``, ``correction``, ``min_df``.

    Raises
    ------
    ValueError
        On ``alpha`` outside (0, 1), an unknown ``correction``, a ``min_df`` below 1, or
        bad counts / unit.
    """
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), but got {alpha!r}")
    if correction not in ("none", "bh"):
        raise ValueError(f"correction must be 'none' or 'bh', but got {correction!r}")
    if not isinstance(unit, str):
        raise TypeError(f"unit must be a column name, but got {type(unit).__name__}")
    if isinstance(min_df, bool) or not isinstance(min_df, int | np.integer) or min_df < 1:
        raise ValueError(f"min_df must be an integer >= 1, but got {min_df!r}")
    kw = {"pairs": pairs, "contrasts": contrasts, "inst_null": inst_null}
    pooled = conv_contrasts(counts, **kw)
    per_unit = conv_contrasts(counts, unit=unit, **kw)
    keys = list(CONDITION)
    tt = _t_table(per_unit, keys) if not per_unit.empty else pd.DataFrame(columns=keys)
    out = pooled.merge(tt, on=keys, how="left")
    out["n_units"] = out["n_units"].fillna(0).astype(np.int64)
    out["n_dropped"] = out["n_dropped"].fillna(0).astype(np.int64)
    out["note"] = out["note"].fillna(NOTE_FEW)
    df = out["df"].to_numpy(float)
    half = (
        stats.t.ppf(1 - alpha / 2, np.where(df > 0, df, np.nan))
        * out["sd"].to_numpy(float)
        / np.sqrt(out["n_units"].clip(lower=1).to_numpy(float))
    )
    half = np.where(out["sd"].to_numpy(float) == 0, 0.0, half)  # s = 0: a point
    out["low"], out["high"] = out["mean"] - half, out["mean"] + half
    few = (out["n_units"] >= 2) & ~(df >= min_df)
    out["df_ok"] = df >= min_df
    out.loc[few, "note"] = [
        "; ".join(x for x in (few_df_note(int(n), unit, min_df), str(old)) if x)
        for n, old in zip(out.loc[few, "n_units"], out.loc[few, "note"], strict=True)
    ]
    p = out["p"].to_numpy(float)
    q = np.full(len(out), np.nan)
    if correction == "bh" and len(out):
        fam = as_list(family, "family")
        for _, idx in out.groupby(fam, sort=False).indices.items():
            q[idx] = _bh(p[idx])
        decide = q
    else:
        decide = p
    out["q"] = q
    with np.errstate(invalid="ignore"):
        out["significant"] = (np.nan_to_num(decide, nan=1.0) < alpha) & out["df_ok"].to_numpy()
    out["sign"] = np.sign(out["mean"].to_numpy(float))
    out["sign"] = out["sign"].fillna(0).astype(np.int64)
    out["unit"] = unit
    out["alpha"] = alpha
    out["correction"] = correction
    out["min_df"] = min_df
    return out


def conv_consistency(
    tests: pd.DataFrame, *, benchmarks: Sequence[str] | None = None
) -> pd.DataFrame:
    """The ``conv_consistency`` table: is a condition significant, same sign, everywhere?

    Parameters
    ----------
    tests : DataFrame
        The ``conv_tests`` table.
    benchmarks : sequence of str, optional
        Benchmarks a finding must hold on; default every benchmark in ``tests`` (seed 003:
        BBQ, Difference-Awareness, Discrim-Eval).

    Returns
    -------
    DataFrame
        One row per (``contrast``, ``system``, ``demographic``, ``reference``,
        ``instantiation``): ``n_required`` (the benchmarks required), ``n_benchmarks``
        (required benchmarks with a p-value), ``n_significant``, ``n_positive``,
        ``n_negative`` (significant ones by sign), ``all_significant`` (significant with
        one sign on every required benchmark), ``finding`` (that, on at least two
        benchmarks: a cross-benchmark finding), ``direction`` (the sign of
        ``all_significant``, 0 otherwise), then per required benchmark the tested estimate
        and its own sign, interval and p: ``mean_<benchmark>``, ``low_<benchmark>``,
        ``high_<benchmark>``, ``p_<benchmark>`` (the sign is that of the mean; the pooled
        ``estimate`` of ``conv_tests`` is not tested and is not shown here).
    """
    need = ["benchmark", "mean", "p", "significant", "sign", *CONDITION]
    missing = [c for c in need if c not in tests.columns]
    if missing:
        raise ValueError(f"tests needs columns {', '.join(missing)} (use conv_tests)")
    bench = sorted(set(tests["benchmark"])) if benchmarks is None else list(benchmarks)
    keys = [c for c in CONDITION if c != "benchmark"]
    t = tests[tests["benchmark"].isin(bench)].copy()
    for col in ("low", "high"):  # conv_tests tables stored before these columns existed
        if col not in t.columns:
            t[col] = np.nan
    t["tested"] = t["p"].notna()
    t["pos"] = t["significant"] & (t["sign"] > 0)
    t["neg"] = t["significant"] & (t["sign"] < 0)
    g = t.groupby(keys, sort=True, observed=True)
    out = g.agg(
        n_benchmarks=("tested", "sum"),
        n_significant=("significant", "sum"),
        n_positive=("pos", "sum"),
        n_negative=("neg", "sum"),
    ).reset_index()
    k = len(bench)
    out.insert(len(keys), "n_required", k)
    pos = (out["n_positive"] == k) & (out["n_benchmarks"] == k)
    neg = (out["n_negative"] == k) & (out["n_benchmarks"] == k)
    out["all_significant"] = (pos | neg) & (k > 0)
    out["finding"] = out["all_significant"] & (k >= 2)
    out["direction"] = np.where(out["all_significant"], np.where(pos, 1, -1), 0)
    wides = []
    for col in ("mean", "low", "high", "p"):
        wide = t.pivot_table(
            index=keys, columns="benchmark", values=col, aggfunc="first", dropna=False
        )
        wide = wide.reindex(columns=bench)
        wide.columns = [f"{col}_{b}" for b in bench]
        wides.append(wide)
    order = [f"{col}_{b}" for b in bench for col in ("mean", "low", "high", "p")]
    if len(t):
        wide = pd.concat(wides, axis=1)
        out = out.merge(wide[order].reset_index(), on=keys, how="left")
    else:
        out = out.reindex(columns=[*out.columns, *order])
    return out


def conv_consistency_summary(consistency: pd.DataFrame) -> pd.DataFrame:
    """Findings per contrast and instantiation (seed 003's counts: 10, 6, 3, 1, 1).

    Returns
    -------
    DataFrame
        ``contrast``, ``instantiation``, ``conditions``, ``benchmarks`` (required: a
        finding needs at least two), ``findings``, ``negative``, ``positive`` (findings by
        sign), ``all_significant`` (conditions significant with one sign on every
        benchmark: the findings, or with one benchmark the conditions significant on it).
    """
    c = consistency
    if "all_significant" not in c.columns:  # a table stored before issue 27
        c = c.assign(all_significant=c["finding"], n_required=np.nan)
    c = c.assign(neg=c["finding"] & (c["direction"] < 0), pos=c["finding"] & (c["direction"] > 0))
    out = c.groupby(["contrast", "instantiation"], sort=False).agg(
        conditions=("finding", "size"),
        benchmarks=("n_required", "max"),
        findings=("finding", "sum"),
        negative=("neg", "sum"),
        positive=("pos", "sum"),
        all_significant=("all_significant", "sum"),
    )
    return out.reset_index()
