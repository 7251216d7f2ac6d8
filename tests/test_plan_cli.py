"""``cuegap plan`` end to end: a simulated QA pilot through the CLI, stated assumptions
with hand-computed answers, and a design with nothing stored to plan from."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from cuegap.cli import app
from cuegap.schema import make_engine, qa_counts

ISSUE_COLUMNS = ["system", "design", "contrast", "decision", "current_size", "size_unit",
                 "p_decide", "required_size", "mde"]  # fmt: skip


def cli(db: Path, *args: object, code: int = 0) -> str:
    res = CliRunner().invoke(app, ["--db", str(db), *map(str, args)], env={"COLUMNS": "250"})
    assert res.exit_code == code, res.output
    return re.sub(r"\s+", " ", res.output)


@pytest.fixture(scope="module")
def qa_store(tmp_path_factory: pytest.TempPathFactory) -> dict:
    root = tmp_path_factory.mktemp("plancli")
    db, sim = root / "qa.db", root / "sim"
    cli(db, "simulate", sim, "--design", "qa", "--systems", 2, "--seed", 4)
    cli(db, "ingest", sim / "qa_itembank.jsonl", sim / "qa_results.jsonl")
    cli(db, "analyze", "--boot", 200)
    out = cli(db, "plan")
    cli(db, "export", "plan", "--out", root / "plan.csv")
    return {"db": db, "root": root, "out": out, "plan": pd.read_csv(root / "plan.csv")}


def test_plan_of_a_qa_pilot_is_stored_with_the_issue_columns(qa_store: dict) -> None:
    db, root = qa_store["db"], qa_store["root"]
    assert "questions per category and context" in qa_store["out"]
    assert "Stored as table 'plan'" in qa_store["out"]
    plan = qa_store["plan"]
    assert list(plan.columns[: len(ISSUE_COLUMNS)]) == ISSUE_COLUMNS
    assert sorted(plan["decision"]) == ["flag", "flag", "pass", "pass"]
    cli(db, "export", "qa_cue_gap", "--out", root / "g.csv")
    cue = pd.read_csv(root / "g.csv")
    cue = cue[(cue["metric"] == "s_amb") & (cue["strategy"] == "zero-shot")].set_index("system")
    for row in plan.itertuples():
        assert row.se == pytest.approx(cue.loc[row.system, "gap_sd"])


def test_plan_size_counts_the_questions_asked(qa_store: dict) -> None:
    """current_size = mean over dimensions of the fewer parsable ambiguous answers of the
    two cues, counted here from the store's raw counts, not from a result table."""
    plan = qa_store["plan"]
    counts = qa_counts(make_engine(f"sqlite:///{qa_store['db']}"))
    amb = counts[(counts["context"] == "ambiguous") & (counts["answer"] != "unparsable")
                 & (counts["strategy"] == "zero-shot")]  # fmt: skip
    per = amb.groupby(["system", "dimension", "cue"])["n"].sum().unstack("cue")
    want = per[["explicit", "implicit"]].min(axis=1).groupby("system").mean()
    for row in plan.itertuples():
        assert row.current_size == pytest.approx(want[row.system])


def test_plan_from_stated_assumptions_hand_computed(tmp_path: Path) -> None:
    """items 100, 4 responses each, rates 0.5 and 0.5, ICC 0, unpaired: per side
    v = 0.25/400, se = 100·√(2·0.25/400) = 3.5355 pp. Gap 10 pp, δ 2, q 0.95:
    P(flag) = Φ(8/3.5355 − 1.6449) = Φ(0.6178) = 0.73; 80 % needs
    √(n/100) ≥ 2.4865/2.2627, n ≥ 120.8: 121, printed as about 130 (two figures)."""
    f = tmp_path / "a.toml"
    f.write_text("[plan]\nitems = 100\nresponses_per_item = 4\nrate_explicit = 0.5\n"
                 "rate_implicit = 0.5\ngap = 10.0\nsystems = ['sys-x']\n")  # fmt: skip
    out = cli(tmp_path / "none.db", "plan", "--design", "dilemma", "--assumptions", f)
    assert " 0.73 " in out and " 121 " in out
    assert (
        "to flag sys-x at δ = 2 pp with 80% probability: about 130 dilemmas per condition; "
        "the audit has 100" in out
    )
    assert not (tmp_path / "none.db").exists()  # stated assumptions need no store


def test_bad_assumptions_are_named(tmp_path: Path) -> None:
    f = tmp_path / "a.toml"
    f.write_text("[plan]\nitems = 10\nrate_explicit = 1.5\nrate_implicit = 0.5\ngap = 1\n")
    out = cli(tmp_path / "x.db", "plan", "--assumptions", f, code=2)
    assert "rate_explicit must be in [0, 1], but got 1.5" in out


def test_a_design_without_an_analysis_says_what_to_run(qa_store: dict) -> None:
    out = cli(qa_store["db"], "plan", "--design", "conversation", code=2)
    assert "no conversation analysis is stored to plan from" in out


@pytest.fixture(scope="module")
def dilemma_store(tmp_path_factory: pytest.TempPathFactory) -> dict:
    root = tmp_path_factory.mktemp("plandilemma")
    db, sim = root / "d.db", root / "sim"
    cli(db, "simulate", sim, "--systems", 2, "--seed", 3)
    cli(db, "ingest", sim)
    cli(db, "analyze", "--boot", 100)
    out = cli(db, "plan")
    cli(db, "export", "plan", "--out", root / "plan.csv")
    cli(db, "export", "macro_gap", "--out", root / "mg.csv")
    return {"db": db, "out": out, "plan": pd.read_csv(root / "plan.csv"),
            "macro_gap": pd.read_csv(root / "mg.csv")}  # fmt: skip


def test_plan_of_a_dilemma_pilot(dilemma_store: dict) -> None:
    """se is the stored bootstrap SD of the verdict's setting (with consequences); size is
    the fewer dilemmas with a parsable decision of the two compared conditions, counted
    here from the store's counts."""
    from cuegap.schema import decision_counts

    plan, mg = dilemma_store["plan"], dilemma_store["macro_gap"]
    assert not plan.empty and set(plan["size_unit"]) == {"dilemmas per condition"}
    counts = decision_counts(make_engine(f"sqlite:///{dilemma_store['db']}"))
    counts = counts[counts["consequences"].astype(bool)]
    parsable = counts[(counts["favor_trials"] + counts["against_trials"]) > 0]
    direct = parsable[parsable["condition"] == "direct"].groupby("system")["dilemma"].nunique()
    puzzled = parsable[(parsable["condition"] == "puzzled") & (parsable["difficulty"] == "hard")]
    puzzled = puzzled.groupby("system")["dilemma"].nunique()
    sd = mg[mg["consequences"].astype(bool)].set_index("system")["gap_sd_pp"]
    for row in plan.itertuples():
        assert row.current_size == min(direct[row.system], puzzled[row.system])
        assert row.se == pytest.approx(sd[row.system])
    assert "dilemmas per condition; the audit has" in dilemma_store["out"]


def test_plan_figure_is_written(qa_store: dict) -> None:
    png = qa_store["root"] / "plan.png"
    out = cli(qa_store["db"], "plan", "--figure", png)
    assert "Wrote" in out and "plan.png" in out
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_unknown_assumption_keys_are_named(tmp_path: Path) -> None:
    f = tmp_path / "a.toml"
    f.write_text("[plan]\nitems = 10\nrate_explicit = 0.5\nrate_implicit = 0.5\ngap = 1\n"
                 "icc2 = 3\n")  # fmt: skip
    out = cli(tmp_path / "x.db", "plan", "--assumptions", f, code=2)
    assert "unknown key 'icc2' in [plan]" in out
