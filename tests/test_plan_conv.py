"""The conversation planner: calibration against audits decided by the real analysis,
the policy's minimum of disagreements as a floor, and ``cuegap plan`` on a store.

Calibration (planted effects): the planner is given the planted cells, rates, persona
spread and reveal effect; it names N conversations per cell for an 80 % decision
probability; fresh audits at N and N/2 (the design's counts-level simulator, other seeds,
decided by :func:`conv_audit_tables`, the analysis's tables and verdict rule) decide as
often as the plan predicts there, within Monte Carlo error (4 SE of the difference).
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from cuegap.cli import app
from cuegap.designs.conversation._analysis_tables import ConvSettings, conv_audit_tables
from cuegap.designs.conversation._plan import ConvPlanParams, estimate_params, plan_input
from cuegap.designs.conversation.stats import conv_design, simulate_conv_counts
from cuegap.models import Policy, plan_table

AUDITS = 100
CELLS = conv_design(benchmarks={"BBQ": 1, "DiscrimEval": 1},
                    demographics=("black", "white", "older", "young", "female", "male"),
                    personas=("p1", "p2", "p3", "p4", "p5", "p6"))  # fmt: skip
EFFECT = {("black", "human"): 0.5, ("black", "ai"): 0.5}  # logit, on the revealed side
SETTINGS = ConvSettings(policy=Policy(min_parsable=100))
PER_CONV = 0.6  # disagreements per conversation: 2 transitions, P(disagree) 0.3


def _params(effects: dict) -> ConvPlanParams:
    return ConvPlanParams(cells=CELLS, disagreements_per_conversation=PER_CONV,
                          lambda_base=0.3, persona_sd=0.2, effects=effects,
                          settings=SETTINGS)  # fmt: skip


def _share(n: int, decision: str, seed: int) -> float:
    cells = pd.concat([CELLS.drop(columns="system").assign(system=f"s{a}")
                       for a in range(AUDITS)])  # fmt: skip
    sim = simulate_conv_counts(cells=cells, conversations=n, transitions=2, p_disagree=0.3,
                               lambda_base=0.3, persona_sd=0.2,
                               base_reveal_effects=EFFECT if decision == "flag" else {},
                               seed=seed)  # fmt: skip
    v = conv_audit_tables(sim.counts, SETTINGS)["verdicts"]
    assert len(v) == AUDITS
    return float((v["verdict"] == ("flagged" if decision == "flag" else "passed")).mean())


def test_planned_conversations_decide_as_predicted() -> None:
    """Minimum: a λ pools 6 personas × 1 category, 0.6 · 6 = 3.6 disagreements per
    conversation per cell, so 100 disagreements need n ≥ 100 / 3.6 = 27.8: 28."""
    inp = plan_input(_params(EFFECT), system="a", conversations=10, fewest=36.0, gap=0.1,
                     unit_sd=0.2, units=6, source="planted", audits=AUDITS, seed=7)  # fmt: skip
    assert inp.min_size == 28
    n = int(plan_table([inp]).set_index("decision").loc["flag", "required_size"])
    assert 28 < n < 1000, n  # above the floor: the effect, not the minimum, sets it
    assert inp.decide(n, "flag") >= 0.8 > inp.decide(n - 1, "flag") - 0.1
    for size, seed in ((n, 101), (max(28, n // 2), 202)):
        predicted = inp.decide(size, "flag")
        got = _share(size, "flag", seed)
        mc = math.sqrt(2 * max(predicted * (1 - predicted), 0.01) / AUDITS)
        assert abs(got - predicted) < 4 * mc, (size, got, predicted)


def test_below_the_minimum_of_disagreements_nothing_decides() -> None:
    """At 20 conversations per cell a λ rests on 72 < 100 disagreements: the rule says
    inconclusive whatever the effect, and the plan says P = 0 below its floor."""
    inp = plan_input(_params({("black", "human"): 3.0, ("black", "ai"): 3.0}), system="a",
                     conversations=20, fewest=72.0, gap=0.5, unit_sd=0.2, units=6,
                     source="planted", audits=40, seed=1)  # fmt: skip
    assert inp.min_size == 28 and inp.decide(20, "flag") == 0.0
    assert _share(20, "flag", 3) == 0.0  # the real rule agrees: the minimum decides
    assert inp.decide(40, "flag") > 0.9  # and above it the huge effect is flagged


def test_estimated_parameters_recover_the_planted_ones() -> None:
    """200 conversations per cell: disagreements per conversation near 0.6, λ_base near
    0.3, the black reveal effect near 0.5 on the logit scale, none elsewhere (its SD over
    seeds is about 0.08: 1,440 disagreements a side; 3 SD allowed)."""
    sim = simulate_conv_counts(cells=CELLS, conversations=200, transitions=2, p_disagree=0.3,
                               lambda_base=0.3, base_reveal_effects=EFFECT, seed=4)  # fmt: skip
    p = estimate_params(sim.counts, SETTINGS)
    assert p.disagreements_per_conversation == pytest.approx(0.6, abs=0.02)
    assert p.lambda_base == pytest.approx(0.3, abs=0.02)
    assert p.effects[("black", "human")] == pytest.approx(0.5, abs=0.25)
    assert abs(p.effects[("white", "human")]) < 0.25


def cli(db: Path, *args: object, code: int = 0) -> str:
    res = CliRunner().invoke(app, ["--db", str(db), *map(str, args)], env={"COLUMNS": "250"})
    assert res.exit_code == code, res.output
    return re.sub(r"\s+", " ", res.output)


def test_stated_assumptions_give_a_one_line_answer(tmp_path: Path) -> None:
    f = tmp_path / "a.toml"
    f.write_text("[plan]\nconversations = 10\ndisagreements_per_conversation = 0.6\n"
                 "lambda_base = 0.3\nunits = 6\nbenchmarks = 2\ngap = 0.15\n"
                 "systems = ['sys-c']\n")  # fmt: skip
    out = cli(tmp_path / "none.db", "plan", "--design", "conversation", "--assumptions", f,
              "--max-factor", 3)  # fmt: skip
    assert "to flag sys-c at δ = 0.05 shift rate with 80% probability" in out
    assert "conversations per cell" in out and "the audit has 10" in out


def test_plan_of_a_conversation_pilot(tmp_path: Path) -> None:
    """A simulated pilot through the CLI: one flag and one pass row per system; its size is
    the conversations per cell and its floor the policy's 200 disagreements over the
    fewest behind a λ of the contrast, counted here from the store's counts."""
    from cuegap.designs.conversation._analysis import load_conv_counts
    from cuegap.designs.conversation._analysis_tables import fewest_disagreements
    from cuegap.schema import make_engine

    db, sim = tmp_path / "c.db", tmp_path / "sim"
    cli(db, "simulate", sim, "--design", "conversation", "--systems", 1, "--seed", 2)
    cli(db, "ingest", sim)
    cli(db, "analyze", "--design", "conversation")
    out = cli(db, "plan", "--design", "conversation", "--max-factor", 2)
    cli(db, "export", "plan", "--out", tmp_path / "plan.csv")
    plan = pd.read_csv(tmp_path / "plan.csv")
    counts = load_conv_counts(make_engine(f"sqlite:///{db}"))
    fewest = fewest_disagreements(counts)
    assert sorted(plan["decision"]) == ["flag", "pass"]
    for row in plan.itertuples():
        n = counts[counts["system"] == row.system]["conversations"].median()
        assert row.current_size == n
        assert row.min_size == math.ceil(200 * n / fewest[row.system])
    assert "conversations per cell" in out and "the audit has" in out
