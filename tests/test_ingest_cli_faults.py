"""Issue 12 through the command line, on a real SQLite file and a real PostgreSQL server."""

from __future__ import annotations

import json
import shutil

from typer.testing import CliRunner

from cuegap.cli import app
from tests.conftest import DATA

runner = CliRunner()
RUNNERS = DATA / "runners"


def _cli(db_url: str, *args: str):
    return runner.invoke(app, ["--db", db_url, *args], env={"COLUMNS": "200"})


def test_a_file_that_stores_nothing_exits_3_with_one_line(db_url, tmp_path) -> None:
    """Defect 11: --format generic on another runner's file quarantined every line and
    exited 0. Now it exits 3 (documented) and says why in one line."""
    lm = RUNNERS / "lm_eval" / "dummy" / "samples_cue_mc_2026-11-21T06-17-01.915938.jsonl"
    assert _cli(db_url, "ingest", str(DATA / "tiny_bank.json")).exit_code == 0
    out = _cli(db_url, "ingest", "--format", "generic", str(lm))
    assert out.exit_code == 3, out.output
    lines = [ln for ln in out.output.splitlines() if ln.startswith("error:")]
    assert len(lines) == 1 and "nothing stored" in lines[0] and lm.name in lines[0]
    assert "Traceback" not in out.output
    ok = _cli(db_url, "ingest", str(DATA / "tiny_responses.jsonl"))
    assert ok.exit_code == 0, ok.output


def test_simulated_directory_ingests_as_a_directory(db_url, tmp_path) -> None:
    """Defect 12: `cuegap simulate DIR && cuegap ingest DIR` stopped at truth.json."""
    sim = runner.invoke(app, ["simulate", str(tmp_path / "sim"), "--systems", "1"])
    assert sim.exit_code == 0, sim.output
    out = _cli(db_url, "ingest", str(tmp_path / "sim"))
    assert out.exit_code == 0, out.output
    assert "skipped" in out.output and "truth.json" in out.output
    assert "stored" in out.output and "item bank" in out.output


def test_helm_run_folder_and_empty_file_messages(db_url, tmp_path) -> None:
    """Defect 13: a HELM run folder was refused although `ingest --help` says "files or
    directories"; an empty file gave "No reader recognises" instead of the reason."""
    folder = tmp_path / "run"
    shutil.copytree(RUNNERS / "helm" / "cue_probes", folder)
    out = _cli(db_url, "ingest", str(DATA / "tiny_bank.json"), str(folder))
    assert out.exit_code == 0, out.output
    assert "scenario_state.json (helm)" in out.output
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"\n")
    out = _cli(db_url, "ingest", str(empty))
    assert out.exit_code == 2 and "is empty" in out.output, out.output


def test_already_ingested_only_for_the_same_file(db_url, tmp_path) -> None:
    """Defect 13: "file already ingested" was printed for a file never ingested whose
    samples matched stored ones."""
    copy = tmp_path / "copy.jsonl"
    text = (DATA / "tiny_responses.jsonl").read_text()
    copy.write_text(text + "\n")  # other bytes, the same responses
    first = _cli(db_url, "ingest", str(DATA / "tiny_bank.json"), str(DATA / "tiny_responses.jsonl"))
    assert first.exit_code == 0, first.output
    other = _cli(db_url, "ingest", str(copy))
    assert "already stored by another file or run" in other.output, other.output
    same = _cli(db_url, "ingest", str(copy))
    assert "file already ingested" in same.output, same.output


def test_bad_first_line_is_quarantined_not_unrecognised(db_url, tmp_path) -> None:
    """Defect 13: detection read only line 1, so a damaged first line hid the format."""
    path = tmp_path / "r.jsonl"
    good = {"system": "s", "item_id": "direct-d1", "probe": "main", "response": "c-option2"}
    path.write_text("{oops\n" + json.dumps(good) + "\n")
    out = _cli(db_url, "ingest", str(DATA / "tiny_bank.json"), str(path))
    assert out.exit_code == 0, out.output
    assert "stored 1" in out.output and "quarantined 1" in out.output


def test_status_lists_an_unfinished_ingest(db_url, tmp_path) -> None:
    """Defect 10: a killed ingest stayed "running" forever and status did not say so."""
    from sqlalchemy import update

    from cuegap.schema import IngestBatch, make_engine

    out = _cli(db_url, "ingest", str(DATA / "tiny_bank.json"), str(DATA / "tiny_responses.jsonl"))
    assert out.exit_code == 0, out.output
    engine = make_engine(db_url)
    with engine.begin() as conn:  # what a kill -9 during the load leaves
        conn.execute(update(IngestBatch).values(status="running", finished_at=None))
    engine.dispose()
    status = _cli(db_url, "status")
    assert status.exit_code == 0, status.output
    text = status.output.replace("\n", " ")
    assert "unfinished ingest of" in text and "tiny_responses.jsonl" in text
    assert "cuegap ingest" in text


def test_json_file_unreadable_before_its_end_exits_3(db_url, tmp_path) -> None:
    """Defect 9: a JSON runner file that cannot be read past a damaged point (not at its
    end) lost every later sample with exit 0 and a message saying the file ended there."""
    src = (RUNNERS / "inspect_ai" / "cue_probes.json").read_text()
    cut = src.index('"id": "neutral-d1"')
    bad = tmp_path / "broken.json"
    bad.write_text(src[:cut] + "}}}" + src[cut:])  # structure broken mid-file
    out = _cli(db_url, "ingest", str(DATA / "tiny_bank.json"), str(bad))
    assert out.exit_code == 3, out.output
    text = out.output.replace("\n", " ")
    assert "not read to its end" in text and "before the end of the file" in text
    assert "file ends inside" not in text
