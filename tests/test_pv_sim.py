"""Planted truth: the simulator's known effects are recovered by the prompt-variance
statistics.

Expected η² from the truth table. With true combination means μ_c, r replicates, k
combinations, N = k r runs and exact per-run sampling variances σ²_c (s_diffaware is a
binomial proportion, so σ²_c = p_c (1 − p_c) / n):

  E[SS_between] = r Σ_c (μ_c − μ̄)² + (1 − 1/k) Σ_c σ²_c
  E[SS_total]   = r Σ_c (μ_c − μ̄)² + r (1 − 1/N) Σ_c σ²_c

and the planted η² is their ratio. Its sampling SD at 22 × 5 runs is about 0.05 (measured
over 60 simulated pairs while writing this test), hence the tolerances below.

Expected two-way shares likewise: E[SS_A] = b r Σ_i (μ_i· − μ̄)² + (a − 1) σ̄²,
E[SS_B] = a r Σ_j (μ_·j − μ̄)² + (b − 1) σ̄², E[SS_AB] = r Σ (interaction)² +
(a − 1)(b − 1) σ̄², E[SS_residual] = a b (r − 1) σ̄² (σ̄² the mean sampling variance).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from cuegap.designs.prompt_variance.stats import (
    pv_anova,
    pv_components,
    pv_format_sensitivity,
    pv_format_spread,
    pv_scores,
    simulate_pv_counts,
)

F = ["choice_format", "field_order"]


def _expected_eta2(truth: pd.DataFrame, r: int) -> pd.Series:
    def one(g: pd.DataFrame) -> float:
        k, n = len(g), len(g) * r
        ss_mu = ((g["true_score"] - g["true_score"].mean()) ** 2).sum()
        sv = g["sampling_var"].sum()
        return (r * ss_mu + (1 - 1 / k) * sv) / (r * ss_mu + r * (1 - 1 / n) * sv)

    da = truth[truth["metric"] == "s_diffaware"]
    return da.groupby(["system", "category"]).apply(one, include_groups=False)


@pytest.mark.parametrize(("format_sd", "field_sd"), [(0.06, 0.03), (0.0, 0.0), (0.15, 0.0)])
def test_eta2_recovered(format_sd: float, field_sd: float) -> None:
    errors, values = [], []
    for seed in range(6):
        sim = simulate_pv_counts(
            systems=("a", "b", "c"),
            categories=("x", "y"),
            format_sd=format_sd,
            field_sd=field_sd,
            seed=seed,
        )
        anova = pv_anova(pv_scores(sim.counts, factors=F), factors=F)
        got = anova[anova["metric"] == "s_diffaware"].set_index(["system", "category"])["eta2"]
        expected = _expected_eta2(sim.truth, r=5)
        errors.append((got - expected.reindex(got.index)).to_numpy())
        values.append(got.to_numpy())
    err = np.concatenate(errors)
    assert len(err) == 36
    assert abs(err.mean()) < 0.03  # 36 pairs: SE of the mean ≈ 0.05 / 6
    assert np.abs(err).max() < 0.2  # 4 sampling SDs
    if format_sd == 0:
        # No planted effect: η² is only noise, (k − 1)/(N − 1) = 21/109 in expectation.
        assert np.concatenate(values).mean() == pytest.approx(21 / 109, abs=0.03)


def test_components_recovered() -> None:
    rows = []
    for seed in range(5):
        sim = simulate_pv_counts(
            systems=("a", "b", "c"),
            categories=("x", "y"),
            format_sd=0.06,
            field_sd=0.04,
            interaction_sd=0.02,
            seed=seed,
        )
        scores = pv_scores(sim.counts, factors=F)
        comp = pv_components(scores[scores["metric"] == "s_diffaware"], factors=F)
        comp = comp.set_index(["system", "category", "component"])["share"]
        truth = sim.truth[sim.truth["metric"] == "s_diffaware"]
        for (s, c), g in truth.groupby(["system", "category"]):
            r, a, b = 5, 11, 2
            mu, sv = g["true_score"].mean(), g["sampling_var"].mean()
            ma = g.groupby("choice_format")["true_score"].mean()
            mb = g.groupby("field_order")["true_score"].mean()
            inter = (
                g["true_score"].to_numpy()
                - ma.loc[g["choice_format"]].to_numpy()
                - mb.loc[g["field_order"]].to_numpy()
                + mu
            )
            e = {
                "choice_format": b * r * ((ma - mu) ** 2).sum() + (a - 1) * sv,
                "field_order": a * r * ((mb - mu) ** 2).sum() + (b - 1) * sv,
                "choice_format:field_order": r * (inter**2).sum() + (a - 1) * (b - 1) * sv,
                "residual": a * b * (r - 1) * sv,
            }
            total = sum(e.values())
            rows += [(k, comp[s, c, k] - v / total) for k, v in e.items()]
    err = pd.DataFrame(rows, columns=["component", "err"]).groupby("component")["err"]
    assert (err.mean().abs() < 0.03).all()
    assert (err.apply(lambda x: x.abs().max()) < 0.2).all()


def test_format_sensitivity_planted() -> None:
    """Two systems per audit: 'steady' has a cue gap of 0.12 in every format; 'fickle' has
    a gap of 0.02 plus a per-format part of SD 0.10, so its sign depends on the format.
    Over 50 audits, steady is flagged in at most 10 % and fickle in at least 90 %."""
    flags = {"steady": [], "fickle": []}
    for seed in range(50):
        sim = simulate_pv_counts(
            systems=("steady", "fickle"),
            categories=("age",),
            conditions=("explicit", "implicit"),
            condition_gap={"steady": 0.12, "fickle": 0.02},
            condition_format_sd={"steady": 0.0, "fickle": 0.10},
            seed=1000 + seed,
        )
        scores = pv_scores(sim.counts, factors=F, keys=("system", "category", "condition"))
        scores = scores[scores["metric"] == "s_bbq_dis"]
        runs = scores.pivot_table(
            index=["system", "category", "metric", *F, "replicate"],
            columns="condition",
            values="score",
        ).reset_index()
        runs["gap"] = runs["implicit"] - runs["explicit"]
        spread = pv_format_spread(runs, factors=F, value="gap")
        gaps = spread[["system", "category", "metric", "grand_mean", "se_sampling"]].rename(
            columns={"grand_mean": "gap", "se_sampling": "se"}
        )
        out = pv_format_sensitivity(gaps, spread).set_index("system")["format_sensitive"]
        for name in flags:
            flags[name].append(bool(out[name]))
    assert np.mean(flags["steady"]) <= 0.10
    assert np.mean(flags["fickle"]) >= 0.90


def test_simulator_truth_and_shape() -> None:
    sim = simulate_pv_counts(systems=("a",), categories=("x",), replicates=3, n_questions=40)
    assert len(sim.counts) == 11 * 2 * 3
    halves = sim.counts[["dis_biased", "dis_anti", "dis_unknown"]].sum(axis=1)
    assert (halves == 20).all() and ((sim.counts["eq_group"] + sim.counts["eq_equal"]) == 20).all()
    assert set(sim.truth["metric"]) == {"s_bbq_dis", "s_bbq_amb", "s_diffaware", "s_ctxtaware"}
    again = simulate_pv_counts(systems=("a",), categories=("x",), replicates=3, n_questions=40)
    pd.testing.assert_frame_equal(sim.counts, again.counts)
    with pytest.raises(ValueError, match="one or two factors"):
        simulate_pv_counts(factors={"a": ["x"], "b": ["y"], "c": ["z"]})
