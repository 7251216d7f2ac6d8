"""The conversation design's hierarchical model: array layout and derived contrasts by
hand (no sampling), and one real nutpie fit to a small planted audit.

The derived-contrast check feeds the λ's of ``test_conv_contrasts``'s hand fixture in as
a one-draw posterior, so the Bayesian contrasts must equal the same hand values: both
paths share seed 003's definitions.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from scipy.special import expit, logit

from cuegap.designs.conversation.stats import conv_design, simulate_conv_counts
from cuegap.designs.conversation.stats._bayes import conv_bayes_tables, fit_conv_bayes
from cuegap.designs.conversation.stats._bayes_model import (
    conv_contrast_draws,
    conv_lambda_draws,
    prepare_conv_counts,
)
from tests.test_conv_contrasts import BASE, EXPECTED, IDEN_ANON, KEY, _fixture

ONE_CAT = {"BBQ": 1, "DifferenceAwareness": 1, "DiscrimEval": 1}


def test_counts_become_arrays() -> None:
    data = prepare_conv_counts(_fixture())
    assert data.demographics == ["black", "none", "white"]
    assert data.instantiations == ["ai", "human"] and data.personas == ["teacher"]
    # (agent, system, benchmark, condition, persona); condition = (d, i, reveal) with
    # reveal revealed first; the "partial" rows are dropped
    assert data.trials.shape == (2, 1, 1, 12, 1)
    k = list(data.conditions).index(("black", "human", "anonymous"))
    assert data.shifts[0, 0, 0, k, 0] == IDEN_ANON[("black", "human")]
    k = list(data.conditions).index(("white", "ai", "revealed"))
    assert data.shifts[1, 0, 0, k, 0] == BASE[("white", "ai")][0]
    assert (data.trials == 100).all()


def _posterior(data, mu: np.ndarray, pi: np.ndarray) -> xr.Dataset:
    a, s, b, k, _ = data.trials.shape
    z = np.zeros
    return xr.Dataset(
        {
            "alpha": (("chain", "draw", "agent", "system", "benchmark"), z((1, 1, a, s, b))),
            "mu": (("chain", "draw", "agent", "condition"), mu[None, None]),
            "theta": (("chain", "draw", "agent", "system", "condition"), z((1, 1, a, s, k))),
            "omega": (("chain", "draw", "agent", "system", "benchmark", "condition"),
                      z((1, 1, a, s, b, k))),
            "pi": (("chain", "draw", "agent", "system", "benchmark", "persona"), pi[None, None]),
        }
    )  # fmt: skip


def test_contrast_draws_use_the_paper_definitions() -> None:
    data = prepare_conv_counts(_fixture())
    lam = data.shifts / data.trials  # the fixture's λ's, as a one-draw posterior
    mu = logit(np.clip(lam[:, 0, 0, :, 0], 1e-9, 1 - 1e-9))
    post = _posterior(data, mu, np.zeros((2, 1, 1, 1)))
    cond, draws = conv_contrast_draws(conv_lambda_draws(post, data), data)
    got = {
        (r.contrast, r.demographic, r.reference, r.instantiation): draws[0, 0, i]
        for i, r in enumerate(cond.itertuples())
    }
    assert got.keys() == EXPECTED.keys()
    for key, value in EXPECTED.items():
        assert got[key] == pytest.approx(value, abs=1e-9), key


def test_lambda_averages_personas_on_the_probability_scale() -> None:
    df = pd.concat([_fixture(), _fixture().assign(persona="farmer")])
    data = prepare_conv_counts(df)
    mu = np.zeros((2, 12))
    pi = np.array([0.5, -0.5])[None, None, None, :].repeat(2, axis=0)
    lam = conv_lambda_draws(_posterior(data, mu, pi), data)
    assert lam.shape == (1, 1, 2, 1, 1, 3, 2, 2)
    want = (expit(0.5) + expit(-0.5)) / 2  # = 0.5 exactly, by symmetry
    np.testing.assert_allclose(lam, want)


@pytest.fixture(scope="session")
def fit_and_truth():
    """Four systems, three benchmarks, three demographics and personas: planted λ_iden
    effect black/human in system a (logit −0.8) and a reveal effect on λ_base for
    white/AI in system b (+0.8)."""
    cells = conv_design(
        systems=("a", "b", "c", "d"),
        benchmarks=ONE_CAT,
        demographics=("none", "black", "white"),
        personas=("none", "teacher", "farmer"),
    )
    sim = simulate_conv_counts(
        cells=cells,
        conversations=300,
        persona_sd=0.3,
        iden_effects={("a", "black", "human"): -0.8, ("c", "white", "ai"): 0.5},
        base_reveal_effects={("b", "white", "ai"): 0.8},
        seed=1,
    )
    # The default sampler settings (4 × 1000 draws, nutpie) and the real gate: ≈ 30 s on
    # 2 busy cores, 17 s of it nutpie's compile. Shorter chains (4 × 500) leave the
    # largest of ~800 r-hats near 1.015-1.02, over the gate.
    fit = fit_conv_bayes(sim.counts, retry=False)
    return fit, sim


def test_real_fit_recovers_planted_contrasts(fit_and_truth) -> None:
    fit, _ = fit_and_truth
    assert fit.converged, fit.message
    assert fit.diagnostics["sampler"].iloc[0] in ("nutpie", "pymc")
    tabs = conv_bayes_tables(fit, level=0.9)
    c = tabs["conv_bayes_contrasts"].set_index(
        ["contrast", "system", "benchmark", "demographic", "instantiation"]
    )
    li = 0.3
    planted = expit(logit(li) - 0.8) - li  # demo_iden_null, a, black, human
    for bench in ONE_CAT:
        row = c.loc[("demo_iden_null", "a", bench, "black", "human")]
        assert row["lower"] < planted < row["upper"]
        assert row["p_positive"] < 0.01
        null = c.loc[("demo_iden_null", "b", bench, "black", "human")]
        assert null["lower"] < 0 < null["upper"]
    cons = tabs["conv_bayes_consistency"].set_index(
        ["contrast", "system", "demographic", "instantiation"]
    )
    assert cons.loc[("demo_iden_null", "a", "black", "human"), "p_all_negative"] > 0.99
    assert cons.loc[("inst_rc_base", "b", "white", "human-ai"), "p_all_negative"] > 0.99
    assert cons.loc[("demo_iden_null", "b", "black", "human"), "p_same_sign"] < 0.9
    assert (cons["n_benchmarks"] == 3).all()


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="sampler must be"):
        fit_conv_bayes(_fixture(), sampler="advi")
    with pytest.raises(ValueError, match="no revealed or anonymous"):
        prepare_conv_counts(_fixture().query("reveal == 'partial'"))


def test_intervals_cover_the_planted_contrasts(fit_and_truth) -> None:
    """Coverage within the one fit: the planted λ's (mean over personas, the model's
    estimand) give every contrast's truth via the hand-checked contrast code; 90%
    intervals over 168 contrasts (correlated, so a loose band) cover 80-99% of them."""
    fit, sim = fit_and_truth
    data = fit.data
    t = sim.truth.groupby(["system", "benchmark", "demographics", "instantiation", "reveal"])[
        ["lambda_iden", "lambda_base"]
    ].mean()
    idx = pd.MultiIndex.from_product(
        [data.systems, data.benchmarks, data.demographics, data.instantiations,
         ["revealed", "anonymous"]]
    )  # fmt: skip
    t = t.reindex(idx)
    shape = (len(data.systems), len(data.benchmarks), len(data.demographics),
             len(data.instantiations), 2)  # fmt: skip
    lam = np.stack([t["lambda_iden"].to_numpy().reshape(shape),
                    t["lambda_base"].to_numpy().reshape(shape)])[None, None]  # fmt: skip
    cond, truth = conv_contrast_draws(lam, data)
    tab = conv_bayes_tables(fit, level=0.9)["conv_bayes_contrasts"]
    pd.testing.assert_frame_equal(tab[cond.columns], cond)
    covered = (tab["lower"] <= truth[0, 0]) & (truth[0, 0] <= tab["upper"])
    assert len(covered) == 168
    assert 0.80 <= covered.mean() <= 0.99, covered.mean()


def test_a_system_is_contrasted_only_on_the_benchmarks_it_ran() -> None:
    """System t has no Discrim-Eval transcripts: the model's prediction for that pair is
    not a contrast of t (s keeps both benchmarks), and t's contrasts are those of s."""
    s = pd.concat([_fixture(), _fixture().assign(benchmark="DiscrimEval")])
    df = pd.concat([s, _fixture().assign(system="t")], ignore_index=True)
    data = prepare_conv_counts(df)
    assert data.systems == ["s", "t"] and len(data.benchmarks) == 2
    lam = data.shifts[:, 0, 0] / data.trials[:, 0, 0]  # the fixture's λ's, every cell
    mu = logit(np.clip(lam[..., 0], 1e-9, 1 - 1e-9))
    post = _posterior(data, mu, np.zeros((2, 2, 2, 1)))
    cond, draws = conv_contrast_draws(conv_lambda_draws(post, data), data)
    per = cond.groupby("system")["benchmark"].agg(lambda b: sorted(set(b)))
    assert per["s"] == sorted(data.benchmarks)
    assert per["t"] == [KEY["benchmark"]]
    assert len(cond) == 3 * len(EXPECTED)
    for i, r in enumerate(cond.itertuples()):
        key = (r.contrast, r.demographic, r.reference, r.instantiation)
        assert draws[0, 0, i] == pytest.approx(EXPECTED[key], abs=1e-9), (r.system, key)


def test_real_fit_stored_and_reported(fit_and_truth, tmp_path, monkeypatch) -> None:
    """The session's real fit goes through ``analyze_conversation(..., bayes=...)`` into a
    real store (tables, diagnostics, the posterior as an artifact) and the report shows its
    posterior verdicts: under a policy on ΔDemo λ_iden(d, ∅, i), systems a and c (planted
    black/human −0.14 and white/AI +0.11 on the shift-rate scale) are flagged on those
    conditions; b and d (no λ_iden effect) are not."""
    import functools

    from sqlalchemy import select

    import cuegap.designs.conversation._analysis as conv_audit
    from cuegap.designs import BayesSettings
    from cuegap.designs.conversation._analysis import BAYES_KIND, ConvSettings, analyze_conversation
    from cuegap.designs.conversation._report import build_conv_report
    from cuegap.models import Policy
    from cuegap.reports import render_html
    from cuegap.schema import Analysis, make_engine, upgrade

    fit, sim = fit_and_truth
    real = conv_audit.conv_bayes_audit_tables
    monkeypatch.setattr(conv_audit, "conv_bayes_audit_tables", functools.partial(real, fit=fit))
    engine = make_engine(f"sqlite:///{tmp_path / 'fit.db'}")
    upgrade(engine)
    policy = Policy(delta_shift=0.05, probability=0.9, min_parsable=0)
    settings = ConvSettings(policy=policy, contrast="demo_iden_null", bayes=BayesSettings())
    result = analyze_conversation(engine, settings, counts=sim.counts)
    assert result.converged and result.bayes_id is not None
    with engine.connect() as conn:
        row = conn.execute(select(Analysis).where(Analysis.id == result.bayes_id)).one()
    assert row.kind == BAYES_KIND and row.status == "ok"
    assert row.settings["bayes"]["draws"] == 1000
    v = result.bayes_tables["verdicts"].set_index("system")
    for system, want in (("a", ("black", "human")), ("c", ("white", "ai"))):
        assert v.loc[system, "verdict"] == "flagged", v.loc[system, "reason"]
        assert all(w in v.loc[system, "condition"] for w in want), v.loc[system, "condition"]
    assert (v.loc[["b", "d"], "verdict"] != "flagged").all()
    c = result.bayes_tables["conv_bayes_contrasts"]
    assert c.groupby("system")["benchmark"].nunique().eq(3).all()
    again = analyze_conversation(engine, settings, counts=sim.counts)
    assert again.bayes_id == result.bayes_id  # reused, not refitted
    html = render_html(build_conv_report(engine)).html
    assert "Verdicts and intervals: the Bayesian posterior" in html
    engine.dispose()
