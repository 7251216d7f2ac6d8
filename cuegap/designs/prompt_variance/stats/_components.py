r"""Two-way decomposition of a score's variance: factor A, factor B, their interaction
and replicate noise (beyond seed 003, which pools the factors into one one-way ANOVA).

Per group (by default one (system, category, metric)) with factors A (a levels) and B
(b levels) and the replicates as observations:

* balanced design (every A × B cell has the same number r of runs with a score): the
  classical sums of squares, SS_A = b r Σ_i (ȳ_i·· − ȳ)², SS_B = a r Σ_j (ȳ·j· − ȳ)²,
  SS_AB = r Σ_ij (ȳ_ij· − ȳ_i·· − ȳ·j· + ȳ)², SS_residual = Σ (y − ȳ_ij·)², which add up to
  SS_total = Σ (y − ȳ)² (types I, II and III coincide here);
* otherwise: type II sums of squares from statsmodels (``ols("y ~ C(A) * C(B)")`` and
  ``anova_lm(typ=2)``), which need not add up to SS_total.

``share`` = SS / SS_total; F and p test each effect against the residual mean square.
A factor with one level has SS = 0 and no test. Rows with a NaN score are dropped.

Not here: the hierarchical Bayesian variance-components model with posterior intervals
for each share that issue 15 also asks for (it belongs with the PyMC models, gated like
the others).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import statsmodels.formula.api as smf
from scipy import stats
from statsmodels.stats.anova import anova_lm

from cuegap.designs.prompt_variance.stats._frame import BY, as_names, check_table

__all__ = ["pv_components"]


def _balanced(grp: pd.DataFrame, a: str, b: str, y: str) -> dict[str, tuple[float, int]] | None:
    cells = grp.groupby([a, b], observed=True)[y]
    n = cells.size()
    la, lb = grp[a].nunique(), grp[b].nunique()
    if len(n) != la * lb or n.nunique() != 1:
        return None
    r = int(n.iloc[0])
    mu = grp[y].mean()
    ma = grp.groupby(a, observed=True)[y].mean()
    mb = grp.groupby(b, observed=True)[y].mean()
    mab = cells.mean()
    i = mab.index.get_level_values(0)
    j = mab.index.get_level_values(1)
    inter = mab.to_numpy() - ma.loc[i].to_numpy() - mb.loc[j].to_numpy() + mu
    resid = grp[y] - grp.groupby([a, b], observed=True)[y].transform("mean")
    return {
        "A": (lb * r * float(((ma - mu) ** 2).sum()), la - 1),
        "B": (la * r * float(((mb - mu) ** 2).sum()), lb - 1),
        "AB": (r * float((inter**2).sum()), (la - 1) * (lb - 1)),
        "residual": (float((resid**2).sum()), len(grp) - la * lb),
    }


def _typ2(grp: pd.DataFrame, a: str, b: str, y: str) -> dict[str, tuple[float, int]]:
    data = pd.DataFrame({"y": grp[y].to_numpy(), "A": grp[a].astype(str), "B": grp[b].astype(str)})
    terms = [t for t, col in (("C(A)", "A"), ("C(B)", "B")) if data[col].nunique() > 1]
    if len(terms) == 2:
        terms.append("C(A):C(B)")
    if not terms:
        return {"residual": (float(((data["y"] - data["y"].mean()) ** 2).sum()), len(data) - 1)}
    table = anova_lm(smf.ols("y ~ " + " + ".join(terms), data=data).fit(), typ=2)
    names = {"C(A)": "A", "C(B)": "B", "C(A):C(B)": "AB", "Residual": "residual"}
    return {names[k]: (float(v.sum_sq), round(float(v.df))) for k, v in table.iterrows()}


def pv_components(
    scores: pd.DataFrame,
    *,
    factors: Sequence[str],
    by: Sequence[str] = BY,
    value: str = "score",
) -> pd.DataFrame:
    """Shares of a score's variance due to each of two factors, their interaction and
    replicate noise.

    Parameters
    ----------
    scores : DataFrame
        The ``pv_scores`` table (or any table with ``by``, ``factors``, ``replicate`` and
        ``value``).
    factors : sequence of two str
        Factor A and factor B, e.g. ``("choice_format", "field_order")``.
    by : sequence of str, default ("system", "category", "metric")
        One decomposition per distinct value.
    value : str, default "score"
        The score column.

    Returns
    -------
    DataFrame
        The ``pv_components`` table, one row per (group, component) with ``component``
        (factor A's name, factor B's name, ``"A:B"`` joined with ``:``, ``residual``),
        ``ss``, ``df``, ``share`` (of SS_total), ``f``, ``p``, ``ss_total``, ``balanced``
        and ``method`` (``"balanced"`` or ``"anova_lm type II"``).

    Notes
    -----
    Formulas: module docstring.
    """
    factors = as_names(factors, "factors")
    if len(factors) != 2:
        raise ValueError(
            f"pv_components needs exactly two factors (A, B); got {len(factors)}: {factors}. "
            "For one factor use pv_anova."
        )
    by = as_names(by, "by")
    a, b = factors
    df = check_table(scores, by=by, factors=factors, value=value, what="pv_components scores")
    df = df[df[value].notna()]
    label = {"A": a, "B": b, "AB": f"{a}:{b}", "residual": "residual"}
    rows = []
    for key, grp in df.groupby(by, sort=True, dropna=False):
        key = key if isinstance(key, tuple) else (key,)
        head = dict(zip(by, key, strict=True))
        comp = _balanced(grp, a, b, value)
        balanced = comp is not None
        if comp is None:
            comp = _typ2(grp, a, b, value)
        ss_total = float(((grp[value] - grp[value].mean()) ** 2).sum())
        ss_res, df_res = comp.get("residual", (np.nan, 0))
        ms_res = ss_res / df_res if df_res > 0 else np.nan
        for name in ("A", "B", "AB", "residual"):
            ss, dof = comp.get(name, (0.0, 0))
            if dof == 0 and name != "residual":
                ss = 0.0  # a one-level factor: exactly no effect, not rounding noise
            f = p = np.nan
            if name != "residual" and dof > 0 and df_res > 0:
                with np.errstate(divide="ignore", invalid="ignore"):
                    f = (ss / dof) / ms_res if ms_res > 0 else (np.inf if ss > 0 else np.nan)
                if np.isfinite(f):
                    p = float(stats.f.sf(f, dof, df_res))
                elif f == np.inf:
                    p = 0.0
            rows.append(
                {
                    **head,
                    "component": label[name],
                    "ss": ss,
                    "df": int(dof),
                    "share": ss / ss_total if ss_total > 0 else np.nan,
                    "f": f,
                    "p": p,
                    "ss_total": ss_total,
                    "balanced": balanced,
                    "method": "balanced" if balanced else "anova_lm type II",
                }
            )
    cols = [*by, "component", "ss", "df", "share", "f", "p", "ss_total", "balanced", "method"]
    return pd.DataFrame(rows, columns=cols)
