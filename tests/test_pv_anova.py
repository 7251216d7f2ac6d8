"""One-way ANOVA over prompt combinations (``pv_anova``, ``pv_anova_summary``).

Golden values come from statsmodels (``ols`` + ``anova_lm``), scipy (``f_oneway``),
statsmodels' ``multipletests(method="fdr_bh")`` and one hand calculation:

  combination x: 1, 2, 3   combination y: 4, 5, 6   (grand mean 3.5)
  SS_between = 3·1.5² + 3·1.5² = 13.5, SS_within = 2 + 2 = 4, SS_total = 17.5
  F = (13.5 / 1) / (4 / 4) = 13.5, η² = 13.5 / 17.5 = 27/35.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
import statsmodels.formula.api as smf
from scipy import stats
from statsmodels.stats.anova import anova_lm
from statsmodels.stats.multitest import multipletests

from cuegap.designs.prompt_variance.stats import pv_anova, pv_anova_summary

FACTORS = ["choice_format", "field_order"]


def _frame(seed: int, *, drop: float = 0.0, n_systems: int = 3) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for s in range(n_systems):
        for cat in ("age", "religion"):
            for metric in ("s_bbq_dis", "s_diffaware"):
                effect = {f: rng.normal(0, 0.05 * s) for f in "abcd"}
                for f in "abcd":
                    for o in ("answer_first", "rationale_first"):
                        for r in range(5):
                            y = effect[f] + rng.normal(0, 0.03)
                            rows.append((f"sys{s}", cat, metric, f, o, r, y))
    df = pd.DataFrame(
        rows, columns=["system", "category", "metric", *FACTORS, "replicate", "score"]
    )
    if drop:
        df.loc[rng.random(len(df)) < drop, "score"] = np.nan
    return df


def test_hand_calculation() -> None:
    df = pd.DataFrame(
        {
            "system": "s",
            "category": "c",
            "metric": "m",
            "fmt": list("xxxyyy"),
            "replicate": [0, 1, 2, 0, 1, 2],
            "score": [1.0, 2, 3, 4, 5, 6],
        }
    )
    row = pv_anova(df, factors="fmt").iloc[0]
    assert row["ss_between"] == pytest.approx(13.5)
    assert row["ss_within"] == pytest.approx(4.0)
    assert row["f"] == pytest.approx(13.5)
    assert row["eta2"] == pytest.approx(27 / 35)
    assert (row["df_between"], row["df_within"]) == (1, 4)
    assert row["p"] == pytest.approx(stats.f.sf(13.5, 1, 4))


@pytest.mark.parametrize("drop", [0.0, 0.15])
def test_against_statsmodels_and_scipy(drop: float) -> None:
    """Balanced (drop = 0) and unbalanced (15 % of runs missing) designs."""
    df = _frame(7, drop=drop)
    out = pv_anova(df, factors=FACTORS).set_index(["system", "category", "metric"])
    assert len(out) == 3 * 2 * 2
    for key, grp in df.dropna(subset=["score"]).groupby(["system", "category", "metric"]):
        grp = grp.assign(combo=grp["choice_format"] + "/" + grp["field_order"])
        table = anova_lm(smf.ols("score ~ C(combo)", data=grp).fit())
        ss_b, ss_w = table["sum_sq"]
        samples = [g["score"].to_numpy() for _, g in grp.groupby("combo")]
        f, p = stats.f_oneway(*samples)
        row = out.loc[key]
        assert row["f"] == pytest.approx(table["F"].iloc[0], rel=1e-9)
        assert row["f"] == pytest.approx(f, rel=1e-9)
        assert row["p"] == pytest.approx(p, rel=1e-8, abs=1e-300)
        assert row["p"] == pytest.approx(table["PR(>F)"].iloc[0], rel=1e-8, abs=1e-300)
        assert row["eta2"] == pytest.approx(ss_b / (ss_b + ss_w), rel=1e-9)
        assert (
            row["n_missing"]
            == df.set_index(["system", "category", "metric"]).loc[key, "score"].isna().sum()
        )


def test_benjamini_hochberg_per_metric() -> None:
    df = _frame(11, n_systems=4)
    out = pv_anova(df, factors=FACTORS)
    for metric, grp in out.groupby("metric"):
        expected = multipletests(grp["p"].to_numpy(), method="fdr_bh")[1]
        np.testing.assert_allclose(grp["q"].to_numpy(), expected, rtol=1e-12)
        assert len(grp) == 8, metric
    pooled = pv_anova(df, factors=FACTORS, family=None)
    np.testing.assert_allclose(
        pooled["q"].to_numpy(), multipletests(pooled["p"].to_numpy(), method="fdr_bh")[1]
    )


def _one(values: dict[str, list[float]]) -> pd.Series:
    rows = [
        {"system": "s", "category": "c", "metric": "m", "fmt": k, "replicate": i, "score": v}
        for k, vs in values.items()
        for i, v in enumerate(vs)
    ]
    return pv_anova(pd.DataFrame(rows), factors="fmt").iloc[0]


def test_edge_cases() -> None:
    const = _one({"x": [0.2, 0.2, 0.2], "y": [0.2, 0.2, 0.2]})
    assert np.isnan(const["f"]) and np.isnan(const["p"]) and np.isnan(const["eta2"])
    assert const["note"].startswith("no variance")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert np.isnan(stats.f_oneway([0.2, 0.2, 0.2], [0.2, 0.2, 0.2]).statistic)

    exact = _one({"x": [0.1, 0.1, 0.1], "y": [0.3, 0.3, 0.3]})
    assert exact["f"] == np.inf and exact["p"] == 0.0 and exact["eta2"] == 1.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = stats.f_oneway([0.1, 0.1, 0.1], [0.3, 0.3, 0.3])
    assert ref.statistic == np.inf and ref.pvalue == 0.0

    single = _one({"x": [0.1, 0.2, 0.4]})
    assert np.isnan(single["eta2"]) and single["note"] == "fewer than two combinations"

    norep = _one({"x": [0.1], "y": [0.3], "z": [0.2]})
    assert np.isnan(norep["f"]) and np.isnan(norep["eta2"])
    assert norep["note"] == "no replicates within combinations"

    missing = _one({"x": [0.1, np.nan, 0.2], "y": [0.4, 0.5, np.nan]})
    assert missing["n_runs"] == 4 and missing["n_missing"] == 2
    assert missing["f"] == pytest.approx(stats.f_oneway([0.1, 0.2], [0.4, 0.5]).statistic)


def test_nan_p_left_out_of_bh() -> None:
    df = _frame(5)
    const = df["system"] == "sys0"
    df.loc[const & (df["category"] == "age"), "score"] = 0.5
    out = pv_anova(df, factors=FACTORS)
    bad = out["p"].isna()
    assert bad.sum() == 2 and out.loc[bad, "q"].isna().all()
    for _, grp in out[~bad].groupby("metric"):
        np.testing.assert_allclose(grp["q"], multipletests(grp["p"], method="fdr_bh")[1])


def test_summary_percentiles_and_bh_count() -> None:
    anova = pd.DataFrame(
        {
            "metric": ["a"] * 5 + ["b"] * 3,
            "eta2": [0.1, 0.2, 0.3, 0.4, 0.5, 0.9, np.nan, 0.7],
            "q": [0.01, 0.2, 0.04, 0.049, 0.05, 0.001, np.nan, 0.3],
        }
    )
    out = pv_anova_summary(anova).set_index("metric")
    # numpy linear percentiles of [0.1 .. 0.5]: p10 = 0.14, p25 = 0.2, p50 = 0.3, p90 = 0.46
    assert out.loc["a", "eta2_p10"] == pytest.approx(0.14)
    assert out.loc["a", "eta2_p25"] == pytest.approx(0.2)
    assert out.loc["a", "eta2_p50"] == pytest.approx(0.3)
    assert out.loc["a", "eta2_p90"] == pytest.approx(0.46)
    assert out.loc["a", "bh"] == "3/5"  # q < 0.05 strictly: 0.01, 0.04, 0.049
    assert out.loc["b", "n_eta2"] == 2 and out.loc["b", "bh"] == "1/3"
    assert out.loc["b", "eta2_p50"] == pytest.approx(0.8)


def test_bad_inputs_are_named() -> None:
    df = _frame(1)
    with pytest.raises(ValueError, match="factors"):
        pv_anova(df, factors=[])
    with pytest.raises(ValueError, match="needs columns nope"):
        pv_anova(df, factors="nope")
    with pytest.raises(ValueError, match="repeats a run"):
        pv_anova(pd.concat([df, df.iloc[:1]]), factors=FACTORS)
    with pytest.raises(ValueError, match="both a key and a factor"):
        pv_anova(df, factors=["system"])
    with pytest.raises(ValueError, match="alpha"):
        pv_anova_summary(pv_anova(df, factors=FACTORS), alpha=1.5)
