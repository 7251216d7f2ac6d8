"""The planning engine (cuegap.models._plan, _plan_table): hand-computed values.

Every expected number below is computed by hand in the test's docstring or comment from
the formula it checks (normal quantiles from a standard table: z_0.95 = 1.6449,
z_0.80 = 0.8416, Φ(1.3551) = 0.9123).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from cuegap.models._plan import (
    contrast_se,
    decision_probability,
    design_effect,
    icc_anova,
    min_detectable_gap,
    pass_bound,
    required_size,
    se_at,
)
from cuegap.models._plan_table import PlanInput, answer_line, plan_table


def test_design_effect_equal_clusters() -> None:
    """m = 10, ρ = 0.1: 1 + 9 × 0.1 = 1.9; ρ = 0 gives 1 whatever m."""
    assert design_effect(10, 0.1) == pytest.approx(1.9)
    assert design_effect([10, 10, 10], 0.1) == pytest.approx(1.9)
    assert design_effect(50, 0.0) == 1.0


def test_design_effect_unequal_clusters() -> None:
    """Sizes 5 and 15: m_w = (25 + 225)/20 = 12.5, so 1 + 11.5 × 0.1 = 2.15 (more than
    the 1.9 of the equal mean size 10)."""
    assert design_effect([5, 15], 0.1) == pytest.approx(2.15)


def test_design_effect_refuses_bad_values() -> None:
    with pytest.raises(ValueError, match="icc"):
        design_effect(5, 1.5)
    with pytest.raises(ValueError, match="cluster_sizes"):
        design_effect([0, 3], 0.1)


def test_icc_anova_hand_computed() -> None:
    """Four items of four responses, events 4, 2, 2, 0: p̄ = 0.5,
    MSB = 4(0.25 + 0 + 0 + 0.25)/3 = 2/3, MSW = (0 + 1 + 1 + 0)/12 = 1/6, m0 = 4,
    ρ = (2/3 − 1/6)/(2/3 + 3/6) = 0.5/(7/6) = 3/7."""
    assert icc_anova([4, 2, 2, 0], [4, 4, 4, 4]) == pytest.approx(3 / 7)
    # all between-item: ρ = 1
    assert icc_anova([2, 0], [2, 2]) == pytest.approx(1.0)
    assert math.isnan(icc_anova([1], [2]))


def test_icc_anova_recovers_planted_correlation() -> None:
    """Beta-binomial items with a + b = 9 have ρ = 1/(a + b + 1) = 0.1."""
    rng = np.random.default_rng(1)
    p = rng.beta(2.7, 6.3, size=4000)
    y = rng.binomial(8, p)
    assert icc_anova(y, np.full(4000, 8)) == pytest.approx(0.1, abs=0.015)


def test_contrast_se_paired_against_unpaired() -> None:
    """p = 0.5 on both sides, 100 items of one response: v = 0.25/100 = 0.0025 per side.
    Unpaired: √0.005 = 0.07071; paired with r = 0.6: √(0.005 − 2·0.6·0.0025) = √0.002 =
    0.04472. With 4 responses per item and ρ = 0.2: DEFF = 1.6, v = 0.25·1.6/400 = 0.001,
    unpaired √0.002."""
    assert contrast_se(0.5, 0.5, items=100) == pytest.approx(0.0707107, rel=1e-5)
    assert contrast_se(0.5, 0.5, items=100, paired_correlation=0.6) == pytest.approx(
        0.0447214, rel=1e-5
    )
    got = contrast_se(0.5, 0.5, items=100, responses_per_item=4, icc=0.2)
    assert got == pytest.approx(math.sqrt(0.002), rel=1e-9)


def test_se_scales_with_the_root_of_size() -> None:
    assert se_at(400, 3.0, 100) == pytest.approx(1.5)


def test_flag_probability_hand_computed() -> None:
    """g = 5, δ = 2, s = 1, q = 0.95: P = 1 − Φ(1.6449 − 3) = Φ(1.3551) = 0.9123."""
    assert decision_probability(5, 1, 2, 0.95, "flag") == pytest.approx(0.9123, abs=1e-4)
    # at g = δ + z_q s the rule flags half the time
    assert decision_probability(2 + 1.6449, 1, 2, 0.95, "flag") == pytest.approx(0.5, abs=1e-4)


def test_pass_bound_and_probability() -> None:
    """δ = 2, s = 1, q = 0.95: c solves Φ(2 − c) − Φ(−2 − c) = 0.95. From a table,
    c = 0.2038: Φ(1.7962) = 0.96377, Φ(−2.2038) = 0.01377, difference 0.9500. At g = 0,
    P(pass) = 2Φ(0.2038) − 1 = 2 × 0.58074 − 1 = 0.1615. With s = 1.25,
    2Φ(1.6) − 1 = 0.8904 < 0.95: no pass is possible."""
    c = pass_bound(1.0, 2.0, 0.95)
    assert c == pytest.approx(0.2038, abs=2e-4)
    assert decision_probability(0, 1, 2, 0.95, "pass") == pytest.approx(0.1615, abs=3e-4)
    assert math.isnan(pass_bound(1.25, 2.0, 0.95))
    assert decision_probability(0, 1.25, 2, 0.95, "pass") == 0.0


def test_required_size_flag_closed_form() -> None:
    """s = 3 at n = 100, g = 4, δ = 2, q = 0.95, target 0.8: need (g − δ)/s_n ≥ 2.4865,
    s_n ≤ 0.80434, n ≥ 100 (3/0.80434)² = 1391.1, so 1392."""
    n = required_size(4, se_ref=3, size_ref=100, delta=2, probability=0.95, decision="flag")
    assert n == 1392
    # a gap at δ can never be flagged with 80%
    assert math.isnan(
        required_size(2, se_ref=3, size_ref=100, delta=2, probability=0.95, decision="flag")
    )


def test_required_size_pass_reaches_target() -> None:
    """The answer is the first size whose pass probability (g = 0) is at least 0.8."""
    kw = dict(se_ref=5.0, size_ref=20, delta=2, probability=0.95, decision="pass")
    n = required_size(0, **kw)
    assert decision_probability(0, se_at(n, 5.0, 20), 2, 0.95, "pass") >= 0.8
    assert decision_probability(0, se_at(n - 1, 5.0, 20), 2, 0.95, "pass") < 0.8
    # the policy's floor wins when it is larger
    assert required_size(0, **kw, min_size=10 * n) == 10 * n


def test_min_detectable_gap() -> None:
    """δ + (1.6449 + 0.8416) s = 2 + 2.4865 × 2 = 6.973."""
    assert min_detectable_gap(2.0, 2.0, 0.95) == pytest.approx(6.973, abs=1e-3)


def test_plan_table_and_answer_line() -> None:
    inp = PlanInput(
        system="sys-a",
        design="dilemma",
        contrast="direct vs puzzled-hard",
        gap=4.0,
        se=3.0,
        current_size=100,
        size_unit="dilemmas per condition",
        delta=2.0,
        probability=0.95,
        scale="pp",
    )
    table = plan_table([inp], max_factor=100)
    flag = table[table["decision"] == "flag"].iloc[0]
    assert flag["required_size"] == 1392
    # 1 − Φ(1.6449 − 2/3) = Φ(−0.9782) = 0.1640
    assert flag["p_decide"] == pytest.approx(0.1640, abs=2e-4)
    line = answer_line(flag)
    assert line == (
        "to flag sys-a at δ = 2 pp with 80% probability: about 1,400 dilemmas per "
        "condition; the audit has 100"
    )
    small = plan_table([inp], max_factor=2)
    small_flag = small[small["decision"] == "flag"].iloc[0]
    assert math.isnan(small_flag["required_size"])
    assert "not reachable" in answer_line(small_flag)


def test_a_planner_that_simulates_is_searched_in_its_steps() -> None:
    """A design's own ``decide`` (here a step at 70 units, hand-made): the required size is
    the first multiple of ``size_step`` at or above 70 from ``min_size``, NaN when the
    largest realistic size (max_factor × current) stays below it; P now is decide's."""
    from cuegap.models import PlanInput, plan_table

    def decide(size: float, decision: str) -> float:
        return 0.9 if size >= 70 else 0.1

    def table(step: float, max_factor: float) -> object:
        inp = PlanInput(system="s", design="d", contrast="c", gap=1.0, se=float("nan"),
                        current_size=12.0, size_unit="runs", delta=0.5, probability=0.95,
                        min_size=6.0, decide=decide, size_step=step, mde=0.7)  # fmt: skip
        return plan_table([inp], max_factor=max_factor).set_index("decision")["required_size"]

    assert table(1.0, 100.0)["flag"] == 70
    assert table(6.0, 100.0)["flag"] == 72
    assert table(6.0, 6.0)["flag"] == 72  # the cap itself (72) reaches it
    assert math.isnan(table(6.0, 5.0)["flag"])
