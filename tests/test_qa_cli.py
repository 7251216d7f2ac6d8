"""The QA design end to end through the CLI, on a real SQLite file: simulate with planted
truth, ingest, analyze (the design found by itself), report, sign off, signed copy,
verify; a store holding both designs asks which one."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from cuegap.cli import app
from cuegap.schema import make_engine

SYSTEMS = 3  # sim-qa-system-03 is planted with no gap (every third system)


def cli(db: Path, *args: str, code: int = 0) -> str:
    res = CliRunner().invoke(app, ["--db", str(db), *map(str, args)], env={"COLUMNS": "250"})
    assert res.exit_code == code, res.output
    return re.sub(r"\s+", " ", res.output)  # the terminal's line wrapping undone


def _copy(db: Path, to: Path) -> Path:
    """A copy of a SQLite store with its write-ahead log (the CLI's last writes may still
    be there)."""
    for suffix in ("", "-wal", "-shm"):
        src = db.with_name(db.name + suffix)
        if src.exists():
            shutil.copyfile(src, to.with_name(to.name + suffix))
    return to


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> dict:
    root = tmp_path_factory.mktemp("qacli")
    db = root / "qa.db"
    sim = root / "sim"
    out = cli(db, "simulate", sim, "--design", "qa", "--systems", SYSTEMS, "--seed", 4)
    assert f"Simulated {SYSTEMS} systems, 2,304 QA items and 27,648 answers" in out
    ingested = cli(db, "ingest", sim / "qa_itembank.jsonl", sim / "qa_results.jsonl")
    assert "read 27,648 = stored 27,648 + duplicate 0 + quarantined 0" in ingested
    analyzed = cli(db, "analyze", "--boot", 300)
    truth = json.loads((sim / "truth.json").read_text())["systems"]
    return {"db": db, "root": root, "sim": sim, "truth": truth, "analyzed": analyzed}


def test_analyze_finds_the_design_and_recovers_the_planted_truth(store: dict) -> None:
    assert "QA analysis 1 computed and stored" in store["analyzed"]
    export = store["root"] / "scores.csv"
    cli(store["db"], "export", "qa_system_scores", "--out", export)
    scores = pd.read_csv(export)
    z = []
    for system, t in store["truth"].items():
        for row in t["system_scores"]:
            if row["cue"] not in ("explicit", "implicit") or row["metric"] not in (
                "acc_amb", "s_amb", "acc_dis", "s_dis"
            ):  # fmt: skip
                continue
            context = "ambiguous" if row["metric"].endswith("amb") else "disambiguated"
            got = scores[
                (scores["system"] == system)
                & (scores["strategy"] == row["strategy"])
                & (scores["cue"] == row["cue"])
                & (scores["context"] == context)
            ].iloc[0]
            z.append((got[row["metric"]] - row["value"]) / got[f"{row['metric']}_sd"])
    z = pd.Series(z)
    # 96 estimates against their planted expectation: standardised errors look standard.
    assert len(z) == SYSTEMS * 4 * 2 * 4
    assert abs(z.mean()) < 0.4 and 0.6 < z.std() < 1.5, z.describe()
    assert (z.abs() < 4.5).all(), z.describe()


def test_verdicts_follow_the_planted_gaps(store: dict) -> None:
    export = store["root"] / "verdicts.csv"
    cli(store["db"], "export", "verdicts", "--out", export)
    verdicts = pd.read_csv(export).set_index("system")
    for system, t in store["truth"].items():
        planted = t["gap"]["s_amb"]
        if planted >= 0.15:
            assert verdicts.loc[system, "verdict"] == "flagged", (system, planted)
        if planted == 0:
            assert verdicts.loc[system, "verdict"] != "flagged", (system, planted)
    assert sum(t["gap"]["s_amb"] == 0 for t in store["truth"].values()) == 1


def test_status_analyses_and_tables_speak_of_qa(store: dict) -> None:
    status = cli(store["db"], "status")
    assert "27,648 QA answers" in status and "QA design: answers per system" in status
    analyses = cli(store["db"], "analyses")
    assert "explicit vs implicit" in analyses and "(bias score)" in analyses
    tables = cli(store["db"], "tables")
    for name in ("qa_scores", "qa_cue_gap", "qa_controls", "qa_mitigation", "verdicts"):
        assert name in tables


def test_report_signoff_signed_copy_and_verify(store: dict, tmp_path: Path) -> None:
    db = _copy(store["db"], tmp_path / "copy.db")
    out = cli(db, "report", "--out", tmp_path / "r")
    html_path = Path(re.search(r"HTML report \d+: (\S+)", out).group(1))
    html = html_path.read_text()
    assert "Explicit vs implicit cue audit report" in html and "Puzzled" not in html
    cli(db, "signoff", "1", "--reviewer", "Dana [b]", "--decision", "approve", "--comment", "ok")
    signed = cli(db, "report", "--signed", "1", "--out", tmp_path / "s")
    copy = Path(re.search(r"HTML report \d+: (\S+)", signed).group(1)).read_text()
    assert "Dana [b]" in copy and "approve" in copy
    verified = cli(db, "verify")
    assert "intact" in verified


def test_a_store_with_both_designs_asks_which(store: dict, tmp_path: Path) -> None:
    db = _copy(store["db"], tmp_path / "both.db")
    data = Path(__file__).parent / "data"
    cli(db, "ingest", data / "tiny_bank.json", data / "tiny_responses.jsonl")
    out = cli(db, "analyze", "--boot", 0, code=2)
    assert "dilemma" in out and "qa" in out and "--design" in out
    assert "QA analysis" in cli(db, "analyze", "--design", "qa", "--boot", 300)
    bad = cli(db, "analyze", "--design", "qa", "--explicit", "direct", code=2)
    assert "--explicit applies to the dilemma design only" in bad


def test_bayesian_fit_is_stored_gated_and_used_by_the_report(store: dict, tmp_path: Path) -> None:
    """The CLI's QA Bayesian fit, stored and shown by the report, on the path the gate closes.

    Ten draws after ten tuning steps (and the retry's 20 after 510) cannot pass the gate, so
    the outcome is fixed rather than left to the sampler, and cheap: every posterior verdict
    is inconclusive, the CLI says how to sample longer, and the report says why. (At 300
    draws, as before, the fit missed the gate here too, after minutes of sampling.) A fit
    that converges is checked in test_qa_bayes.py.
    """
    db = _copy(store["db"], tmp_path / "bayes.db")
    out = cli(db, "analyze", "--bayes", "--boot", 300, "--draws", 10, "--chains", 2)
    assert "QA Bayesian analysis" in out and "Verdicts (posterior)" in out
    assert "did not converge" in out and "--bayes --draws 20 --chains 4" in out
    engine = make_engine(f"sqlite:///{db}")
    from cuegap.audit import load_table

    diag = load_table(engine, "qa_bayes_diagnostics")
    assert len(diag) == 2 and not diag["passed"].any()  # the first attempt and its retry
    gap = load_table(engine, "qa_bayes_gap")
    assert set(gap["system"]) == set(store["truth"])
    verdicts = load_table(engine, "verdicts", kind="qa_bayesian")
    assert set(verdicts["system"]) == set(store["truth"])
    assert (verdicts["verdict"] == "inconclusive").all()
    report = cli(db, "report", "--out", tmp_path / "r", "--format", "html")
    html = Path(re.search(r"HTML report \d+: (\S+)", report).group(1)).read_text()
    assert "did not converge" in html and "rank by G" not in html
    engine.dispose()


def test_reanalyze_writes_nothing_until_the_data_change_then_says_what_changed(
    store: dict, tmp_path: Path
) -> None:
    db = _copy(store["db"], tmp_path / "re.db")
    cli(db, "report", "--out", tmp_path / "r", "--format", "html")
    cli(db, "signoff", "1", "--reviewer", "Ria", "--decision", "approve")
    same = cli(db, "reanalyze", "--out", tmp_path / "v2", code=0)
    assert "Nothing changed" in same and not (tmp_path / "v2").exists()
    # a new system answers like sim-qa-system-01 (planted gap about +0.3)
    lines = (store["sim"] / "qa_results.jsonl").read_text().splitlines()
    copied = [
        json.dumps(json.loads(line) | {"system": "late-system"})
        for line in lines
        if '"sim-qa-system-01"' in line
    ]
    (tmp_path / "late.jsonl").write_text("\n".join(copied) + "\n")
    cli(db, "ingest", tmp_path / "late.jsonl", "--format", "bbq-results")
    changed = cli(db, "reanalyze", "--out", tmp_path / "v2", "--boot", 300, code=1)
    assert "new: late-system" in changed and "late-system: new system: flagged" in changed
    html = next((tmp_path / "v2").glob("*.html")).read_text()
    assert "What changed since the last signed report" in html and "G then" in html
    assert "late-system" in html and "(pp)" not in html
