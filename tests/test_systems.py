"""System-level statistics (``cuegap.designs.dilemma.stats._systems``).

Hand calculations
-----------------
Kendall: systems A-D, Direct nets 4, 3, 2, 1, Puzzled nets 3, 4, 1, 2. Pairs A-B and C-D
are discordant, the other 4 concordant: tau = (4 − 2)/6 = 1/3. The numbers of orderings of
4 items with 0..6 inversions are 1, 3, 5, 6, 5, 3, 1 (of 24), so the exact two-sided
p-value is P(|tau| >= 1/3) = (1 + 3 + 5 + 5 + 3 + 1)/24 = 0.75.
With a tie, Direct 1, 2, 2, 3 and Puzzled 1, 2, 3, 4: 5 concordant pairs, 0 discordant,
1 pair tied in Direct: tau-b = 5 / √((6 − 1)(6 − 0)) = 5/√30.

OLS: gaps 1, 3, 2, 4 at x = 0, 1, 2, 3: slope Sxy/Sxx = 4/5 = 0.8, intercept
2.5 − 0.8 · 1.5 = 1.3, residuals −0.3, 0.9, −0.9, 0.3, SSE 1.8, SST 5, R² = 0.64,
adjusted R² = 1 − 0.36 · 3/2 = 0.46, SE(slope) = √(1.8/2/5) = √0.18, r = 4/√(5 · 5) = 0.8.

Seed paper
----------
Appendix O, Table 38 (gap, capability, alignment for 14 systems; R² ≈ 0.22, Pearson
r ≈ −0.46 for capability) and Appendix S, Table 42 (% of the gap via FormalNamed).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from cuegap.designs.dilemma.stats._regression import gap_regression
from cuegap.designs.dilemma.stats._systems import formal_named_share, rankings


def _gap_table(direct, puzzled, systems="ABCD") -> pd.DataFrame:
    return pd.DataFrame(
        {
            "system": list(systems),
            "net_direct_pp": direct,
            "net_puzzled_pp": puzzled,
            "gap_pp": np.subtract(direct, puzzled),
        }
    )


def test_rankings_hand_computed_tau_and_exact_p() -> None:
    result = rankings(_gap_table([4, 3, 2, 1], [3, 4, 1, 2]))
    assert result.tau == pytest.approx(1 / 3)
    assert result.p_value == pytest.approx(0.75)
    assert result.n == 4
    ranks = result.ranks.set_index("system")
    assert list(ranks.index) == ["A", "B", "C", "D"]
    assert list(ranks["rank_direct"]) == [1, 2, 3, 4]
    assert list(ranks["rank_puzzled"]) == [2, 1, 4, 3]
    assert list(ranks["rank_shift"]) == [1, -1, 1, -1]
    # gaps 1, -1, 1, -1: two tied at the top share rank 1.5
    assert list(ranks["rank_gap"]) == [1.5, 3.5, 1.5, 3.5]


def test_rankings_tau_b_with_a_tie_and_invariances() -> None:
    table = _gap_table([1, 2, 2, 3], [1, 2, 3, 4])
    result = rankings(table)
    assert result.tau == pytest.approx(5 / math.sqrt(30))
    assert list(result.ranks["system"]) == ["D", "B", "C", "A"]  # ties by name
    assert list(result.ranks["rank_direct"]) == [1, 2.5, 2.5, 4]
    shuffled = rankings(table.sample(frac=1, random_state=2))
    pd.testing.assert_frame_equal(shuffled.ranks, result.ranks)
    same = rankings(_gap_table([5, 1, 3, 2], [5, 1, 3, 2]))
    assert same.tau == pytest.approx(1.0) and (same.ranks["rank_shift"] == 0).all()
    reversed_ = rankings(_gap_table([5, 1, 3, 2], [-5, -1, -3, -2]))
    assert reversed_.tau == pytest.approx(-1.0)


def test_rankings_errors() -> None:
    with pytest.raises(ValueError, match="needs columns gap_pp"):
        rankings(_gap_table([1, 2], [2, 1], "AB").drop(columns="gap_pp"))
    with pytest.raises(ValueError, match="at least 2 systems"):
        rankings(_gap_table([1], [2], "A"))
    with pytest.raises(ValueError, match="one row per system; repeated: A"):
        rankings(_gap_table([1, 2], [2, 1], "AA"))


def test_ols_exactly_linear_recovers_coefficients() -> None:
    """gap = 2 − 3 capability + 0.5 alignment exactly: coefficients back, R² = 1."""
    cap = np.array([0.90, 0.95, 1.00, 0.97, 0.92])
    ali = np.array([1, 3, 2, 2, 3])
    gap = 2 - 3 * cap + 0.5 * ali
    systems = list("ABCDE")
    fit = gap_regression(
        pd.DataFrame({"system": systems, "gap_pp": gap}),
        pd.DataFrame({"system": systems[::-1], "capability": cap[::-1], "alignment": ali[::-1]}),
    )
    coef = fit.coefficients.set_index("term")["estimate"]
    assert list(coef.index) == ["intercept", "capability", "alignment"]
    assert coef.to_numpy() == pytest.approx([2, -3, 0.5], abs=1e-9)
    assert fit.r2 == pytest.approx(1.0) and (fit.n, fit.k) == (5, 2)


def test_ols_small_example_by_hand() -> None:
    fit = gap_regression(
        pd.DataFrame({"system": list("ABCD"), "gap_pp": [1, 3, 2, 4]}),
        pd.DataFrame({"system": list("ABCD"), "x": [0, 1, 2, 3]}),
        covariates=["x"],
    )
    row = fit.coefficients.set_index("term")
    assert row.loc["x", "estimate"] == pytest.approx(0.8)
    assert row.loc["intercept", "estimate"] == pytest.approx(1.3)
    assert row.loc["x", "se"] == pytest.approx(math.sqrt(0.18))
    assert row.loc["x", "t"] == pytest.approx(0.8 / math.sqrt(0.18))
    # 95% CI: estimate ± t_{0.975, 2} · SE with t_{0.975, 2} = 4.302653
    half = 4.302653 * math.sqrt(0.18)
    assert (row.loc["x", "ci_low"], row.loc["x", "ci_high"]) == pytest.approx(
        (0.8 - half, 0.8 + half), abs=1e-5
    )
    assert fit.r2 == pytest.approx(0.64)
    assert fit.adj_r2 == pytest.approx(0.46)
    assert fit.correlations["pearson_r"].iloc[0] == pytest.approx(0.8)
    assert list(fit.correlations.columns) == ["covariate", "pearson_r", "p_value", "n"]


# Appendix O, Table 38: system -> (gap pp, capability, alignment tier).
TABLE_38 = {
    "Claude-Sonnet-4.6": (4.12, 1.000, "high"),
    "DeepSeek-V3.2": (5.55, 1.000, "medium"),
    "Gemini-3-Flash-Preview": (3.19, 0.999, "high"),
    "Gemma-2-9B-IT": (1.62, 0.988, "medium"),
    "GPT-4o-2024-08-06": (-3.99, 1.000, "high"),
    "Grok-4.1-Fast": (5.94, 0.996, "high"),
    "Llama-3.1-8B-Instruct": (7.17, 0.986, "medium"),
    "Ministral-8B-2512": (7.82, 0.982, "medium"),
    "OLMo-3-7B-Instruct": (5.11, 0.951, "low"),
    "Qwen3-VL-8B-Instruct": (10.63, 0.945, "medium"),
    "Command-R7B-12-2024": (10.55, 0.970, "medium"),
    "Llama-3.3-70B-Instruct": (1.06, 1.000, "medium"),
    "Qwen3-235B-A22B-Instruct": (-0.36, 1.000, "high"),
    "GPT-OSS-20B": (-1.97, 0.967, "medium"),
}


def test_reproduces_appendix_o_fit() -> None:
    """R² ≈ 0.22 and r(capability) ≈ −0.46 from Table 38; the table's values are rounded
    (gap to 0.01 pp, capability to 0.001), so R² is matched to ±0.01 and r to ±0.005.
    The ordered tier low < medium < high is coded 1, 2, 3 as in the paper, and a negative
    alignment slope is checked (the paper's "more alignment, slightly smaller gap")."""
    systems = list(TABLE_38)
    gaps = pd.DataFrame({"system": systems, "gap_pp": [v[0] for v in TABLE_38.values()]})
    tiers = pd.Categorical(
        [v[2] for v in TABLE_38.values()], categories=["low", "medium", "high"], ordered=True
    )
    meta = pd.DataFrame(
        {"system": systems, "capability": [v[1] for v in TABLE_38.values()], "alignment": tiers}
    )
    fit = gap_regression(gaps, meta)
    assert fit.n == 14
    assert fit.r2 == pytest.approx(0.22, abs=0.01)
    r = fit.correlations.set_index("covariate")["pearson_r"]
    assert r["capability"] == pytest.approx(-0.46, abs=0.005)
    assert fit.coefficients.set_index("term").loc["alignment", "estimate"] < 0
    numeric = meta.assign(alignment=tiers.codes + 1)
    same = gap_regression(gaps, numeric)
    pd.testing.assert_frame_equal(same.coefficients, fit.coefficients)


def test_gap_regression_errors() -> None:
    gaps = pd.DataFrame({"system": list("ABC"), "gap_pp": [1.0, 2.0, 4.0]})
    meta = pd.DataFrame({"system": list("ABC"), "capability": [0.9, 1.0, 0.8]})
    with pytest.raises(ValueError, match="metadata needs columns alignment"):
        gap_regression(gaps, meta)
    with pytest.raises(ValueError, match="n = 3 systems for k \\+ 1 = 3 parameters"):
        gap_regression(gaps, meta.assign(alignment=[1, 2, 2]))
    with pytest.raises(ValueError, match="no row for system"):
        gap_regression(gaps, meta.iloc[:2], covariates=["capability"])
    with pytest.raises(ValueError, match="collinear or constant"):
        gap_regression(gaps, meta.assign(capability=1.0), covariates=["capability"])
    with pytest.raises(ValueError, match="must be numeric"):
        gap_regression(gaps, meta.assign(capability=["a", "b", "c"]), covariates=["capability"])
    with pytest.raises(ValueError, match="unordered categorical"):
        gap_regression(
            gaps,
            meta.assign(capability=pd.Categorical(["l", "h", "l"])),
            covariates=["capability"],
        )
    with pytest.raises(ValueError, match="at least one column"):
        gap_regression(gaps, meta, covariates=[])


# Appendix S, Table 42: system -> (Direct, Puzzled-hard, FN-hard macro nets, % via FN).
TABLE_42 = {
    "DeepSeek-V3.2": (-4.8, -10.2, -5.8, 0.19),
    "Gemini-3-Flash-Preview": (11.4, 8.2, 10.4, 0.33),
    "Ministral-8B-2512": (6.3, -1.4, -1.6, 1.00),
    "Qwen3-VL-8B-Instruct": (-5.0, -16.0, -14.4, 0.85),
    "Llama-3.1-8B-Instruct": (5.0, -2.2, -1.4, 0.88),
    "Grok-4.1-Fast": (7.6, 1.5, 10.1, None),
}


def _macro_table(values: dict[str, tuple]) -> pd.DataFrame:
    rows = []
    for system, (direct, puzzled, formal, _) in values.items():
        for cond, diff, net in (
            ("direct", None, direct),
            ("puzzled", "hard", puzzled),
            ("puzzled", "easy", 99.0),  # another difficulty must be ignored
            ("formal_named", "hard", formal),
        ):
            rows.append(
                {
                    "system": system,
                    "condition": cond,
                    "difficulty": diff,
                    "consequences": True,
                    "net_pp": net,
                }
            )
    return pd.DataFrame(rows)


def test_reproduces_table_42() -> None:
    """Shares from the table's rounded nets are within ±3 pp of the printed %, which the
    paper computed from unrounded nets: Gemini 1.0/3.2 = 31% (printed 33%), Llama
    6.4/7.2 = 89% (printed 88%). Ministral's raw share is 7.9/7.7 = 103%, capped to 100%;
    Grok's D→FN (−2.5 from rounded nets, printed −2.6) opposes its D→P (+6.1): no share."""
    out = formal_named_share(_macro_table(TABLE_42)).set_index("system")
    assert list(out.index) == list(TABLE_42)
    for system, (direct, puzzled, formal, printed) in TABLE_42.items():
        row = out.loc[system]
        assert row["d_to_p_pp"] == pytest.approx(direct - puzzled)
        assert row["d_to_fn_pp"] == pytest.approx(direct - formal)
        if printed is None:
            assert math.isnan(row["share"]) and math.isnan(row["share_capped"])
            assert row["reason"] == "opposite sign"
        else:
            assert row["share_capped"] == pytest.approx(printed, abs=0.03), system
            assert row["reason"] is None
    assert out.loc["Ministral-8B-2512", "share"] == pytest.approx(7.9 / 7.7)
    assert out.loc["Ministral-8B-2512", "share_capped"] == 1.0
    assert out.loc["Gemini-3-Flash-Preview", "share"] == pytest.approx(1.0 / 3.2)


def test_formal_named_share_no_gap_and_errors() -> None:
    table = _macro_table({"S": (2.0, 2.0, 1.0, None), "T": (2.0, 1.0, 2.0, None)})
    out = formal_named_share(table).set_index("system")
    assert out.loc["S", "reason"] == "no gap" and math.isnan(out.loc["S", "share"])
    # D→FN = 0 with a real gap: FormalNamed reproduces none of it.
    assert out.loc["T", "share"] == 0.0 and out.loc["T", "reason"] is None
    with pytest.raises(ValueError, match="needs columns net_pp"):
        formal_named_share(table.drop(columns="net_pp"))
    with pytest.raises(ValueError, match="tol must be"):
        formal_named_share(table, tol=-1)
    with pytest.raises(ValueError, match="several direct/None rows"):
        formal_named_share(pd.concat([table, table.iloc[:1]]))


def _table_38_text() -> tuple[pd.DataFrame, pd.DataFrame]:
    """Table 38 with the alignment tier as plain text, as a runner's metadata gives it."""
    systems = list(TABLE_38)
    gaps = pd.DataFrame({"system": systems, "gap_pp": [v[0] for v in TABLE_38.values()]})
    meta = pd.DataFrame(
        {
            "system": systems,
            "capability": [v[1] for v in TABLE_38.values()],
            "alignment": [v[2] for v in TABLE_38.values()],
        }
    )
    return gaps, meta


def test_text_tier_with_declared_order_matches_lstsq_on_the_coded_tier() -> None:
    """Tiers low / medium / high declared lowest first are coded 1, 2, 3: the estimates
    equal numpy's least squares on [1, capability, code], and R² = 1 − SSE/SST from those
    residuals. Case and spaces of the levels do not matter."""
    gaps, meta = _table_38_text()
    meta.loc[0, "alignment"] = " High"  # a runner's own spelling of "high"
    fit = gap_regression(gaps, meta, order={"alignment": ["low", "medium", "high"]})
    code = {"low": 1.0, "medium": 2.0, "high": 3.0}
    x = np.column_stack([np.ones(14), meta["capability"], [code[v[2]] for v in TABLE_38.values()]])
    y = gaps["gap_pp"].to_numpy()
    beta, *_ = np.linalg.lstsq(x, y, rcond=None)
    np.testing.assert_allclose(fit.coefficients["estimate"], beta, rtol=1e-10)
    resid = y - x @ beta
    assert fit.r2 == pytest.approx(1 - resid @ resid / ((y - y.mean()) @ (y - y.mean())))
    tiers = pd.Categorical(meta["alignment"].str.strip().str.lower(), ["low", "medium", "high"])
    as_ordered = gap_regression(gaps, meta.assign(alignment=tiers.as_ordered()))
    pd.testing.assert_frame_equal(as_ordered.coefficients, fit.coefficients)


def test_text_tier_without_order_says_how_to_declare_one() -> None:
    gaps, meta = _table_38_text()
    with pytest.raises(ValueError) as err:
        gap_regression(gaps, meta)
    msg = str(err.value)
    assert "covariate 'alignment' of metadata must be numeric, but it holds text" in msg
    assert "'high', 'low', 'medium'" in msg and "order={'alignment': [" in msg
    assert "ordered pandas Categorical" in msg
    with pytest.raises(ValueError, match=r"outside its declared order .*: very high"):
        gap_regression(
            gaps,
            meta.assign(alignment=["very high", *meta["alignment"][1:]]),
            order={"alignment": ["low", "medium", "high"]},
        )
    with pytest.raises(ValueError, match="order names size"):
        gap_regression(gaps, meta, order={"size": ["s", "m"]})
    # an unordered categorical with a declared order is accepted
    cat = meta.assign(alignment=pd.Categorical(meta["alignment"]))
    fit = gap_regression(gaps, cat, order={"alignment": ["low", "medium", "high"]})
    assert fit.n == 14


def test_analysis_codes_runner_text_tiers_and_explains_other_text() -> None:
    """What `cuegap analyze` stores: alignment "low" / "medium" / "high" from a runner's
    metadata is regressed as 1, 2, 3 (the same fit as the ordered categorical); any other
    text ends up as the error of gap_regression_fit, saying to give numbers."""
    from cuegap.designs.dilemma._analysis_regression import regression_tables

    gaps, meta = _table_38_text()
    tables = regression_tables(gaps, meta, ("capability", "alignment"))
    tiers = pd.Categorical(meta["alignment"], ["low", "medium", "high"], ordered=True)
    ref = gap_regression(gaps, meta.assign(alignment=tiers))
    pd.testing.assert_frame_equal(tables["gap_regression"], ref.coefficients)
    assert tables["gap_regression_fit"]["error"].iloc[0] is None
    odd = meta.assign(alignment=["tier-a"] * 7 + ["tier-b"] * 7)
    tables = regression_tables(gaps, odd, ("capability", "alignment"))
    assert set(tables) == {"gap_regression_fit"}
    error = tables["gap_regression_fit"]["error"].iloc[0]
    assert "tier-a" in error and "alignment as low = 1, medium = 2, high = 3" in error
    assert "give any other covariate as numbers in the runner's metadata" in error
    assert regression_tables(gaps, meta[["system"]], ("capability",)) == {}


def test_gap_regression_docstring_example_runs() -> None:
    """The text-tier example in gap_regression's docstring (slope −1, intercept 5 by hand)."""
    import doctest

    from cuegap.designs.dilemma.stats import _regression

    result = doctest.testmod(_regression)
    assert result.attempted >= 4 and result.failed == 0
