"""The notebook API (``cuegap.open(url) -> Audit``, cuegap/api.py): what it reads is what
the store holds, unknown table names are refused without reaching SQL, and the CLI's
``analyze``, ``analyses`` and ``export`` go through it without a change of behaviour."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest
from sqlalchemy import func, select
from typer.testing import CliRunner

import cuegap
from cuegap.audit import latest_analysis_id, load_table
from cuegap.cli import app
from cuegap.schema import Analysis, AnalysisTable


@pytest.fixture(scope="module")
def two_designs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[cuegap.Audit, str]]:
    """One store with the prompt-variance simulation (QA answers under prompt formats,
    with an explicit vs implicit cue contrast), analysed as the QA design and as the
    prompt-variance design."""
    root = tmp_path_factory.mktemp("api")
    url = f"sqlite:///{root / 'store.db'}"
    audit = cuegap.open(url, create=True, quiet=True)
    audit.ingest(audit.simulate("prompt-variance", root / "data", systems=2, seed=8, cue_gap=True))
    audit.analyze("qa", boot=40)
    audit.analyze("prompt-variance", boot=40)
    yield audit, url
    audit.close()


def test_import_cuegap_loads_no_api_and_open_is_the_api() -> None:
    code = (
        "import sys, cuegap; loaded = 'cuegap.api' in sys.modules; "
        "from cuegap.api import Audit, open_store; "
        "assert cuegap.open is open_store and cuegap.Audit is Audit; print(loaded)"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "False"
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        cuegap.nope  # noqa: B018


def test_open_refuses_a_missing_or_empty_store_and_creates_nothing(tmp_path: Path) -> None:
    missing = tmp_path / "typo.db"
    with pytest.raises(ValueError, match="no such file"):
        cuegap.open(f"sqlite:///{missing}")
    assert not missing.exists()
    empty = tmp_path / "empty.db"
    empty.touch()
    with pytest.raises(ValueError, match="is empty"):
        cuegap.open(str(empty))
    with cuegap.open(str(empty), create=True) as audit:
        assert audit.designs == ()
        assert audit.analyses().empty
        assert audit.verdicts().empty and "decision" in audit.verdicts()


def test_designs_and_verdicts_across_designs(two_designs) -> None:
    audit, _url = two_designs
    assert audit.designs == ("qa", "prompt-variance")
    verdicts = audit.verdicts()
    assert set(verdicts["design"]) == {"qa", "prompt-variance"}
    # the rows are the stored verdict records of the newest analysis of each kind
    engine = audit.engine
    expected = []
    for kind in ("qa", "prompt_variance"):
        newest = latest_analysis_id(engine, kind)
        expected.append(load_table(engine, "verdict_records", newest).assign(analysis_id=newest))
    want = pd.concat(expected, ignore_index=True)
    got = verdicts.sort_values(["analysis_id", "system", "compared"]).reset_index(drop=True)
    want = want.sort_values(["analysis_id", "system", "compared"]).reset_index(drop=True)
    assert list(got["decision"]) == list(want["decision"])
    assert list(got["estimate"]) == pytest.approx(list(want["estimate"]), nan_ok=True)
    assert verdicts.columns[0] == "analysis_id"
    only = audit.verdicts("qa")
    assert set(only["design"]) == {"qa"} and len(only) == (got["design"] == "qa").sum()
    with pytest.raises(ValueError, match="unknown design"):
        audit.verdicts("nope")


def test_table_by_name_and_unknown_names_refused(two_designs) -> None:
    audit, _url = two_designs
    scores = audit.table("qa_scores")
    assert len(scores) == int(audit.tables().query("name == 'qa_scores'")["rows"].iloc[0])
    with audit.engine.connect() as conn:
        before = conn.execute(select(func.count()).select_from(AnalysisTable)).scalar()
    for name in ("x'; DROP TABLE analysis_table; --", "qa_scores OR 1=1", "nope"):
        with pytest.raises(KeyError, match=r"stored tables: .*qa_scores"):
            audit.table(name)
    with pytest.raises(TypeError, match="table name"):
        audit.table(3)  # type: ignore[arg-type]
    with audit.engine.connect() as conn:
        assert conn.execute(select(func.count()).select_from(AnalysisTable)).scalar() == before


def test_the_cli_analyze_reuses_what_the_api_stored(two_designs) -> None:
    """Same settings through the CLI and the API: the CLI reuses the API's analysis (its
    stored settings are identical), and `analyses` and `export` list and write the same."""
    audit, url = two_designs
    with audit.engine.connect() as conn:
        count = conn.execute(select(func.count()).select_from(Analysis)).scalar()
    run = CliRunner().invoke(app, ["--db", url, "analyze", "--design", "qa", "--boot", "40"],
                             env={"COLUMNS": "200"})  # fmt: skip
    assert run.exit_code == 0, run.output
    with audit.engine.connect() as conn:
        assert conn.execute(select(func.count()).select_from(Analysis)).scalar() == count
    listed = CliRunner().invoke(app, ["--db", url, "analyses"], env={"COLUMNS": "200"})
    for analysis_id in audit.analyses()["id"]:
        assert f"│ {analysis_id} " in listed.output
    out = Path(url.removeprefix("sqlite:///")).parent / "scores.csv"
    run = CliRunner().invoke(app, ["--db", url, "export", "qa_scores", "--out", str(out)])
    assert run.exit_code == 0, run.output
    assert len(pd.read_csv(out)) == len(audit.table("qa_scores"))


def test_analyze_refuses_another_designs_option(two_designs) -> None:
    audit, _url = two_designs
    with pytest.raises(ValueError, match="unit"):
        audit.analyze("qa", boot=40, unit="persona")


def test_verdicts_ask_each_design_which_analyses_are_current(two_designs, monkeypatch) -> None:
    """Shared code reads a design's current verdicts through its
    ``Design.current_analyses`` hook, not by the design's kinds."""
    from cuegap.designs import DESIGNS

    audit, _url = two_designs
    oldest = int(audit.analyses()["id"].min())  # the QA analysis
    monkeypatch.setattr(DESIGNS["prompt-variance"], "current_analyses", lambda engine: [oldest])
    verdicts = audit.verdicts("prompt-variance")
    assert set(verdicts["analysis_id"]) == {oldest} and set(verdicts["design"]) == {"qa"}
    monkeypatch.setattr(DESIGNS["qa"], "current_analyses", lambda engine: [])
    assert set(audit.verdicts()["design"]) == {"qa"}  # only what the pv hook named
