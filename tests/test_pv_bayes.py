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

from cuegap.models import fit_pv_bayes, pv_bayes_tables, pv_scores, simulate_pv_counts
from cuegap.models._pv_bayes_model import prepare_pv_bayes, pv_bayes_draws

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
    df = pd.DataFrame({
        "system": ["a"] * 6, "metric": "m", "fmt": ["x", "x", "y", "y", "y", "x"],
        "ord": ["p"] * 6, "replicate": [0, 1, 0, 1, 2, 2],
        "score": [0.1, 0.3, 0.5, 0.5, 0.8, np.nan],
    })  # fmt: skip
    d = prepare_pv_bayes(df, keys=["system"], factors=["fmt"])
    assert d.levels == [["x", "y"]] and d.components == ("A", "E")
    assert np.allclose(d.mean, [0.2, 0.6]) and np.allclose(d.n, [2, 3])
    # SS within: (0.1-0.2)² + (0.3-0.2)² + (0.5-0.6)²·2 + (0.8-0.6)² = 0.02 + 0.06
    assert np.allclose(d.ss, [0.08]) and np.allclose(d.df, [3])
    with pytest.raises(ValueError, match="factor 'ord' has 1 level"):
        prepare_pv_bayes(df, keys=["system"], factors=F)


def test_derived_shares_by_hand() -> None:
    """One draw, one cell: α = (0.3, −0.3) → V_A = 0.09; β = (0.1, −0.1) → 0.01;
    γ = ±0.2 → 0.04; σ_E = 0.4 → 0.16; total 0.30."""
    d = prepare_pv_bayes(
        pd.DataFrame({"system": "a", "fmt": ["x", "y"] * 2, "ord": ["p", "p", "q", "q"],
                      "replicate": 0, "score": [0.1, 0.2, 0.3, 0.4]}),
        keys=["system"], factors=F,
    )  # fmt: skip
    post = {
        "sd": np.array([0.3, 0.1, 0.2, 0.4]).reshape(1, 1, 4, 1),
        "alpha": np.array([0.3, -0.3]).reshape(1, 1, 1, 2),
        "beta": np.array([0.1, -0.1]).reshape(1, 1, 1, 2),
        "gamma": np.array([[0.2, -0.2], [-0.2, 0.2]]).reshape(1, 1, 1, 2, 2),
    }
    out = pv_bayes_draws(post, d)
    assert np.allclose(out["share"].ravel(), np.array([0.09, 0.01, 0.04, 0.16]) / 0.30)
    assert np.allclose(out["sd_format"].ravel(), np.sqrt(0.14))
    assert np.allclose(out["sd_format_new"].ravel(), np.sqrt(0.09 + 0.01 + 0.04))


def test_bad_arguments_are_named() -> None:
    scores, _ = _audit(1)
    with pytest.raises(ValueError, match="sampler must be 'nutpie' or 'pymc'"):
        fit_pv_bayes(scores, factors=F, sampler="advi")
    with pytest.raises(ValueError, match="model_by 'metric' must be one of the keys"):
        fit_pv_bayes(scores, factors=F, by=["system", "category"])
    with pytest.raises(ValueError, match="one or two factors"):
        fit_pv_bayes(scores.assign(x="1"), factors=[*F, "x"])
