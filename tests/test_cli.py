"""The command line, run in-process with Typer's runner against real SQLite stores."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from cuegap import _clidoc
from cuegap.cli import app
from tests.conftest import DATA

ROOT = Path(__file__).parent.parent
runner = CliRunner()


def run(db: Path, *args: str):
    return runner.invoke(app, ["--db", f"sqlite:///{db}", *args], env={"COLUMNS": "200"})


def test_cli_reference_is_current() -> None:
    """docs/cli.md's CLI section equals what the real commands render (regenerate with
    ``python -m cuegap._clidoc --write docs/cli.md``)."""
    doc = (ROOT / _clidoc.DOC).read_text("utf-8")
    assert _clidoc.section(doc) == _clidoc.render(app)


def test_readme_quick_start_commands_exist() -> None:
    readme = (ROOT / "README.md").read_text("utf-8")
    makefile = (ROOT / "Makefile").read_text("utf-8")
    assert "make demo" in readme and "make test" in readme
    assert "\ndemo:" in makefile and "\ntest:" in makefile
    assert "make test" in (ROOT / ".ci" / "run").read_text("utf-8")


def test_init_then_up_to_date(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    first = run(db, "init")
    assert first.exit_code == 0 and "Created store" in first.output
    second = run(db, "init")
    assert second.exit_code == 0 and "is up to date" in second.output


def test_ingest_and_status(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    out = run(db, "ingest", str(DATA / "tiny_bank.json"), str(DATA / "tiny_responses.jsonl"))
    assert out.exit_code == 0, out.output
    assert "item bank 'tiny': 2 dilemmas, 5 items" in out.output
    assert "read 10 = stored 10 + duplicate 0 + quarantined 0" in out.output
    again = run(db, "ingest", str(DATA / "tiny_responses.jsonl"))
    assert "read 10 = stored 0 + duplicate 10 + quarantined 0" in again.output
    assert "nothing new" in again.output
    status = run(db, "status")
    assert status.exit_code == 0
    assert "2 systems, 10 responses from 1 file;" in status.output
    assert "sys-a" in status.output and "sys-b" in status.output


def test_quarantined_lines_are_shown_with_file_and_line(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"format": "cuegap-responses", "version": 1}\n{"system": "x"\n')
    run(db, "ingest", str(DATA / "tiny_bank.json"))
    out = run(db, "ingest", str(bad))
    assert out.exit_code == 3  # its only record was quarantined: nothing stored (issue 12)
    assert "quarantined 1" in out.output
    assert f"{bad}:2: not valid JSON" in out.output.replace("\n", "")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["ingest", "missing.jsonl"], "missing.jsonl: no such file or directory"),
        (
            ["ingest", "--format", "nope", str(DATA / "tiny_bank.json")],
            "unknown format 'nope'; known formats: itembank",
        ),
        (["ingest", str(DATA / "conftest_absent.txt")], "no such file"),
    ],
)
def test_errors_are_one_line_and_nonzero(tmp_path: Path, args: list[str], message: str) -> None:
    out = run(tmp_path / "s.db", *args)
    assert out.exit_code == 2
    assert message in out.output
    assert "Traceback" not in out.output


def test_unrecognised_file_lists_known_formats(tmp_path: Path) -> None:
    odd = tmp_path / "x.csv"
    odd.write_text("a,b\n1,2\n")
    out = run(tmp_path / "s.db", "ingest", str(odd))
    assert out.exit_code == 2
    assert (
        "No reader recognises" in out.output
        and "known formats: itembank, moral-safety, generic" in out.output
    )


def test_bad_database_url_is_a_clear_error() -> None:
    out = runner.invoke(app, ["--db", "mysql://u@h/d", "status"])
    assert out.exit_code == 2
    assert "must be sqlite:///FILE or postgresql://" in out.output


def test_status_of_empty_store_says_so(tmp_path: Path) -> None:
    (tmp_path / "empty.db").touch()
    out = run(tmp_path / "empty.db", "status")
    assert out.exit_code == 1 and "is empty" in out.output


@pytest.mark.parametrize(
    "args", [["status"], ["report", "--out", "r"], ["tables"], ["verify"], ["analyze"]]
)
def test_a_mistyped_store_path_is_reported_and_not_created(tmp_path: Path, args) -> None:
    db = tmp_path / "typo.db"
    out = run(db, *args)
    assert out.exit_code == 1, out.output
    assert "No store at" in out.output and "there is no such file" in out.output
    assert not db.exists()


def test_formats_lists_readers() -> None:
    out = runner.invoke(app, ["formats"])
    assert out.exit_code == 0
    for name in ("itembank", "moral-safety", "generic"):
        assert name in out.output


def test_reanalyze_without_a_store_fails_with_2_not_1(tmp_path: Path) -> None:
    """For reanalyze, 1 means "data changed, a new report was written": a cron job must not
    read a missing or empty store that way."""
    out = run(tmp_path / "typo.db", "reanalyze", "--out", str(tmp_path / "r"))
    assert out.exit_code == 2 and "there is no such file" in out.output
    (tmp_path / "empty.db").touch()
    out = run(tmp_path / "empty.db", "reanalyze", "--out", str(tmp_path / "r"))
    assert out.exit_code == 2 and "is empty" in out.output
