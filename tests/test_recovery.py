"""The analysis recovers the rates planted by ``cuegap simulate`` within their uncertainty.

A seeded audit of 4 systems with Named and FormalNamed conditions is simulated, ingested
and analysed with 300 bootstrap replicates. ``truth.json`` holds, per system, condition,
difficulty, consequences setting and group, the mean planted event probability over the
trials of that cell (conditional on the simulated Neutral baselines), so the estimate of a
rate is unbiased for it.

Tolerances (stated, not tuned):

* Coverage: at least 90% of the estimates lie within 2 bootstrap SDs of the planted value
  (nominal 95%; with ~300 cells per statistic the share's own SD is ~1.3 pp, so 90% is
  ~4 SDs below nominal and fails only if the bootstrap SDs are systematically too small).
* No gross error: every rate lies within 4.5 binomial standard errors of the planted value,
  the SE computed at the planted rate. (The bootstrap SD is not used for this bound: like
  any SD evaluated at the estimate, it collapses when a cell's estimate happens to be near
  0 or 1, e.g. 1 event in 90 trials.) For the gap (3 systems x 2 settings x 8 groups =
  48 values, so the covered share has an SD of ~3 pp) the coverage floor is 85%, and
  every estimate lies within 5 bootstrap SDs, its SD combining four rates.

The Cue Visibility Gap's planted value is Net_direct - Net_puzzled-hard computed from the
planted rates; Could-be (status) rates are checked with binomial standard errors.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from cuegap.designs.dilemma._analysis_settings import AnalysisSettings
from cuegap.designs.dilemma._analysis_tables import frequentist_tables, load_store_data
from cuegap.designs.dilemma.simulate import simulate
from cuegap.ingest import ingest_path
from cuegap.schema import make_engine, upgrade


@pytest.fixture(scope="module")
def audit(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("recovery")
    sim = simulate(root / "data", systems=4, seed=3, named=True)
    engine = make_engine(f"sqlite:///{root / 'store.db'}")
    upgrade(engine)
    ingest_path(engine, sim.itembank_path)
    ingest_path(engine, sim.responses_path)
    settings = AnalysisSettings(n_boot=300, seed=9, covariates=("capability",))
    tables = frequentist_tables(load_store_data(engine), settings)
    truth = json.loads(sim.truth_path.read_text())
    engine.dispose()
    return tables, truth


def _key(df: pd.DataFrame) -> pd.DataFrame:
    df = df.copy()
    df["difficulty"] = df["difficulty"].fillna("-")
    return df


def _coverage(z: np.ndarray, what: str, *, share: float = 0.90, min_n: int = 100) -> None:
    z = z[np.isfinite(z)]
    assert len(z) >= min_n, f"too few {what} comparisons: {len(z)}"
    covered = np.mean(np.abs(z) <= 2)
    assert covered >= share, f"{what}: only {covered:.1%} within 2 SD"


def _bound(z: np.ndarray, what: str, limit: float) -> None:
    z = z[np.isfinite(z)]
    assert np.abs(z).max() <= limit, f"{what}: max |z| = {np.abs(z).max():.2f} > {limit}"


def test_high_abstention_system_is_excluded(audit) -> None:
    tables, truth = audit
    planted = {s["system"]: s["high_abstention"] for s in truth["systems"]}
    excluded = tables["exclusions"].set_index("system")["excluded"].to_dict()
    assert excluded == planted
    kept = set(tables["group_rates"]["system"])
    assert kept == {s for s, high in planted.items() if not high}


def test_rates_recover_planted_values(audit) -> None:
    tables, truth = audit
    est = _key(tables["group_rates"])
    true = _key(pd.DataFrame(truth["rates"]))
    keys = ["system", "condition", "difficulty", "consequences", "group_type", "group"]
    m = est.merge(true, on=keys, suffixes=("", "_true"))
    assert len(m) == len(true[true["system"].isin(est["system"])])
    for stat in ("favor", "against"):
        err = m[f"{stat}_rate"] - m[f"{stat}_rate_true"]
        sd = m[f"{stat}_sd_pp"] / 100
        _coverage((err / sd.where(sd > 0)).to_numpy(), f"{stat} (bootstrap)")
        p = m[f"{stat}_rate_true"]
        se = np.sqrt(p * (1 - p) / m[f"{stat}_trials"])
        _bound((err / se.where(se > 0)).to_numpy(), f"{stat} (binomial)", 4.5)


def test_gap_recovers_planted_gap(audit) -> None:
    tables, truth = audit
    true = pd.DataFrame(truth["rates"])
    true["net"] = 100 * (true["favor_rate"] - true["against_rate"])
    direct = true[true["condition"] == "direct"]
    hard = true[(true["condition"] == "puzzled") & (true["difficulty"] == "hard")]
    keys = ["system", "consequences", "group_type", "group"]
    planted = direct.merge(hard, on=keys, suffixes=("_d", "_p"))
    planted["gap_true"] = planted["net_d"] - planted["net_p"]
    m = tables["gap"].merge(planted[[*keys, "gap_true"]], on=keys)
    assert len(m) == len(planted[planted["system"].isin(tables["gap"]["system"])])
    z = ((m["gap_pp"] - m["gap_true"]) / m["gap_sd_pp"]).to_numpy()
    _coverage(z, "gap", share=0.85, min_n=40)
    _bound(z, "gap", 5.0)


def test_status_rates_recover_planted_values(audit) -> None:
    tables, truth = audit
    est = _key(tables["status_bias"].rename(columns={"person_status": "status"}))
    true = _key(pd.DataFrame(truth["could_be_rates"]))
    keys = ["system", "condition", "difficulty", "consequences", "status", "group_type", "group"]
    m = est.merge(true, on=keys)
    assert len(m) > 100
    se = np.sqrt(m["yes_rate"] * (1 - m["yes_rate"]) / m["trials"])
    z = ((m["rate"] - m["yes_rate"]) / se.where(se > 0)).to_numpy()
    _coverage(z, "could-be")
    _bound(z, "could-be", 4.5)


def test_conditional_tables_appear_with_their_data(audit) -> None:
    tables, _ = audit
    share = tables["formal_named_share"]
    assert set(share["system"]) == set(tables["macro_gap"]["system"])
    reg = tables["gap_regression_fit"].iloc[0]
    assert reg["covariates"] == "capability" and reg["n"] == 3 and 0 <= reg["r2"] <= 1
    assert set(tables["gap_regression"]["term"]) >= {"capability"}
    assert tables["kendall_tau"].iloc[0]["n"] == 3
