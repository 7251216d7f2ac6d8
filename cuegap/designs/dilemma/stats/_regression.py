"""The macro gap regressed on system covariates (Appendix O of the seed paper).

References
----------
Seed paper, "Moral Safety in LLMs: Exposing Performative Compliance with Puzzled Cues":
Appendix O (Table 38, OLS of the gap on capability and alignment).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import NamedTuple

import numpy as np
import pandas as pd
import statsmodels.api as sm
from scipy.stats import pearsonr

from cuegap.designs.dilemma.stats._system_frame import _numeric, _require, _unique_systems

__all__ = ["GapRegression", "gap_regression"]


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
