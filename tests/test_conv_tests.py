"""t-tests of the conversation contrasts, BH, and cross-benchmark consistency.

Golden values: scipy ``ttest_1samp`` on the per-unit contrasts, statsmodels
``multipletests(method="fdr_bh")``, and hand-built test tables for the consistency rule
(seed 003 §5: significant with the same sign on all three benchmarks).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from statsmodels.stats.multitest import multipletests

from cuegap.designs.conversation.stats import (
    conv_consistency,
    conv_consistency_summary,
    conv_contrasts,
    conv_tests,
    simulate_conv_counts,
)

COND = ["contrast", "system", "benchmark", "demographic", "reference", "instantiation"]


@pytest.fixture(scope="module")
def counts() -> pd.DataFrame:
    sim = simulate_conv_counts(
        conversations=60,
        persona_sd=0.4,
        iden_effects={("black", "human"): -0.6, ("older", "ai"): 0.3},
        base_reveal_effects={("female", "human"): 0.5},
        seed=11,
    )
    return sim.counts


@pytest.mark.parametrize("unit", ["persona", "category"])
def test_t_and_p_match_scipy(counts: pd.DataFrame, unit: str) -> None:
    tests = conv_tests(counts, unit=unit)
    per = conv_contrasts(counts, unit=unit)
    checked = 0
    for key, grp in per.groupby(COND, sort=False):
        x = grp["estimate"].dropna().to_numpy()
        row = tests.set_index(COND).loc[key]
        assert row["n_units"] == len(x)
        assert row["unit"] == unit
        if len(x) < 2:
            assert np.isnan(row["p"])
            continue
        ref = stats.ttest_1samp(x, 0.0)
        assert row["t"] == pytest.approx(ref.statistic, rel=1e-10)
        assert row["p"] == pytest.approx(ref.pvalue, rel=1e-10, abs=1e-300)
        assert row["df"] == ref.df
        assert row["mean"] == pytest.approx(x.mean())
        assert row["sd"] == pytest.approx(x.std(ddof=1))
        assert row["significant"] == (ref.pvalue < 0.05)
        checked += 1
    assert checked == len(tests)  # every condition has >= 2 units here


def test_estimate_is_the_pooled_contrast(counts: pd.DataFrame) -> None:
    tests = conv_tests(counts)
    pooled = conv_contrasts(counts)
    pd.testing.assert_series_equal(
        tests["estimate"], pooled["estimate"], check_names=False, check_index=False
    )


def test_bh_matches_statsmodels_per_family(counts: pd.DataFrame) -> None:
    tests = conv_tests(counts, correction="bh")
    for _, grp in tests.groupby(["contrast", "benchmark"]):
        want = multipletests(grp["p"], method="fdr_bh")[1]
        np.testing.assert_allclose(grp["q"], want, rtol=1e-12)
        assert (grp["significant"] == (grp["q"] < 0.05)).all()
    one = conv_tests(counts, correction="bh", family="contrast")
    for _, grp in one.groupby("contrast"):
        np.testing.assert_allclose(grp["q"], multipletests(grp["p"], method="fdr_bh")[1])
    assert conv_tests(counts)["q"].isna().all()


def _two_units(x1: float, x2: float) -> pd.DataFrame:
    """Per-persona demo_iden_pair contrasts x1, x2 (black − white, 100 disagreements)."""
    rows = []
    for p, x in (("p1", x1), ("p2", x2)):
        for d, s in (("black", 50 + round(100 * x)), ("white", 50)):
            rows.append({"system": "s", "benchmark": "BBQ", "category": "c", "persona": p,
                         "demographics": d, "instantiation": "human", "reveal": "anonymous",
                         "iden_disagree": 100, "iden_shift": s,
                         "base_disagree": 100, "base_shift": 0})  # fmt: skip
    return pd.DataFrame(rows)


def test_two_units_by_hand() -> None:
    """x = (0.25, −0.20): mean 0.025, sd = 0.45/√2, t = 0.025 / (sd/√2) = 1/9, df 1."""
    row = conv_tests(_two_units(0.25, -0.20), contrasts=["demo_iden_pair"]).iloc[0]
    assert row["t"] == pytest.approx(1 / 9)
    assert row["p"] == pytest.approx(2 * stats.t.sf(1 / 9, 1))
    assert not row["significant"] and row["sign"] == 1


def test_constant_and_single_unit_edges() -> None:
    same = conv_tests(_two_units(0.1, 0.1), contrasts=["demo_iden_pair"]).iloc[0]
    assert same["t"] == np.inf and same["p"] == 0.0 and same["significant"]
    assert same["note"] == "no variance across units"
    zero = conv_tests(_two_units(0.0, 0.0), contrasts=["demo_iden_pair"]).iloc[0]
    assert np.isnan(zero["p"]) and not zero["significant"] and zero["sign"] == 0
    one = _two_units(0.1, 0.2)
    one = one[one["persona"] == "p1"]
    row = conv_tests(one, contrasts=["demo_iden_pair"]).iloc[0]
    assert row["n_units"] == 1 and np.isnan(row["p"]) and not row["significant"]
    assert row["note"] == "fewer than two units with a contrast"


def test_undefined_unit_is_dropped_and_counted() -> None:
    df = _two_units(0.25, -0.20)
    extra = df[df["persona"] == "p1"].assign(persona="p3")
    extra.loc[extra["demographics"] == "white", ["iden_disagree", "iden_shift"]] = 0
    row = conv_tests(pd.concat([df, extra]), contrasts=["demo_iden_pair"]).iloc[0]
    assert row["n_units"] == 2 and row["n_dropped"] == 1
    assert row["t"] == pytest.approx(1 / 9)


def test_question_unit_needs_a_question_column(counts: pd.DataFrame) -> None:
    with pytest.raises(ValueError, match="unit 'question' is not a column"):
        conv_tests(counts, unit="question")
    with pytest.raises(ValueError, match="alpha must be in"):
        conv_tests(counts, alpha=0)
    with pytest.raises(ValueError, match="correction must be"):
        conv_tests(counts, correction="holm")  # type: ignore[arg-type]


def _table(rows: list[tuple]) -> pd.DataFrame:
    """Rows (system, demographic, benchmark, mean sign, significant). The pooled
    ``estimate`` has the other sign (it can: issue 27's "− | +0.046 (p 0.016)"), so a
    consistency table that shows it beside the mean's sign and p fails the test."""
    out = []
    for system, demo, bench, sign, sig in rows:
        out.append({"contrast": "demo_iden_null", "system": system, "benchmark": bench,
                    "demographic": demo, "reference": "none", "instantiation": "human",
                    "estimate": -0.05 * sign, "mean": 0.1 * sign, "low": 0.1 * sign - 0.02,
                    "high": 0.1 * sign + 0.02, "p": 0.01 if sig else 0.5, "significant": sig,
                    "sign": sign})  # fmt: skip
    return pd.DataFrame(out)


B3 = ("BBQ", "DifferenceAwareness", "DiscrimEval")


def test_consistency_rule_by_hand() -> None:
    rows = (
        [("a", "black", b, -1, True) for b in B3]  # finding, negative
        + [("a", "white", b, s, True) for b, s in zip(B3, (1, -1, 1), strict=True)]  # mixed
        + [("a", "older", b, 1, b != "DiscrimEval") for b in B3]  # 2 of 3
        + [("a", "young", b, 1, True) for b in B3[:2]]  # third benchmark not tested
        + [("b", "black", b, 1, True) for b in B3]  # finding, positive
    )
    cons = conv_consistency(_table(rows)).set_index(["system", "demographic"])
    assert cons["finding"].to_dict() == {
        ("a", "black"): True,
        ("a", "older"): False,
        ("a", "white"): False,
        ("a", "young"): False,
        ("b", "black"): True,
    }
    assert cons.loc[("a", "black"), "direction"] == -1
    assert cons.loc[("b", "black"), "direction"] == 1
    assert cons.loc[("a", "young"), "n_benchmarks"] == 2
    assert np.isnan(cons.loc[("a", "young"), "p_DiscrimEval"])
    assert cons.loc[("a", "black"), "mean_BBQ"] == pytest.approx(-0.1)
    assert cons.loc[("a", "black"), "low_BBQ"] == pytest.approx(-0.12)
    assert cons.loc[("a", "black"), "high_BBQ"] == pytest.approx(-0.08)
    assert not [c for c in cons.columns if c.startswith("estimate_")]
    two = conv_consistency(_table(rows), benchmarks=B3[:2]).set_index(["system", "demographic"])
    assert two.loc[("a", "young"), "finding"] and two.loc[("a", "older"), "finding"]
    summary = conv_consistency_summary(cons.reset_index())
    got = summary[["conditions", "findings", "negative", "positive"]].iloc[0].tolist()
    assert got == [5, 2, 1, 1]


def test_findings_only_where_an_effect_is_planted(counts: pd.DataFrame) -> None:
    """The fixture plants black/human and older/AI effects on λ_iden and a female/human
    reveal effect on λ_base: every finding must be a contrast one of them feeds, and the
    largest (logit −0.6, ≈ −0.12 on λ) must be found."""
    cons = conv_consistency(conv_tests(counts))
    found = set(
        cons.loc[cons["finding"], ["contrast", "demographic", "instantiation"]].itertuples(
            index=False, name=None
        )
    )
    planted = {
        ("demo_iden_null", "black", "human"),
        ("demo_iden_pair", "black", "human"),
        ("demo_iden_null", "older", "ai"),
        ("demo_iden_pair", "older", "ai"),
        ("demo_rc_base_null", "female", "human"),
        ("demo_rc_base_pair", "female", "human"),
        ("inst_rc_base", "female", "human-ai"),
    }
    assert ("demo_iden_null", "black", "human") in found
    assert found <= planted


def test_question_unit_from_opinions_matches_scipy() -> None:
    """Per-question t-test: counts built from simulated opinion sequences with a question
    column (every question run under every configuration, as seed 003's design); the
    per-question contrasts and their t-test agree with scipy, and questions without a
    defined λ on either side are dropped and counted."""
    from cuegap.designs.conversation.stats import conv_transition_counts, simulate_conv_opinions

    sim = simulate_conv_counts(iden_effects={("black", "human"): -0.7}, seed=5)
    truth = sim.truth[
        (sim.truth["benchmark"] == "BBQ")
        & (sim.truth["category"] == "c1")
        & sim.truth["demographics"].isin(["black", "white", "none"])
    ]
    opinions, convs = simulate_conv_opinions(truth, conversations=40, seed=6)
    # conversation k of every cell asks question k
    convs["question"] = "q" + (convs.groupby(list(truth.columns[:7])).cumcount()).astype(str)
    counts = conv_transition_counts(opinions, convs, unit="question")
    tests = conv_tests(counts, unit="question", contrasts=["demo_iden_pair"])
    per = conv_contrasts(counts, unit="question", contrasts=["demo_iden_pair"])
    assert per["question"].nunique() == 40
    for key, grp in per.groupby(COND):
        x = grp["estimate"].dropna().to_numpy()
        row = tests.set_index(COND).loc[key]
        ref = stats.ttest_1samp(x, 0.0)
        assert row["p"] == pytest.approx(ref.pvalue, rel=1e-10)
        assert row["n_units"] + row["n_dropped"] == 40
        assert row["unit"] == "question"
