"""The prompt-variance planner: calibration against audits decided by the real analysis,
hand-computed pilot parameters, a score no size can pass, and ``cuegap plan`` on a store.

Calibration (planted effects): the planner is given the planted m, s and σ; it names N
(runs) for an 80 % decision probability; fresh audits at N and N/2, drawn by the
design's counts-level simulator with other seeds and decided by the analysis's own
verdict table (:func:`pv_verdict_table` of ``pv_scores``), decide as often as the plan
predicts there, within Monte Carlo error (4 SE of the difference of two shares).
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from cuegap.cli import app
from cuegap.designs.prompt_variance._analysis_verdicts import pv_verdict_table
from cuegap.designs.prompt_variance.stats import pv_scores, simulate_pv_counts
from cuegap.designs.prompt_variance.stats._plan import (
    PVPlanParams,
    pilot_inputs,
    plan_input,
    questions_per_run,
)
from cuegap.models import Policy, plan_table

POLICY = Policy(delta_bias=0.05)  # format_probability 0.95, 4 combinations, 2 replicates
AUDITS = 150
K = 6


def _audit_share(params: PVPlanParams, runs: int, decision: str, seed: int) -> float:
    """Share of AUDITS fresh audits of ``runs`` runs that the analysis decides."""
    truth = params.estimate if decision == "flag" else 0.0
    sim = simulate_pv_counts(
        systems=[f"s{a}" for a in range(AUDITS)], categories=("age",),
        factors={"choice_format": [f"c{j}" for j in range(K)]}, replicates=runs // K,
        n_questions=questions_per_run(truth, params.run_sd), format_sd=params.format_sd,
        field_sd=0.0, base_scores={"s_bbq_dis": truth}, seed=seed,
    )  # fmt: skip
    v = pv_verdict_table(pv_scores(sim.counts, factors=["choice_format"]),
                         factors=["choice_format"], policy=POLICY)  # fmt: skip
    v = v[v["score"] == "s_bbq_dis"]
    assert len(v) == AUDITS
    return float((v["verdict"] == ("flagged" if decision == "flag" else "passed")).mean())


@pytest.mark.parametrize(("m", "run_sd", "decision"), [(0.10, 0.2, "flag"), (0.0, 0.06, "pass")])
def test_planned_size_decides_as_predicted(m: float, run_sd: float, decision: str) -> None:
    params = PVPlanParams.of_policy(POLICY, estimate=m, format_sd=0.01, run_sd=run_sd,
                                    combinations=K)  # fmt: skip
    inp = plan_input(params, system="a", score="s_bbq_dis", replicates=2, source="planted",
                     audits=AUDITS, seed=11)  # fmt: skip
    row = plan_table([inp]).set_index("decision").loc[decision]
    n = int(row["required_size"])
    assert n % K == 0 and 2 * K < n < 60 * K, n  # a plan worth checking, not trivial
    assert inp.decide(n, decision) >= 0.8 > inp.decide(n - K, decision)
    half = K * max(2, round(n / K / 2))
    for size, seed in ((n, 101), (half, 202)):
        predicted = inp.decide(size, decision)
        got = _audit_share(params, size, decision, seed)
        mc = math.sqrt(2 * max(predicted * (1 - predicted), 0.01) / AUDITS)
        assert abs(got - predicted) < 4 * mc, (size, got, predicted)


def test_format_spread_wider_than_delta_cannot_pass_at_any_size() -> None:
    """s = 0.05 = δ: even a perfectly known mean of 0 keeps the band with
    2Φ(δ/s) − 1 = 2Φ(1) − 1 = 0.68 < q = 0.95, so the rule says format-sensitive
    whatever the size: the pass row has no required size. P(pass) is small but not 0: from
    6 combinations the estimated s sometimes comes out near 0."""
    params = PVPlanParams.of_policy(POLICY, estimate=0.0, format_sd=0.05, run_sd=0.1,
                                    combinations=K)  # fmt: skip
    inp = plan_input(params, system="a", score="s_bbq_dis", replicates=2, source="planted",
                     audits=60, seed=1)  # fmt: skip
    row = plan_table([inp], max_factor=8).set_index("decision").loc["pass"]
    assert math.isnan(row["required_size"]) and row["p_decide"] < 0.2


def test_pilot_parameters_from_a_verdict_row() -> None:
    """estimate 0.08, 90 % interval 0.08 ± 0.0329 (z = 1.6449: se = 0.02), 8
    combinations, 32 runs: σ = se √32 = 0.1131; current size 32 runs, 4 replicates;
    min size 8 × 2 = 16 runs; mde = δ + 1.6449 √(se² + s²) + 0.8416 se with s = 0.015:
    0.05 + 1.6449 · 0.025 + 0.8416 · 0.02 = 0.10795."""
    z = 1.6448536
    verdicts = pd.DataFrame({
        "system": ["x"], "score": ["s_bbq_amb"], "estimate": [0.08], "low": [0.08 - z * 0.02],
        "high": [0.08 + z * 0.02], "level": [0.9], "format_sd": [0.015],
        "n_combinations": [8], "min_replicates": [4], "n_runs": [32],
    })  # fmt: skip
    (inp,) = pilot_inputs(verdicts, POLICY, source="t", audits=10)
    assert inp.current_size == 32 and inp.size_step == 8 and inp.min_size == 16
    assert inp.se == pytest.approx(0.02)
    assert inp.mde == pytest.approx(0.10795, abs=1e-4)
    assert inp.contrast == "s_BBQ_amb across 8 combinations"


def cli(db: Path, *args: object, code: int = 0) -> str:
    res = CliRunner().invoke(app, ["--db", str(db), *map(str, args)], env={"COLUMNS": "250"})
    assert res.exit_code == code, res.output
    return re.sub(r"\s+", " ", res.output)


def test_plan_of_a_prompt_variance_pilot(tmp_path: Path) -> None:
    """From a simulated pilot through the CLI: one flag and one pass row per stored
    verdict, sizes in runs, multiples of the pilot's combinations, answered in a line."""
    db, sim = tmp_path / "pv.db", tmp_path / "sim"
    cli(db, "simulate", sim, "--design", "prompt-variance", "--systems", 1, "--seed", 5)
    cli(db, "ingest", sim)
    cli(db, "analyze", "--design", "prompt-variance")
    out = cli(db, "plan", "--design", "prompt-variance", "--max-factor", 4)
    cli(db, "export", "verdicts", "--out", tmp_path / "v.csv")
    cli(db, "export", "plan", "--out", tmp_path / "plan.csv")
    plan, v = pd.read_csv(tmp_path / "plan.csv"), pd.read_csv(tmp_path / "v.csv")
    assert len(plan) == 2 * len(v) > 0
    assert set(plan["size_unit"]) == {"runs (prompt combinations × replicates)"}
    assert set(plan["current_size"]) == set(v["n_runs"])
    assert "runs (prompt combinations × replicates)" in out and "the audit has" in out


def test_stated_assumptions_need_the_designs_own_keys(tmp_path: Path) -> None:
    """A rates file names what the prompt-variance planner lacks; a formats file plans."""
    rates = tmp_path / "r.toml"
    rates.write_text("[plan]\nitems = 10\nrate_explicit = 0.5\nrate_implicit = 0.5\ngap = 1\n")
    out = cli(tmp_path / "x.db", "plan", "--design", "prompt-variance", "--assumptions", rates,
              code=2)  # fmt: skip
    assert "needs [plan] combinations, replicates, format_sd, run_sd" in out
    formats = tmp_path / "f.toml"
    formats.write_text("[plan]\ncombinations = 6\nreplicates = 2\nformat_sd = 0.01\n"
                       "run_sd = 0.2\ngap = 0.1\nsystems = ['sys-p']\n")  # fmt: skip
    out = cli(tmp_path / "x.db", "plan", "--design", "prompt-variance", "--assumptions",
              formats, "--max-factor", 4)  # fmt: skip
    assert "to flag sys-p at δ = 0.05 bias score with 80% probability" in out
    assert "the audit has 12" in out
    assert not (tmp_path / "x.db").exists()
