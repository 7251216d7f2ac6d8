"""The prompt-variance variance-components model (fit_pv_bayes, pv_bayes_tables).

Planted truth: ``simulate_pv_counts`` draws per (system, category) one effect per choice
format, per field order and per cell, and each run's s_DiffAware is a binomial proportion
with known variance (``truth.sampling_var``). The planted finite-population shares are
computed here from the truth table alone (two-way decomposition of the true combination
means, by hand), never from the model's code.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from cuegap.designs.prompt_variance.stats import (
    fit_pv_bayes,
    pv_bayes_tables,
    pv_components,
    pv_scores,
    simulate_pv_counts,
)
from cuegap.designs.prompt_variance.stats._bayes_model import (
    PVBayesData,
    prepare_pv_bayes,
    pv_bayes_draws,
)

F = ["fmt", "ord"]
LEVELS = {"fmt": ["f1", "f2", "f3", "f4"], "ord": ["o1", "o2"]}
COMPONENTS = ["fmt", "ord", "fmt:ord", "residual"]


def planted_shares(truth: pd.DataFrame) -> pd.DataFrame:
    """Per (system, category): V_A, V_B, V_AB of the true combination means (balanced
    two-way decomposition) and V_E = mean sampling variance, as shares of their sum."""
    rows = []
    for (system, category), t in truth.groupby(["system", "category"]):
        theta = t.pivot(index="fmt", columns="ord", values="true_score").to_numpy()
        mu = theta.mean()
        ra, cb = theta.mean(axis=1) - mu, theta.mean(axis=0) - mu
        ab = theta - mu - ra[:, None] - cb[None, :]
        v = np.array([np.mean(ra**2), np.mean(cb**2), np.mean(ab**2), t["sampling_var"].mean()])
        for name, share in zip(COMPONENTS, v / v.sum(), strict=True):
            rows.append({"system": system, "category": category, "component": name,
                         "planted": share})  # fmt: skip
    return pd.DataFrame(rows)


def _audit(seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    sim = simulate_pv_counts(
        systems=("s1", "s2", "s3"), categories=("c1", "c2"), factors=LEVELS, replicates=3,
        n_questions=200, format_sd=0.08, field_sd=0.04, interaction_sd=0.03, seed=seed,
    )  # fmt: skip
    scores = pv_scores(sim.counts, factors=F)
    scores = scores[scores["metric"] == "s_diffaware"]
    return scores, sim.truth[sim.truth["metric"] == "s_diffaware"]


@pytest.fixture(scope="session")
def planted_fits() -> list[tuple[pd.DataFrame, pd.DataFrame, object]]:
    """Three simulated audits, each fitted for real with nutpie (2 chains x 300 draws; the
    compiled model is reused across audits of the same shape)."""
    out = []
    for seed in (11, 12, 13):
        scores, truth = _audit(seed)
        fit = fit_pv_bayes(scores, factors=F, draws=300, tune=300, chains=2, seed=seed,
                           min_ess=100, max_rhat=1.05)  # fmt: skip
        out.append((planted_shares(truth), pv_bayes_tables(fit), fit))
    return out


def test_planted_shares_are_covered_at_about_the_nominal_rate(planted_fits) -> None:
    covered, widths = [], []
    for planted, tables, _ in planted_fits:
        got = tables["pv_bayes_components"].merge(planted, on=["system", "category", "component"])
        assert len(got) == 3 * 2 * 4
        covered += list(
            (got["share_low"] <= got["planted"]) & (got["planted"] <= got["share_high"])
        )
        widths += list(got["share_high"] - got["share_low"])
    # 72 intervals of nominal 90 %: fewer than 75 % covered has probability < 0.001 when
    # calibrated (binomial), and an interval spanning most of [0, 1] says nothing.
    assert np.mean(covered) >= 0.75, np.mean(covered)
    assert np.median(widths) < 0.45, np.median(widths)


def test_real_fits_pass_a_relaxed_gate_with_nutpie(planted_fits) -> None:
    for _, _, fit in planted_fits:
        d = fit.diagnostics
        assert (d["sampler"] == "nutpie").all() and list(d["metric"].unique()) == ["s_diffaware"]
        assert fit.converged, d.to_dict("records")


def test_tables_have_every_cell_component_and_ordered_intervals(planted_fits) -> None:
    _, tables, _ = planted_fits[0]
    comp, spread = tables["pv_bayes_components"], tables["pv_bayes_spread"]
    assert set(comp["component"]) == set(COMPONENTS)
    sums = comp.groupby(["system", "category"])["share"].sum()
    assert np.allclose(sums, 1.0)  # posterior means of shares that sum to 1 in every draw
    assert (comp["share_low"] <= comp["share"]).all() and (
        comp["share"] <= comp["share_high"]
    ).all()
    assert len(spread) == 6 and (spread["sd_format_low"] <= spread["sd_format_high"]).all()
    # planted format SD 0.08: the spread of the true s_DiffAware over 8 combinations
    assert spread["sd_format"].between(0.02, 0.2).all()


def test_sufficient_statistics_by_hand() -> None:
    """One factor; cell a balanced (x: 0.1, 0.3; y: 0.5, 0.7), cell b not (y: 0.5, 0.5,
    0.8). Means 0.2 / 0.6 in both, grand mean 0.4. a: r = 2, SS_A = 2 (0.2² + 0.2²) =
    0.16, SS_E = 0.02 + 0.02. b: r = 2 / (1/2 + 1/3) = 2.4, SS_A = 2.4 · 0.08 = 0.192,
    SS_E = 0.02 + 0.06 on 1 + 2 degrees of freedom."""
    df = pd.DataFrame({
        "system": ["a"] * 4 + ["b"] * 5, "metric": "m",
        "fmt": ["x", "x", "y", "y", "x", "x", "y", "y", "y"], "ord": "p",
        "replicate": [0, 1, 0, 1, 0, 1, 0, 1, 2],
        "score": [0.1, 0.3, 0.5, 0.7, 0.1, 0.3, 0.5, 0.5, 0.8],
    })  # fmt: skip
    d = prepare_pv_bayes(df, keys=["system"], factors=["fmt"])
    assert d.levels == [["x", "y"]] and d.components == ("A", "E")
    assert np.allclose(d.r, [2.0, 2.4]) and np.allclose(d.grand_mean, [0.4, 0.4])
    assert np.allclose(d.ss, [[0.16, 0.192], [0.04, 0.08]])
    assert np.allclose(d.dof, [[1, 1], [2, 3]])
    assert d.pooled == (True, True)  # 1 and 2.5 degrees of freedom per cell: pooled
    with pytest.raises(ValueError, match="factor 'ord' has 1 level"):
        prepare_pv_bayes(df, keys=["system"], factors=F)
    with pytest.raises(ValueError, match="has scores for 1 of the 2 factor combinations"):
        lacks = df[(df["system"] == "a") | (df["fmt"] == "y")]
        prepare_pv_bayes(lacks, keys=["system"], factors=["fmt"])


def test_two_way_sums_of_squares_match_the_classical_decomposition() -> None:
    """Balanced two-way cells: the model's SS are pv_components' (balanced formulas)."""
    scores, _ = _audit(3)
    d = prepare_pv_bayes(scores, keys=["system", "category"], factors=F)
    ref = pv_components(scores, factors=F).pivot_table(
        index=["system", "category"], columns="component", values="ss"
    )
    assert np.allclose(d.ss.T, ref[COMPONENTS].to_numpy())
    assert d.pooled == (True, True, True, False)  # dof per cell 3, 1, 3 (< 5) and 16


def test_derived_shares_by_hand() -> None:
    """With σ_E → 0 the conditional draws are the observed contrasts: V_k = SS_k / (r a b).
    2 × 2 levels, r = 2: SS = 0.36, 0.04, 0.16 → V = 0.045, 0.005, 0.02 (and V_E ≈ 0).
    With σ_A → 0 instead, the format contrast is shrunk away: V_A ≈ 0."""
    d = PVBayesData(cells=pd.DataFrame({"system": ["a"]}), factors=F,
                    levels=[["x", "y"], ["p", "q"]], r=np.array([2.0]),
                    ss=np.array([[0.36], [0.04], [0.16], [0.1]]),
                    dof=np.array([[1.0], [1.0], [1.0], [4.0]]),
                    grand_mean=np.array([0.0]))  # fmt: skip
    sd = np.array([1.0, 1.0, 1.0, 1e-6]).reshape(1, 1, 4, 1)
    out = pv_bayes_draws({"sd": sd}, d)
    assert np.allclose(out["var"].ravel()[:3], [0.045, 0.005, 0.02], rtol=1e-4)
    assert np.allclose(out["share"].ravel(), np.array([0.045, 0.005, 0.02, 0]) / 0.07, atol=1e-4)
    assert np.allclose(out["sd_format"].ravel(), np.sqrt(0.07), rtol=1e-4)
    assert np.allclose(out["sd_format_new"].ravel(), np.sqrt(3.0))
    tiny_a = np.array([1e-6, 1e-3, 1e-3, 1.0]).reshape(1, 1, 4, 1)
    assert pv_bayes_draws({"sd": tiny_a}, d)["var"].ravel()[0] < 1e-5


def test_bad_arguments_are_named() -> None:
    scores, _ = _audit(1)
    with pytest.raises(ValueError, match="sampler must be one of nutpie, jax, pymc, but got"):
        fit_pv_bayes(scores, factors=F, sampler="advi")
    with pytest.raises(ValueError, match="model_by 'metric' must be one of the keys"):
        fit_pv_bayes(scores, factors=F, by=["system", "category"])
    with pytest.raises(ValueError, match="one or two factors"):
        fit_pv_bayes(scores.assign(x="1"), factors=[*F, "x"])


def test_validation_summary_counts_by_hand() -> None:
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parent.parent / "benchmarks"))
    from validate_pv_bayes import summarise

    rows = [  # audit 1 passed: fmt covered, residual missed; audit 2 failed: fmt covered
        dict(seed=1, component="choice_format", planted=0.5, share=0.6, share_low=0.4,
             share_high=0.7, freq=0.8, passed=True, attempts=1, seconds=2.0),
        dict(seed=1, component="residual", planted=0.5, share=0.3, share_low=0.2,
             share_high=0.4, freq=0.5, passed=True, attempts=1, seconds=2.0),
        dict(seed=2, component="choice_format", planted=0.1, share=0.1, share_low=0.0,
             share_high=0.2, freq=0.1, passed=False, attempts=2, seconds=4.0),
    ]  # fmt: skip
    out = summarise(pd.DataFrame(rows))
    assert "2 audits; gate passed in 0.500 ± 0.354 (n=2); retried 1" in out
    assert "median 3.0" in out
    fmt = next(line for line in out.splitlines() if line.startswith("choice_format"))
    # passed fits: 1 of 1 covered; all: 2 of 2; RMSE bayes √(0.01 / 2), classical √(0.09 / 2)
    assert "1.000 ± 0.000 (n=1)" in fmt and "1.000 ± 0.000 (n=2)" in fmt
    assert fmt.split()[-2:] == [f"{np.sqrt(0.005):.4f}", f"{np.sqrt(0.045):.4f}"]
    assert "0.667 ± 0.272 (n=3)" in out  # all shares, all fits: 2 of 3
