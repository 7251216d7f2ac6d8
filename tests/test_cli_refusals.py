"""Refuse what is not there (issue 30, item 6): a value that selects no data is one line
and a non-zero exit, never an analysis of nothing.

Real SQLite stores of simulated QA and prompt-variance data (one system each) and the
small dilemma store of ``test_cli_errors.py``; the real command line.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import func, select

from cuegap.schema import Analysis, make_engine
from tests import test_cli_errors as ce
from tests.test_cli_errors import cli, one_line_error

analysed, store = ce.analysed, ce.store  # the small analysed dilemma store, copied per test


def _simulated(root: Path, design: str) -> Path:
    db = root / "store.db"
    sim = root / "sim"
    assert cli(db, "simulate", str(sim), "--design", design, "--systems", "1").exit_code == 0
    assert cli(db, "ingest", str(sim)).exit_code == 0
    return db


@pytest.fixture(scope="module")
def qa_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _simulated(tmp_path_factory.mktemp("qa-refusals"), "qa")


@pytest.fixture(scope="module")
def pv_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _simulated(tmp_path_factory.mktemp("pv-refusals"), "prompt-variance")


def _analyses(db: Path) -> int:
    engine = make_engine(f"sqlite:///{db}")
    with engine.connect() as conn:
        n = conn.execute(select(func.count()).select_from(Analysis)).scalar_one()
    engine.dispose()
    return n


@pytest.mark.parametrize("command", ["analyze", "reanalyze"])
def test_an_unknown_qa_strategy_is_refused_listing_the_stored_ones(
    qa_store: Path, tmp_path: Path, command: str
) -> None:
    before = _analyses(qa_store)
    extra = ["-o", str(tmp_path / "out")] if command == "reanalyze" else ["--boot", "5"]
    result = cli(qa_store, command, "--design", "qa", "--strategy", "zero_shot", *extra)
    one_line_error(result, "strategy 'zero_shot' is not in the store", "zero-shot", "cot")
    assert _analyses(qa_store) == before
    assert not (tmp_path / "out").exists()


def test_an_unknown_prompt_variance_strategy_is_refused(pv_store: Path) -> None:
    pv = ("analyze", "--design", "prompt-variance")
    result = cli(pv_store, *pv, "--strategy", "zero_shot")
    one_line_error(result, "strategy 'zero_shot' is not in the store", "zero-shot")
    result = cli(pv_store, *pv, "--factors", "choice_format,colour")
    assert result.exit_code == 2 and "colour" in result.output
    assert "Traceback" not in result.output
    assert _analyses(pv_store) == 0


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (("analyze", "--strategy", "cot"), "--strategy applies to the QA and prompt-variance"),
        (("analyze", "--explicit", "bogus"), "explicit condition 'bogus' has no What-if"),
        (("analyze", "--implicit", "bogus"), "implicit condition 'bogus' has no What-if"),
        (("analyze", "--unit", "question"), "--unit applies to the conversation"),
        (("analyze", "--factors", "x"), "--factors applies to the prompt-variance design"),
        (("reanalyze", "-o", "OUT", "--strategy", "cot"), "--strategy applies to the QA"),
        # nothing changed since the analysis: still refused, not "nothing changed"
        (("reanalyze", "-o", "OUT", "--explicit", "bogus"), "explicit condition 'bogus'"),
        (("tables", "--analysis", "999"), "no analysis 999 in the store (the newest is 1"),
        (("export", "verdicts", "-o", "OUT.csv", "--analysis", "999"), "no analysis 999"),
        (("report", "-o", "OUT", "--analysis", "999"), "--analysis 999"),
    ],
)
def test_dilemma_values_that_select_nothing_are_refused(
    store: Path, tmp_path: Path, args: tuple[str, ...], needle: str
) -> None:
    args = tuple(a.replace("OUT", str(tmp_path / "out")) for a in args)
    one_line_error(cli(store, *args), needle)
    assert _analyses(store) == 1
    assert not list(tmp_path.glob("out*"))


def test_ingest_refuses_a_folder_with_nothing_to_read(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    db = tmp_path / "s.db"
    one_line_error(cli(db, "ingest", str(empty)), f"{empty}: no file a reader recognises")
    (empty / "README.txt").write_text("notes")
    one_line_error(cli(db, "ingest", str(empty)), "1 other file(s) skipped")
    assert not db.exists()  # refused before the store is created
