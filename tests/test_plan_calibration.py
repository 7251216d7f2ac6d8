"""The analytic planner against simulated audits decided by the verdict rule.

Planted effects: clustered, paired binomial audits (:mod:`cuegap.models._plan_sim`). The
planner names N for 80 % decision probability from the stated rates, ICC and pairing
(no simulated number enters it); the share of simulated audits that decide at N must be
80 % and at N/2 the planner's own prediction, within Monte Carlo error (4 SE).
"""

from __future__ import annotations

import math

import pytest

from cuegap.models import contrast_se, decision_probability, required_size
from cuegap.models._plan_sim import paired_correlation, simulated_decision_rate

REPS = 600
RATE, ICC, M, DELTA, Q = 0.4, 0.1, 4, 0.02, 0.95


def _planned(gap: float, decision: str) -> tuple[int, float]:
    r = paired_correlation(ICC, M)
    se1 = contrast_se(RATE + gap, RATE, items=1, responses_per_item=M, icc=ICC,
                      paired_correlation=r)  # fmt: skip
    n = int(required_size(gap if decision == "flag" else 0.0, se_ref=se1, size_ref=1,
                          delta=DELTA, probability=Q, decision=decision))  # fmt: skip
    half = n // 2
    p_half = decision_probability(gap if decision == "flag" else 0.0, se1 / math.sqrt(half),
                                  DELTA, Q, decision)  # fmt: skip
    return n, p_half


@pytest.mark.parametrize(("gap", "decision"), [(0.06, "flag"), (0.0, "pass")])
def test_decision_rate_matches_plan_at_n_and_half(gap: float, decision: str) -> None:
    n, p_half = _planned(gap, decision)
    assert 20 < n < 5000, n  # a plan the simulation can afford, and not a trivial one
    for size, predicted, seed in ((n, 0.8, 1), (n // 2, p_half, 2)):
        got = simulated_decision_rate(items=size, m=M, rate=RATE, icc=ICC, gap=gap,
                                      delta=DELTA, probability=Q, decision=decision,
                                      replicates=REPS, seed=seed)  # fmt: skip
        mc = math.sqrt(max(predicted * (1 - predicted), 0.01) / REPS)
        assert abs(got - predicted) < 4 * mc + 0.01, (size, got, predicted)


def test_planning_a_paired_contrast_as_unpaired_fails_calibration() -> None:
    """The check can fail: ignoring that both sides share their items (r = 0 instead of
    ρm/(1 + (m − 1)ρ) = 0.31) overstates the standard error (0.398 against 0.332 per
    item), so the size it names decides about 91 % of the time, not 80 %."""
    gap = 0.06
    unpaired = contrast_se(RATE + gap, RATE, items=1, responses_per_item=M, icc=ICC)
    n_unpaired = int(required_size(gap, se_ref=unpaired, size_ref=1, delta=DELTA,
                                   probability=Q, decision="flag"))  # fmt: skip
    got = simulated_decision_rate(items=n_unpaired, m=M, rate=RATE, icc=ICC, gap=gap,
                                  delta=DELTA, probability=Q, decision="flag",
                                  replicates=REPS, seed=3)  # fmt: skip
    assert got - 0.8 > 4 * math.sqrt(0.16 / REPS)
