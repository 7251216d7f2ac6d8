"""The verdict table every design's ``cuegap analyze`` prints: one printer, reading the
stored verdict records (cuegap/cli/verdicts.py)."""

from __future__ import annotations

import io
from pathlib import Path

import pandas as pd
from rich.console import Console
from typer.testing import CliRunner

from cuegap.audit import load_table
from cuegap.cli import app
from cuegap.cli.verdicts import records_table
from cuegap.designs._verdicts import RECORD_COLUMNS
from cuegap.designs.dilemma.simulate import simulate, synthetic_item_bank
from cuegap.ingest import ingest_path
from cuegap.schema import make_engine, upgrade


def _render(table) -> str:
    out = io.StringIO()
    Console(file=out, width=300, color_system=None).print(table)
    return out.getvalue()


def _record(**kw) -> dict:
    rec = dict.fromkeys(RECORD_COLUMNS)
    rec.update(system="s", design="qa", kind="qa_bayesian", compared="c", estimate=0.2,
               low=0.1, high=0.3, level=0.9, scale="bias score", method="posterior",
               gate_passed=True, decision="flagged", reason="why")  # fmt: skip
    rec.update(kw)
    return rec


def test_a_missed_gate_prints_inconclusive_and_text_stays_text() -> None:
    """A record of a fit that missed its gate is printed inconclusive, whatever it stored;
    a system name with console markup is printed as typed."""
    frame = pd.DataFrame(
        [_record(gate_passed=False), _record(system="[red]x[/red]", gate_passed=True)],
        columns=list(RECORD_COLUMNS),
    )
    text = _render(records_table([(7, frame)], "Verdicts (posterior)"))
    lines = [line for line in text.splitlines() if "posterior, gate" in line]
    assert "inconclusive" in lines[0] and "gate missed" in lines[0]
    assert "flagged" not in lines[0]
    assert "[red]x[/red]" in lines[1] and "flagged" in lines[1] and "gate passed" in lines[1]
    assert "+0.2 [+0.1, +0.3] bias score" in lines[0]


def test_several_verdicts_per_system_get_a_compared_column() -> None:
    frame = pd.DataFrame(
        [_record(compared="s_BBQ_dis"), _record(compared="s_BBQ_amb")],
        columns=list(RECORD_COLUMNS),
    )
    text = _render(records_table([(1, frame)], "Verdicts (formats)"))
    assert "compared" in text and "s_BBQ_dis" in text and "s_BBQ_amb" in text
    alone = _render(records_table([(1, frame.iloc[:1])], "Verdicts"))
    assert "compared" not in alone


def test_analyze_prints_the_stored_records(tmp_path: Path) -> None:
    """The dilemma design printed no frequentist verdicts before; now each system's stored
    record (its decision and estimate) is printed."""
    bank = synthetic_item_bank(seed=21, n_dilemmas=20)
    sim = simulate(tmp_path / "data", systems=2, seed=21, item_bank=bank)
    db = tmp_path / "s.db"
    engine = make_engine(f"sqlite:///{db}")
    upgrade(engine)
    ingest_path(engine, sim.itembank_path)
    ingest_path(engine, sim.responses_path)
    res = CliRunner().invoke(
        app, ["--db", f"sqlite:///{db}", "analyze", "--boot", "50"], env={"COLUMNS": "300"}
    )
    assert res.exit_code == 0, res.output
    assert "Verdicts (bootstrap)" in res.output
    records = load_table(engine, "verdict_records")
    lines = res.output.split("Verdicts (bootstrap)", 1)[1].splitlines()
    for r in records.itertuples():
        row = next(line for line in lines if line.strip("│ ").startswith(r.system))
        assert r.decision in row and f"{r.estimate:+.3g}" in row and "pp" in row
    engine.dispose()
