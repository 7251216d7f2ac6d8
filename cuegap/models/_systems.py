"""System-level statistics: ranking shifts, gap regressions, the FormalNamed share.

Each function takes one row per audited system (macro quantities from
:func:`cuegap.models.macro_average` / :func:`cuegap.models.cue_visibility_gap`) and returns
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
from collections.abc import Mapping, Sequence
from typing import NamedTuple

import numpy as np
import pandas as pd
import statsmodels.api as sm
from scipy.stats import kendalltau, pearsonr

__all__ = [
    "GapRegression",
    "RankComparison",
    "formal_named_share",
    "gap_regression",
    "rankings",
]


def _require(df: pd.DataFrame, needed: Sequence[str], what: str) -> None:
    if not isinstance(df, pd.DataFrame):
        raise TypeError(f"{what} must be a pandas DataFrame, but got {type(df).__name__}")
    missing = [c for c in needed if c not in df.columns]
    if missing:
        raise ValueError(
            f"{what} needs columns {', '.join(missing)}; got {', '.join(map(str, df.columns))}"
        )


def _unique_systems(df: pd.DataFrame, what: str) -> None:
    dup = df["system"].duplicated()
    if dup.any():
        raise ValueError(
            f"{what} must have one row per system; repeated: "
            f"{', '.join(map(str, pd.unique(df.loc[dup, 'system'])))}"
        )


def _numeric(series: pd.Series, name: str, what: str) -> np.ndarray:
    try:
        values = pd.to_numeric(series, errors="raise").to_numpy(dtype=float, na_value=np.nan)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"column {name!r} of {what} must be numeric: {exc}") from exc
    if np.isnan(values).any():
        raise ValueError(f"column {name!r} of {what} has missing values")
    return values


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


class GapRegression(NamedTuple):
    """Result of :func:`gap_regression`.

    Attributes
    ----------
    coefficients : DataFrame
        ``term`` (``"intercept"`` then the covariates), ``estimate``, ``se``, ``t``, ``p``
        (two-sided, t distribution with n − k − 1 df), ``ci_low``, ``ci_high`` (95%).
    correlations : DataFrame
        ``covariate``, ``pearson_r`` (of the gap with that covariate alone), ``p_value``
        (two-sided), ``n``.
    r2, adj_r2 : float
        R² and adjusted R² of the OLS fit.
    n : int
        Number of systems.
    k : int
        Number of covariates.
    """

    coefficients: pd.DataFrame
    correlations: pd.DataFrame
    r2: float
    adj_r2: float
    n: int
    k: int


def _covariate(series: pd.Series, name: str, levels: Sequence[object] | None) -> np.ndarray:
    """A covariate as numbers: numeric as is, ordered categories as 1, 2, ... in order."""
    if isinstance(series.dtype, pd.CategoricalDtype):
        if not series.cat.ordered and levels is None:
            raise ValueError(
                f"covariate {name!r} is an unordered categorical; give numbers, an ordered "
                f"categorical (its categories become 1, 2, ...) or order={{{name!r}: [lowest, "
                "..., highest]}"
            )
        if levels is None:
            codes = series.cat.codes.to_numpy()
            if (codes < 0).any():
                raise ValueError(f"covariate {name!r} of metadata has missing values")
            return codes.astype(float) + 1
        series = series.astype(object)
    if levels is None or pd.api.types.is_numeric_dtype(series):
        if levels is None and not pd.api.types.is_numeric_dtype(series):
            text = sorted({str(v) for v in series.dropna() if isinstance(v, str)})
            if text:
                shown = ", ".join(repr(v) for v in text[:6]) + (", ..." if len(text) > 6 else "")
                raise ValueError(
                    f"covariate {name!r} of metadata must be numeric, but it holds text "
                    f"({shown}); declare the order of its levels, lowest first, e.g. "
                    f"gap_regression(..., order={{{name!r}: [{', '.join(map(repr, text[:3]))}]}}) "
                    "with your order, or pass an ordered pandas Categorical"
                )
        return _numeric(series, name, "metadata")
    keys = [str(v).strip().casefold() for v in levels]
    if len(set(keys)) != len(keys):
        raise ValueError(f"order for {name!r} repeats a level: {list(levels)}")
    position = {k: i + 1 for i, k in enumerate(keys)}
    values = [position.get(str(v).strip().casefold()) if not pd.isna(v) else None for v in series]
    bad = sorted({str(v) for v, code in zip(series, values, strict=True) if code is None})
    if bad:
        raise ValueError(
            f"covariate {name!r} has values outside its declared order {list(levels)}: "
            f"{', '.join(bad)}"
        )
    return np.asarray(values, dtype=float)


def gap_regression(
    gap_table: pd.DataFrame,
    metadata: pd.DataFrame,
    *,
    covariates: Sequence[str] = ("capability", "alignment"),
    order: Mapping[str, Sequence[object]] | None = None,
) -> GapRegression:
    r"""OLS of the Cue Visibility Gap on system-level covariates.

    Parameters
    ----------
    gap_table : DataFrame
        One row per system with ``system`` and ``gap_pp`` (macro gap, pp).
    metadata : DataFrame
        One row per system with ``system`` and the ``covariates`` columns. A covariate is
        numeric, an ordered pandas Categorical (e.g. an alignment tier low < medium <
        high), or text whose levels ``order`` ranks. Ordered levels are coded 1, 2, 3, ...
        lowest first (the paper's tiers: low = 1, medium = 2, high = 3), so a slope is
        the change in gap per step up the order.
    covariates : sequence of str, default ("capability", "alignment")
        Regressors, in the order of the output terms.
    order : mapping of str to sequence, optional
        For a text (or unordered categorical) covariate, its levels lowest first, e.g.
        ``{"alignment": ["low", "medium", "high"]}``. Levels match after stripping spaces
        and ignoring case; a value outside them is an error. A covariate that is already
        numeric, or an ordered Categorical not named here, is used as it is.

    Returns
    -------
    GapRegression
        Coefficients, per-covariate Pearson correlations and fit statistics; see
        :class:`GapRegression`.

    Raises
    ------
    ValueError
        If a column or covariate is missing, a system of ``gap_table`` has no metadata, a
        value is missing, not numeric and not ranked by ``order`` (the message says how
        to declare the order), a system repeats, there are no covariates, the
        design is rank deficient, or ``n <= k + 1`` (no residual degree of freedom).

    Notes
    -----
    :math:`\mathrm{gap}_s = \beta_0 + \sum_j \beta_j x_{sj} + \varepsilon_s`, fitted by
    ``statsmodels.OLS`` with classical (non-robust) standard errors. Appendix O fits
    gap ~ capability + alignment over 14 systems (R² ≈ 0.22, Pearson r ≈ −0.46 for
    capability). With so few systems, read the p-values and intervals as descriptive.

    Worked example: gaps 1, 3, 2, 4 at x = 0, 1, 2, 3 give slope 0.8, intercept 1.3,
    fitted 1.3, 2.1, 2.9, 3.7, SSE = 0.09 + 0.81 + 0.81 + 0.09 = 1.8, SST = 5, R² = 0.64.

    Examples
    --------
    A text tier, as a runner's metadata gives it, with its order declared:

    >>> gaps = pd.DataFrame({"system": list("ABCD"), "gap_pp": [4.0, 3.0, 1.0, 3.0]})
    >>> meta = pd.DataFrame({"system": list("ABCD"),
    ...                      "alignment": ["low", "medium", "high", "High"]})
    >>> fit = gap_regression(gaps, meta, covariates=["alignment"],
    ...                      order={"alignment": ["low", "medium", "high"]})
    >>> fit.coefficients.set_index("term")["estimate"].round(6).to_dict()
    {'intercept': 5.0, 'alignment': -1.0}

    (Coded 1, 2, 3, 3: slope −2.75 / 2.75 = −1 pp per tier, intercept 2.75 + 2.25 = 5.)
    """
    order = dict(order or {})
    unknown_order = sorted(set(order) - set(covariates))
    if unknown_order:
        raise ValueError(
            f"order names {', '.join(unknown_order)}, which covariates {list(covariates)} lack"
        )
    covariates = list(covariates)
    if not covariates:
        raise ValueError("covariates must name at least one column of metadata")
    _require(gap_table, ["system", "gap_pp"], "gap_table")
    _require(metadata, ["system", *covariates], "metadata")
    _unique_systems(gap_table, "gap_table")
    _unique_systems(metadata, "metadata")
    unknown = sorted(set(gap_table["system"]) - set(metadata["system"]), key=str)
    if unknown:
        raise ValueError(f"metadata has no row for system(s): {', '.join(map(str, unknown))}")
    data = gap_table[["system", "gap_pp"]].merge(metadata, on="system", how="left")
    n, k = len(data), len(covariates)
    if n <= k + 1:
        raise ValueError(
            f"gap_regression needs more systems than parameters: n = {n} systems for "
            f"k + 1 = {k + 1} parameters (n must be at least {k + 2})"
        )
    y = _numeric(data["gap_pp"], "gap_pp", "gap_table")
    x = np.column_stack([_covariate(data[c], c, order.get(c)) for c in covariates])
    design = sm.add_constant(x, has_constant="add")
    if np.linalg.matrix_rank(design) < k + 1:
        raise ValueError(
            f"covariates {covariates} are collinear or constant across the {n} systems"
        )
    fit = sm.OLS(y, design).fit()
    ci = fit.conf_int(alpha=0.05)
    coefficients = pd.DataFrame(
        {
            "term": ["intercept", *covariates],
            "estimate": fit.params,
            "se": fit.bse,
            "t": fit.tvalues,
            "p": fit.pvalues,
            "ci_low": ci[:, 0],
            "ci_high": ci[:, 1],
        }
    )
    corr_rows = []
    for j, name in enumerate(covariates):
        r = pearsonr(x[:, j], y)
        corr_rows.append(
            {"covariate": name, "pearson_r": float(r.statistic), "p_value": float(r.pvalue), "n": n}
        )
    correlations = pd.DataFrame(corr_rows, columns=["covariate", "pearson_r", "p_value", "n"])
    return GapRegression(
        coefficients, correlations, float(fit.rsquared), float(fit.rsquared_adj), n, k
    )


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
