"""The hierarchical Bayesian model (issue 4): checked against planted truth and by hand.

Real sampling happens only in a few session-scoped fixtures, all on count tables of one
shape (4 systems x 3 genders x 5 races x Direct/Puzzled-hard), so that nutpie compiles the
model once per session; every fit is seeded. Counts come from the generative model of
:mod:`cuegap.designs.dilemma.stats._bayes_sim`, whose planted rates are the truth.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import xarray as xr

from cuegap.designs.dilemma.stats import (
    METHODS,
    MODEL_VERSION,
    PRIORS,
    BayesFit,
    bayes_tables,
    fit_bayes,
    group_rates,
    prior_predictive,
)
from cuegap.designs.dilemma.stats import _bayes as bayes_fit_module
from cuegap.designs.dilemma.stats._bayes_model import (
    PARAMS,
    build_model,
    cell_logits,
    prepare_counts,
)
from cuegap.designs.dilemma.stats._bayes_sim import simulate_counts
from cuegap.models import GATE, idata_from_bytes, idata_to_bytes

ROOT = Path(__file__).parent.parent
N_SYSTEMS = 4
KEYS = ["system", "group_type", "group"]


def _logit(p: float) -> float:
    return float(np.log(p / (1 - p)))


# --------------------------------------------------------------------------------------
# fixtures: the only places that sample


@pytest.fixture(scope="session")
def sim():
    """Paper-scale counts: 80 pairs per gender x race cell (about 400 per gender)."""
    return simulate_counts(n_systems=N_SYSTEMS, pairs=80, seed=11)


@pytest.fixture(scope="session")
def fit(sim) -> BayesFit:
    return fit_bayes(sim.counts, draws=1500, tune=1000, chains=2, seed=7)


@pytest.fixture(scope="session")
def tables(fit) -> dict[str, pd.DataFrame]:
    return bayes_tables(fit, delta=2.0)


@pytest.fixture(scope="session")
def big_sim():
    """Plenty of data: 3,000 pairs per cell (about 15,000 decisions per gender)."""
    return simulate_counts(n_systems=N_SYSTEMS, pairs=3000, seed=12)


@pytest.fixture(scope="session")
def big_fit(big_sim) -> BayesFit:
    return fit_bayes(big_sim.counts, draws=500, tune=500, chains=2, seed=3, retry=False)


@pytest.fixture(scope="session")
def starved(sim) -> tuple[BayesFit, BayesFit, BayesFit]:
    """Three starved fits (20 draws, 20 tuning steps): seeds 5, 5 and 6."""
    kw = {"draws": 20, "tune": 20, "chains": 2}
    return (
        fit_bayes(sim.counts, seed=5, **kw),
        fit_bayes(sim.counts, seed=5, **kw),
        fit_bayes(sim.counts, seed=6, retry=False, **kw),
    )


# --------------------------------------------------------------------------------------
# data layout


def test_prepare_counts_sums_cells_and_ignores_row_order(sim) -> None:
    data = prepare_counts(sim.counts)
    assert data.events.shape == (2, 2, N_SYSTEMS, 3, 5)
    assert data.condition_labels == ["direct", "puzzled:hard"]
    np.testing.assert_array_equal(data.trials, sim.trials)
    assert data.events[0].sum() == sim.counts["favor"].sum()
    assert data.trials[1].sum() == sim.counts["against_trials"].sum()
    shuffled = sim.counts.sample(frac=1.0, random_state=1).reset_index(drop=True)
    again = prepare_counts(shuffled)
    np.testing.assert_array_equal(again.events, data.events)
    np.testing.assert_array_equal(again.trials, data.trials)


def test_prepare_counts_filters(sim) -> None:
    counts = sim.counts.copy()
    other = counts.assign(consequences=False, favor=0)
    both = pd.concat([counts, other], ignore_index=True)
    np.testing.assert_array_equal(prepare_counts(both).events, prepare_counts(counts).events)
    pooled = prepare_counts(both, consequences=None)
    np.testing.assert_array_equal(pooled.trials, 2 * prepare_counts(counts).trials)
    dropped = prepare_counts(counts, exclude_systems=["sys-02"])
    assert dropped.systems == ["sys-01", "sys-03", "sys-04"]
    marked = counts.assign(recovered=np.where(counts["dilemma"] == "d1", False, None))
    recovered = prepare_counts(marked, recovered_only=True)
    d2 = prepare_counts(counts[counts["dilemma"] == "d2"])
    np.testing.assert_array_equal(recovered.events, d2.events)


def test_prepare_counts_errors_name_the_argument(sim) -> None:
    with pytest.raises(ValueError, match="needs columns against_trials"):
        prepare_counts(sim.counts.drop(columns=["against_trials"]))
    with pytest.raises(ValueError, match=r"implicit condition 'puzzled:easy' has no rows.*"):
        prepare_counts(sim.counts, implicit=("puzzled", "easy"))
    with pytest.raises(ValueError, match="conditions present: direct, puzzled:hard"):
        prepare_counts(sim.counts, implicit=("named", None))
    with pytest.raises(TypeError, match="explicit must be a"):
        prepare_counts(sim.counts, explicit="direct")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="distinct"):
        prepare_counts(sim.counts, extra_conditions=[("direct", None)])
    bad = sim.counts.assign(favor=sim.counts["favor_trials"] + 1)
    with pytest.raises(ValueError, match="outside"):
        prepare_counts(bad)


def test_fit_arguments_are_checked(sim) -> None:
    with pytest.raises(ValueError, match="sampler must be one of nutpie, jax, pymc, but got"):
        fit_bayes(sim.counts, sampler="stan")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="draws must be an integer >= 1"):
        fit_bayes(sim.counts, draws=0)
    with pytest.raises(ValueError, match="target_accept"):
        fit_bayes(sim.counts, target_accept=1.5)


# --------------------------------------------------------------------------------------
# the model itself (no sampling)


def _prior_draw(model, seed: int = 1) -> dict[str, np.ndarray]:
    import pymc as pm

    names = [n for n in PARAMS if n in model.named_vars]
    vals = pm.draw([model[n] for n in names], draws=1, random_seed=seed)
    return dict(zip(names, vals, strict=True))


def test_zero_sum_axes(sim) -> None:
    """ZeroSumNormal sums over the last axes: group effects over groups, the system-level
    ones over systems and groups (n_zerosum_axes=2), the interaction over gender and race."""
    model = build_model(prepare_counts(sim.counts), interaction=True)
    draw = _prior_draw(model)
    assert np.abs(draw["d_system"].sum(-1)).max() < 1e-9
    assert np.abs(draw["gender_pop"].sum(-1)).max() < 1e-9
    for name in ("z_gender", "z_race"):
        assert np.abs(draw[name].sum(-1)).max() < 1e-9  # over groups
        assert np.abs(draw[name].sum(-2)).max() < 1e-9  # over systems
        assert np.abs(draw[name]).max() > 0.01
    z = draw["z_inter"]
    assert z.shape == (2, 2, N_SYSTEMS, 3, 5)
    assert np.abs(z.sum(-1)).max() < 1e-9 and np.abs(z.sum(-2)).max() < 1e-9
    assert np.abs(z.sum(-3)).max() > 0.01  # not over systems


def test_cell_logits_match_the_pymc_graph(sim) -> None:
    """The numpy linear predictor used for every derived quantity is the model's own."""
    import pytensor
    import pytensor.tensor as pt

    for interaction in (False, True):
        model = build_model(prepare_counts(sim.counts), interaction=interaction)
        draw = _prior_draw(model, seed=3)
        p_var = model["y"].owner.inputs[-1]
        replace = {model[k]: pt.as_tensor(v) for k, v in draw.items()}
        p_graph = pytensor.clone_replace(p_var, replace=replace).eval()
        ds = xr.Dataset(
            {
                k: (("chain", "draw", *model.named_vars_to_dims[k]), np.asarray(v)[None, None])
                for k, v in draw.items()
            }
        )
        p_numpy = 1 / (1 + np.exp(-cell_logits(ds)[0]))
        np.testing.assert_allclose(p_numpy, p_graph, rtol=0, atol=1e-12)


def test_prior_predictive_is_broad_but_not_absurd(sim) -> None:
    """Rates of flipping a decision: the priors should allow 1 % to 50 % easily, rarely put
    a cell above 90 %, and leave the gap undecided (|gap| < 2 pp is not likely a priori)."""
    pp = prior_predictive(prepare_counts(sim.counts), draws=400, seed=4)
    p = pp["p"]
    q05, q50, q95 = np.quantile(p, [0.05, 0.5, 0.95])
    assert 0.05 < q50 < 0.25  # centred on typical rates (the paper's: 1 % to 35 %)
    assert q05 < 0.03 and q95 > 0.4  # broad
    assert (p > 0.9).mean() < 0.03 and (p < 0.001).mean() < 0.03  # not absurd
    gap = pp["macro_gap_pp"]
    assert np.quantile(np.abs(gap), 0.9) < 80
    assert 0.02 < (np.abs(gap) < 2).mean() < 0.2
    y = pp["y_rate"]
    assert 0.05 < np.median(y) < 0.25


def test_methods_states_the_priors_and_the_gate() -> None:
    assert MODEL_VERSION in METHODS
    for value in (
        PRIORS["intercept_mean"],
        PRIORS["intercept_sd"],
        PRIORS["group_system_sd_scale"],
    ):
        assert f"{value}" in METHODS
    assert "ZeroSumNormal" in METHODS
    assert f"r-hat <= {GATE['r_hat_max']}" in METHODS
    assert f"ESS >= {GATE['ess_bulk_min']}" in METHODS


# --------------------------------------------------------------------------------------
# tables from a posterior made by hand


def _hand_fit(against_puzzled: np.ndarray, conditions=(("direct", None), ("puzzled", "hard"))):
    """A fit whose posterior is written by hand: no group effects, favor 20 % everywhere,
    against 5/10/15 % for systems s1/s2/s3 under Direct, and per draw under Puzzled as
    given (shape (4 draws, 3 systems)); extra conditions copy Puzzled."""
    systems = ["s1", "s2", "s3"]
    n_c = len(conditions)
    labels = [c if d is None else f"{c}:{d}" for c, d in conditions]
    d_system = np.zeros((4, 2, n_c, 3))
    d_system[:, 0] = _logit(0.2)
    d_system[:, 1, 0] = [_logit(x) for x in (0.05, 0.10, 0.15)]
    for c in range(1, n_c):
        d_system[:, 1, c] = np.vectorize(_logit)(against_puzzled)
    post = xr.Dataset(
        {
            "mu": (("chain", "draw", "event", "condition"), np.zeros((2, 2, 2, n_c))),
            "d_system": (
                ("chain", "draw", "event", "condition", "system"),
                d_system.reshape(2, 2, 2, n_c, 3),
            ),
        },
        coords={
            "event": ["favor", "against"],
            "condition": labels,
            "system": systems,
            "chain": [0, 1],
            "draw": [0, 1],
        },
    )
    coords = {
        "event": ["favor", "against"],
        "condition": labels,
        "system": systems,
        "gender": ["man", "woman"],
        "race": ["A", "B"],
    }
    dims = tuple(coords)
    trials = np.full((2, n_c, 3, 2, 2), 10)
    const = xr.Dataset(
        {"trials": (dims, trials), "events": (dims, np.zeros_like(trials))}, coords=coords
    )
    import arviz as az

    stats = xr.Dataset({"diverging": (("chain", "draw"), np.zeros((2, 2), bool))})
    idata = az.InferenceData(posterior=post, sample_stats=stats, constant_data=const)
    settings = {"conditions": [list(c) for c in conditions], "model_version": MODEL_VERSION}
    idata.attrs["cuegap_settings"] = json.dumps(settings)
    return BayesFit(idata, True, "ok", pd.DataFrame({"attempt": [1]}), settings)


def test_tables_by_hand() -> None:
    """Hand calculation. Favor is 20 % everywhere, so Net = 20 - Against (pp).
    Direct Net: s1 15, s2 10, s3 5 in every draw. Puzzled Against per draw:
    draw 0: 10/5/15 % (Net 10, 15, 5); draws 1-3: 5/10/15 % (Net 15, 10, 5).
    Gap s1: 5, 0, 0, 0 -> mean 1.25, P(gap > 0) = P(gap > 2) = 1/4, P(|gap| < 2) = 3/4.
    dAgainst s1: +5, 0, 0, 0; dFavor 0. Ranks by Puzzled Net: draw 0 (2, 1, 3), else
    (1, 2, 3) -> mean rank 1.25, 1.75, 3. Pair (s1, s2): Direct order always s1 > s2, kept
    under Puzzled in 3 of 4 draws. Kendall's tau: draw 0 has 1 discordant pair of 3,
    tau = (2 - 1) / 3; the others 1 -> mean (1/3 + 3) / 4 = 5/6; P(tau < 1) = 1/4."""
    ap = np.array([[0.10, 0.05, 0.15]] + [[0.05, 0.10, 0.15]] * 3)
    out = bayes_tables(_hand_fit(ap), delta=2.0)

    gap = out["bayes_gap"].set_index(KEYS)
    s1 = gap.loc[("s1", "macro", "macro")]
    assert s1["gap_mean"] == pytest.approx(1.25)
    assert s1["net_direct_mean"] == pytest.approx(15.0)
    assert s1["p_gap_pos"] == pytest.approx(0.25)
    assert s1["p_gap_gt_delta"] == pytest.approx(0.25)
    assert s1["p_abs_lt_delta"] == pytest.approx(0.75)
    assert gap.loc[("s3", "gender", "woman"), "gap_mean"] == pytest.approx(0.0, abs=1e-9)
    assert set(gap.index.get_level_values("group_type")) == {
        "gender",
        "race",
        "intersection",
        "macro",
    }

    asym = out["bayes_asymmetry"].set_index(KEYS).loc[("s1", "macro", "macro")]
    assert asym["delta_against_mean"] == pytest.approx(1.25)
    assert asym["delta_favor_mean"] == pytest.approx(0.0, abs=1e-9)
    assert asym["p_against_up"] == pytest.approx(0.25)
    assert asym["p_one_sided"] == pytest.approx(0.25)

    rates = out["bayes_group_rates"].set_index(["system", "condition", "group_type", "group"])
    r = rates.loc[("s2", "direct", "race", "B")]
    assert r["favor_rate_mean"] == pytest.approx(0.2)
    assert r["against_rate_mean"] == pytest.approx(0.1)
    assert r["net_pp_mean"] == pytest.approx(10.0)
    assert r["favor_trials"] == 20  # 2 genders x 10

    ranks = out["bayes_ranks"].set_index(["ranking", "system"])
    assert list(ranks.loc["puzzled", "rank_mean"]) == pytest.approx([1.25, 1.75, 3.0])
    assert list(ranks.loc["direct", "rank_median"]) == [1, 2, 3]
    assert ranks.loc[("puzzled", "s1"), "rank_q95"] == 2
    assert ranks.loc[("puzzled", "s1"), "p_rank_1"] == pytest.approx(0.75)

    pairs = out["bayes_pair_order"].set_index(["system_a", "system_b"])
    assert pairs.loc[("s1", "s2"), "p_a_above_b_direct"] == pytest.approx(1.0)
    assert pairs.loc[("s1", "s2"), "p_keeps_direct_order"] == pytest.approx(0.75)
    assert pairs.loc[("s1", "s3"), "p_concordant"] == pytest.approx(1.0)
    assert len(pairs) == 3

    tau = out["bayes_kendall_tau"].iloc[0]
    assert tau["tau_mean"] == pytest.approx(5 / 6)
    assert tau["p_tau_lt_1"] == pytest.approx(0.25)
    assert tau["tau_median"] == pytest.approx(1.0)
    # linear interpolation between the sorted taus (1/3, 1, 1, 1): 1/3 + 0.15 * 2/3
    assert tau["tau_q05"] == pytest.approx(1 / 3 + 0.15 * 2 / 3)


def test_gap_by_condition_covers_every_other_condition() -> None:
    ap = np.array([[0.10, 0.05, 0.15]] + [[0.05, 0.10, 0.15]] * 3)
    conds = (("direct", None), ("puzzled", "hard"), ("puzzled", "easy"))
    out = bayes_tables(_hand_fit(ap, conds))
    by = out["bayes_gap_by_condition"]
    assert sorted(by["implicit"].unique()) == ["puzzled:easy", "puzzled:hard"]
    assert (by["explicit"] == "direct").all()
    macro = by[(by["system"] == "s1") & (by["group_type"] == "macro")]
    assert list(macro["gap_mean"]) == pytest.approx([1.25, 1.25])


def test_tables_check_their_arguments() -> None:
    fit = _hand_fit(np.array([[0.05, 0.10, 0.15]] * 4))
    with pytest.raises(ValueError, match="delta must be a positive number"):
        bayes_tables(fit, delta=0)
    with pytest.raises(TypeError, match="fit must be a BayesFit"):
        bayes_tables(fit.idata)  # type: ignore[arg-type]


# --------------------------------------------------------------------------------------
# real fits


def test_fit_passes_the_gate_and_records_its_settings(fit) -> None:
    assert fit.converged, fit.message
    assert fit.message == "ok"
    d = fit.diagnostics.iloc[-1]
    assert d["r_hat_max"] <= GATE["r_hat_max"]
    assert d["ess_bulk_min"] >= GATE["ess_bulk_min"]
    assert d["divergences"] == 0
    assert d["sampler"] == "nutpie"
    s = fit.settings
    assert s["model_version"] == MODEL_VERSION
    assert (s["draws"], s["tune"], s["chains"], s["seed"]) == (1500, 1000, 2, 7)
    assert s["explicit"] == ["direct", None] and s["implicit"] == ["puzzled", "hard"]
    assert s["priors"] == PRIORS
    json.dumps(s)  # storable as is


def test_posterior_recovers_the_planted_gaps(sim, tables) -> None:
    """Every planted gap (system x gender, race and macro) lies within 3.5 posterior sd of
    its posterior mean, and the macro gaps' 90 % intervals are not wide (< 20 pp)."""
    gap = tables["bayes_gap"].merge(sim.gap, on=KEYS)
    gap = gap[gap["group_type"].isin(["gender", "race", "macro"])]
    assert len(gap) == N_SYSTEMS * 9
    z = (gap["gap_mean"] - gap["gap_pp"]) / gap["gap_sd"]
    assert z.abs().max() < 3.5
    macro = gap[gap["group_type"] == "macro"]
    assert ((macro["gap_q95"] - macro["gap_q05"]) < 20).all()
    # the most performative planted system has the largest posterior macro gap
    top_true = sim.gap.query("group_type == 'macro'").sort_values("gap_pp")["system"].iloc[-1]
    assert macro.sort_values("gap_mean")["system"].iloc[-1] == top_true


def test_tables_are_internally_consistent(tables) -> None:
    gap = tables["bayes_gap"]
    np.testing.assert_allclose(
        gap["gap_mean"], gap["net_direct_mean"] - gap["net_puzzled_mean"], atol=1e-9
    )
    asym = tables["bayes_asymmetry"]
    np.testing.assert_allclose(asym["asymmetry_mean"], gap["gap_mean"], atol=1e-9)
    for col in ("p_gap_pos", "p_gap_gt_delta", "p_abs_lt_delta"):
        assert gap[col].between(0, 1).all()
    assert (gap["p_gap_gt_delta"] <= gap["p_gap_pos"]).all()
    rates = tables["bayes_group_rates"]
    for col in ("favor_rate_mean", "against_rate_mean"):
        assert rates[col].between(0, 1).all()
    gr = rates[rates["group_type"].isin(["gender", "race"])]
    macro = rates[rates["group_type"] == "macro"].set_index(["system", "condition"])
    mean_net = gr.groupby(["system", "condition"])["net_pp_mean"].mean()
    np.testing.assert_allclose(macro["net_pp_mean"], mean_net.loc[macro.index], atol=1e-9)
    ranks = tables["bayes_ranks"]
    for _, part in ranks.groupby("ranking"):
        assert part["rank_mean"].sum() == pytest.approx(N_SYSTEMS * (N_SYSTEMS + 1) / 2)
        assert (part["rank_q05"] <= part["rank_q25"]).all()
        assert (part["rank_q25"] <= part["rank_median"]).all()
        assert (part["rank_median"] <= part["rank_q75"]).all()
        assert (part["rank_q75"] <= part["rank_q95"]).all()
    assert len(tables["bayes_pair_order"]) == N_SYSTEMS * (N_SYSTEMS - 1) // 2
    tau = tables["bayes_kendall_tau"].iloc[0]
    assert -1 <= tau["tau_q05"] <= tau["tau_median"] <= tau["tau_q95"] <= 1


def test_posterior_means_agree_with_frequentist_rates(big_sim, big_fit) -> None:
    """With about 15,000 decisions per gender, shrinkage is negligible: every group's
    posterior mean is within one posterior sd of the frequentist rate, and the posterior sd
    matches the binomial standard error within 25 %."""
    tabs = bayes_tables(big_fit)
    post = tabs["bayes_group_rates"]
    post = post[post["group_type"].isin(["gender", "race"])]
    raw = pd.concat([group_rates(big_sim.counts, by=b) for b in ("gender", "race")])
    keys = ["system", "condition", "group_type", "group"]
    m = post.assign(condition=post["condition"].astype(str)).merge(
        raw.assign(condition=raw["condition"].astype(str)), on=keys, suffixes=("", "_raw")
    )
    assert len(m) == N_SYSTEMS * 2 * 8
    for ev in ("favor", "against"):
        p, n = m[f"{ev}_rate"], m[f"{ev}_trials_raw"]
        se = np.sqrt(p * (1 - p) / n)
        assert ((m[f"{ev}_rate_mean"] - p).abs() < m[f"{ev}_rate_sd"]).all()
        ratio = m[f"{ev}_rate_sd"] / se
        assert ratio.between(0.75, 1.25).all(), ratio.describe()


def test_starved_fit_is_not_converged(starved) -> None:
    """20 draws on 2 chains cannot reach a bulk ESS of 400: reported as not converged after
    the retry, with the reason, and every gap row says so."""
    first, _, no_retry = starved
    assert not first.converged
    assert "not converged after 2 attempt(s)" in first.message
    assert "bulk ESS" in first.message
    assert list(first.diagnostics["attempt"]) == [1, 2]
    assert first.diagnostics["tune"].iloc[1] > first.diagnostics["tune"].iloc[0]
    assert list(first.diagnostics["draws"]) == [20, 40]  # the ESS fell short: more draws
    assert first.diagnostics["target_accept"].iloc[1] == pytest.approx(0.95)
    assert not first.diagnostics["passed"].any()
    assert len(no_retry.diagnostics) == 1
    assert not bayes_tables(first)["bayes_gap"]["converged"].any()


def test_seeds_make_fits_reproducible(starved) -> None:
    a, b, c = starved
    for name in ("mu", "d_system", "z_gender"):
        np.testing.assert_array_equal(a.idata.posterior[name], b.idata.posterior[name])
    assert not np.array_equal(a.idata.posterior["mu"], c.idata.posterior["mu"])


def test_idata_round_trips_through_netcdf_bytes(fit, tables) -> None:
    blob = idata_to_bytes(fit.idata)
    assert isinstance(blob, bytes) and blob[:4] == b"\x89HDF"
    back = BayesFit.from_idata(idata_from_bytes(blob))
    assert back.converged == fit.converged and back.message == fit.message
    assert back.settings == fit.settings
    pd.testing.assert_frame_equal(back.diagnostics, fit.diagnostics, check_dtype=False)
    again = bayes_tables(back)
    for name in ("bayes_gap", "bayes_ranks", "bayes_group_rates"):
        pd.testing.assert_frame_equal(again[name], tables[name])
    with pytest.raises(TypeError, match="blob must be bytes"):
        idata_from_bytes("not bytes")  # type: ignore[arg-type]


def test_nutpie_failure_falls_back_to_pymc(sim, monkeypatch: pytest.MonkeyPatch) -> None:
    """Control flow only: nutpie is made to fail and PyMC's sampler is stood in for by the
    compiled nutpie sampler (PyMC's own NUTS would compile the model again)."""
    real = bayes_fit_module._sample_nutpie

    def broken(*args, **kwargs):
        raise RuntimeError("no numba today")

    monkeypatch.setattr(bayes_fit_module, "_sample_nutpie", broken)
    monkeypatch.setattr(bayes_fit_module, "_sample_pymc", real)
    out = fit_bayes(sim.counts, draws=20, tune=20, chains=2, retry=False)
    d = out.diagnostics.iloc[0]
    assert d["sampler"] == "pymc"
    assert "nutpie failed (RuntimeError: no numba today)" in d["reason"]


def test_pymc_nuts_samples_the_same_posterior_as_nutpie(sim, fit) -> None:
    """The fallback sampler, for real: PyMC's own NUTS on the same counts. Short chains
    (they need not pass the gate), but every posterior mean must sit within half a
    posterior SD of the long nutpie fit's: a fallback that built or labelled the model
    differently would be off by several SDs."""
    short = fit_bayes(
        sim.counts, draws=300, tune=300, chains=2, seed=4, sampler="pymc", retry=False
    )
    d = short.diagnostics.iloc[-1]
    assert d["sampler"] == "pymc" and d["chains"] == 2
    post = short.idata.posterior
    assert post.sizes["chain"] == 2 and post.sizes["draw"] >= 300
    assert set(post.data_vars) == set(fit.idata.posterior.data_vars)
    keys = ["system", "condition", "difficulty", "group_type", "group"]
    ours = bayes_tables(short, delta=2.0)["bayes_group_rates"]
    ref = bayes_tables(fit, delta=2.0)["bayes_group_rates"]
    both = ours.merge(ref, on=keys, suffixes=("", "_ref"), validate="one_to_one")
    assert len(both) == len(ref) > 0
    for stat in ("favor_rate", "against_rate", "net_pp"):
        z = (both[f"{stat}_mean"] - both[f"{stat}_mean_ref"]) / both[f"{stat}_sd_ref"]
        assert z.abs().max() < 0.5, (stat, z.abs().max())


def test_calibration_quick() -> None:
    """benchmarks/validate_bayes.py on 3 tiny audits (2 of 6 pairs per cell, 1 of 80;
    the full run uses 200 with analyze's sampler settings): the 90 % gap intervals cover
    the planted gaps at a plausible rate, and on the small audits the posterior means
    beat the raw rates (shrinkage wins)."""
    spec = importlib.util.spec_from_file_location(
        "validate_bayes", ROOT / "benchmarks" / "validate_bayes.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    from cuegap.designs import BayesSettings

    quick = BayesSettings(draws=300, tune=300, chains=2)
    res = module.run_validation(
        audits=3, n_systems=N_SYSTEMS, small_pairs=6, bayes=quick, n_boot=50
    )
    assert set(res["rows"]["kind"]) == {"zero", "small", "two_delta"}
    assert len(res["rows"]) == 3 * N_SYSTEMS
    cov = res["coverage90"].set_index("group_type")
    assert 0.75 <= cov.loc["all (gender, race, macro)", "coverage"] <= 1.0
    assert cov.loc["all (gender, race, macro)", "n"] == 3 * N_SYSTEMS * 9
    rmse = res["rmse"].set_index(["size", "quantity"])
    for q in ("favor", "against", "net", "gap"):
        small = rmse.loc[("small", q)]
        assert small["rmse_bayes"] < 0.8 * small["rmse_raw"], (q, small)
        large = rmse.loc[("large", q)]
        assert large["rmse_bayes"] < 1.1 * large["rmse_raw"], (q, large)
