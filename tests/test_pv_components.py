"""Two-way decomposition (``pv_components``) against statsmodels ``anova_lm``.

Hand calculation (2 × 2, one replicate pair per cell, r = 2):
  cells (a1,b1): 1, 3   (a1,b2): 5, 7   (a2,b1): 2, 4   (a2,b2): 10, 12
  cell means 2, 6, 3, 11; A means 4, 7; B means 2.5, 8.5; grand mean 5.5
  SS_A = 2·2·(1.5² + 1.5²) = 18; SS_B = 2·2·(3² + 3²) = 72;
  interaction contrasts ±1 → SS_AB = 2·4·1 = 8; SS_residual = 4·2 = 8; SS_total = 106.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import statsmodels.formula.api as smf
from statsmodels.stats.anova import anova_lm

from cuegap.designs.prompt_variance.stats import pv_components

KEYS = ["system", "category", "metric"]


def _grid(seed: int, *, a: int = 4, b: int = 2, r: int = 3, groups: int = 3) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for g in range(groups):
        ea, eb = rng.normal(0, 0.1, a), rng.normal(0, 0.05, b)
        eab = rng.normal(0, 0.03, (a, b))
        for i in range(a):
            for j in range(b):
                for k in range(r):
                    y = ea[i] + eb[j] + eab[i, j] + rng.normal(0, 0.05)
                    rows.append((f"s{g}", "c", "m", f"fmt{i}", f"ord{j}", k, y))
    return pd.DataFrame(rows, columns=[*KEYS, "fmt", "order", "replicate", "score"])


def test_hand_calculation() -> None:
    vals = {
        ("a1", "b1"): (1, 3),
        ("a1", "b2"): (5, 7),
        ("a2", "b1"): (2, 4),
        ("a2", "b2"): (10, 12),
    }
    rows = [
        ("s", "c", "m", fa, fb, k, float(v))
        for (fa, fb), pair in vals.items()
        for k, v in enumerate(pair)
    ]
    df = pd.DataFrame(rows, columns=[*KEYS, "A", "B", "replicate", "score"])
    out = pv_components(df, factors=["A", "B"]).set_index("component")
    assert out["ss"].to_dict() == pytest.approx({"A": 18, "B": 72, "A:B": 8, "residual": 8})
    assert out["share"]["B"] == pytest.approx(72 / 106)
    assert out["f"]["A"] == pytest.approx(18 / (8 / 4))
    assert out["df"].to_dict() == {"A": 1, "B": 1, "A:B": 1, "residual": 4}
    assert out["balanced"].all()


@pytest.mark.parametrize("typ", [1, 2, 3])
def test_balanced_against_anova_lm(typ: int) -> None:
    df = _grid(2)
    out = pv_components(df, factors=["fmt", "order"])
    for key, grp in df.groupby(KEYS):
        formula = "score ~ C(fmt, Sum) * C(order, Sum)" if typ == 3 else "score ~ C(fmt) * C(order)"
        table = anova_lm(smf.ols(formula, data=grp).fit(), typ=typ)
        table = table.drop(index="Intercept", errors="ignore")
        got = out.set_index(KEYS).loc[key].set_index("component")
        np.testing.assert_allclose(got["ss"].to_numpy(), table["sum_sq"].to_numpy(), rtol=1e-9)
        np.testing.assert_allclose(got["f"].to_numpy()[:3], table["F"].to_numpy()[:3], rtol=1e-9)
        np.testing.assert_allclose(
            got["p"].to_numpy()[:3], table["PR(>F)"].to_numpy()[:3], rtol=1e-7
        )
        assert got["share"].sum() == pytest.approx(1.0)


def test_unbalanced_uses_type_ii() -> None:
    df = _grid(3).drop(index=[0, 7, 8])
    out = pv_components(df, factors=["fmt", "order"])
    first = out[out["system"] == "s0"].set_index("component")
    assert not first["balanced"].any() and (first["method"] == "anova_lm type II").all()
    grp = df[df["system"] == "s0"]
    table = anova_lm(smf.ols("score ~ C(fmt) * C(order)", data=grp).fit(), typ=2)
    np.testing.assert_allclose(first["ss"].to_numpy(), table["sum_sq"].to_numpy(), rtol=1e-9)
    total = ((grp["score"] - grp["score"].mean()) ** 2).sum()
    assert first["ss_total"].iloc[0] == pytest.approx(total)
    assert out[out["system"] == "s1"]["balanced"].all()


def test_one_level_factor_and_errors() -> None:
    df = _grid(5, b=1)
    out = pv_components(df, factors=["fmt", "order"]).set_index("component")
    assert (out.loc["order", "ss"] == 0).all() and out.loc["order", "f"].isna().all()
    assert out.groupby("system")["share"].sum().to_numpy() == pytest.approx(1.0)
    with pytest.raises(ValueError, match="exactly two factors"):
        pv_components(df, factors=["fmt"])
