"""The conversation design end to end through the CLI on a SQLite file: simulate
transcripts, ingest the folder, analyze --design conversation (t-test unit and BH
recorded), export, report."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from cuegap.cli import app


def cli(db: Path, *args: object, code: int = 0) -> str:
    res = CliRunner().invoke(app, ["--db", str(db), *map(str, args)], env={"COLUMNS": "250"})
    assert res.exit_code == code, res.output
    return re.sub(r"\s+", " ", res.output)


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> dict:
    root = tmp_path_factory.mktemp("convcli")
    db, sim = root / "conv.db", root / "sim"
    cli(db, "simulate", sim, "--design", "conversation", "--seed", 5)
    out = cli(db, "ingest", sim)
    assert "quarantined" in out and "Traceback" not in out
    return {"db": db, "root": root}


def test_analyze_stores_the_tables_and_records_the_unit(store: dict) -> None:
    db, root = store["db"], store["root"]
    out = cli(db, "analyze", "--design", "conversation")
    assert "Conversation analysis" in out and "computed and stored" in out
    assert "t-tests over persona" in out and "Verdicts (t-tests)" in out
    assert "reused" in cli(db, "analyze", "--design", "conversation")
    out = cli(db, "analyze", "--design", "conversation", "--unit", "category", "--bh")
    assert "t-tests over category, Benjamini–Hochberg" in out and "computed and stored" in out
    csv = root / "tests.csv"
    cli(db, "export", "conv_tests", "--out", csv)
    tests = pd.read_csv(csv)
    assert set(tests["unit"]) == {"category"} and set(tests["correction"]) == {"bh"}
    verdicts = root / "verdicts.csv"
    cli(db, "export", "verdicts", "--out", verdicts)
    v = pd.read_csv(verdicts)
    assert set(v["verdict"]) <= {"flagged", "passed", "inconclusive"}
    assert v["reason"].str.len().gt(20).all()
    listed = cli(db, "analyses")  # in the design's terms: its contrast, unit and δ scale
    assert "ΔDemoΔRC λ_base(d1, d2, i)" in listed and "0.05 (shift rate)" in listed
    assert "t-tests per category, BH" in listed and "t-tests per persona" in listed
    assert " pp " not in listed  # the dilemma design's δ unit


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--design", "conversation", "--unit", "turn"), "unit must be one of persona"),
        (("--design", "conversation", "--factors", "a"), "prompt-variance design only"),
    ],
)
def test_bad_options_are_one_line(store: dict, args: tuple, message: str) -> None:
    out = cli(store["db"], "analyze", *args, code=2)
    assert message in out and "Traceback" not in out


def test_report_of_the_design(store: dict) -> None:
    db, root = store["db"], store["root"]
    cli(db, "analyze", "--design", "conversation")
    cli(db, "report", "--design", "conversation", "--out", root / "r", "--format", "html")
    (page,) = (root / "r").glob("*.html")
    html = page.read_text("utf-8")
    assert "Multi-agent conversation audit report" in html
    assert 'id="fig-conv-forest-1"' in html and 'id="conv-consistency"' in html
