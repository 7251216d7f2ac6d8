"""Scheduled re-analysis: change detection, verdict comparison, exit codes and the lock."""

from __future__ import annotations

import json
import shutil
import threading
from pathlib import Path

import pandas as pd
import pytest

from cuegap.audit import load_table
from cuegap.compliance import LockHeld, register_report, sign_off, store_lock
from cuegap.designs.dilemma._analysis_settings import AnalysisSettings
from cuegap.designs.dilemma._reanalysis import reanalyze
from cuegap.designs.dilemma.simulate import simulate, synthetic_item_bank
from cuegap.ingest import ingest_path
from cuegap.reanalysis import EXIT_CHANGED, EXIT_UNCHANGED
from cuegap.schema import make_engine, upgrade

SETTINGS = AnalysisSettings(n_boot=50)


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("reanalysis")
    # 20 dilemmas: re-analysis compares stored verdicts, whatever their size; a small bank
    # keeps each of the several analyses per test cheap.
    bank = synthetic_item_bank(seed=21, n_dilemmas=20)
    sim = simulate(root / "data", systems=2, seed=21, item_bank=bank)
    path = root / "base.db"
    engine = make_engine(f"sqlite:///{path}")
    upgrade(engine)
    ingest_path(engine, sim.itembank_path)
    ingest_path(engine, sim.responses_path)
    engine.dispose()
    return path


@pytest.fixture
def engine(base: Path, tmp_path: Path):
    shutil.copyfile(base, tmp_path / "store.db")
    eng = make_engine(f"sqlite:///{tmp_path / 'store.db'}")
    yield eng
    eng.dispose()


def _add_answer(engine, tmp_path: Path, system: str, n: int = 1) -> None:
    lines = [
        {
            "system": system,
            "item_id": "direct-1",
            "probe": "what_if",
            "individual": "A",
            "repeat": 100 + i,
            "response": "option1",
        }
        for i in range(n)
    ]
    f = tmp_path / f"extra-{system}-{n}.jsonl"
    f.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    ingest_path(engine, f)


def _render(calls: list):
    def render(engine, analysis, out_dir: Path, changes):
        out_dir.mkdir(parents=True, exist_ok=True)
        path = out_dir / f"report-{analysis.id}.html"
        path.write_text(f"<p>analysis {analysis.id}</p>")
        register_report(engine, path, analysis_id=analysis.id)
        calls.append((analysis.id, changes))
        return [path]

    return render


def test_first_run_then_nothing_then_one_system(engine, tmp_path: Path) -> None:
    calls: list = []
    first = reanalyze(engine, tmp_path / "r", settings=SETTINGS, render=_render(calls))
    assert first.exit_code == EXIT_CHANGED and len(first.new_systems) == 2
    assert len(first.reports) == 1 and first.reports[0].exists()
    again = reanalyze(engine, tmp_path / "r", settings=SETTINGS, render=_render(calls))
    assert again.exit_code == EXIT_UNCHANGED and again.analysis_id is None
    assert len(calls) == 1  # nothing rendered when nothing changed
    system = first.new_systems[0]
    _add_answer(engine, tmp_path, system)
    third = reanalyze(engine, tmp_path / "r", settings=SETTINGS, render=_render(calls))
    assert third.exit_code == EXIT_CHANGED
    assert third.changed_systems == [system] and not third.new_systems
    assert third.changes is None  # nothing was signed yet


def test_changes_since_the_last_signed_report(engine, tmp_path: Path) -> None:
    calls: list = []
    first = reanalyze(engine, tmp_path / "r", settings=SETTINGS, render=_render(calls))
    sign_off(engine, first.reports[0], reviewer="Ada", decision="approve")
    system = first.new_systems[0]
    _add_answer(engine, tmp_path, system, n=3)
    second = reanalyze(engine, tmp_path / "r", settings=SETTINGS, render=_render(calls))
    changes = second.changes.set_index("system")
    assert set(changes.index) == set(first.new_systems)
    old = load_table(engine, "verdicts", first.analysis_id).set_index("system")
    assert changes.loc[system, "old_gap_pp"] == pytest.approx(old.loc[system, "gap_pp"])
    assert calls[-1][1] is second.changes  # the renderer gets the comparison


def test_a_second_run_waits_for_nobody(engine, tmp_path: Path) -> None:
    holding, release = threading.Event(), threading.Event()

    def hold() -> None:
        with store_lock(engine, "reanalyze", holder="scheduled-run-1"):
            holding.set()
            release.wait(30)

    t = threading.Thread(target=hold)
    t.start()
    holding.wait(30)
    try:
        with pytest.raises(LockHeld, match="held by scheduled-run-1"):
            reanalyze(engine, tmp_path / "r", settings=SETTINGS)
    finally:
        release.set()
        t.join()
    assert reanalyze(engine, tmp_path / "r", settings=SETTINGS).exit_code == EXIT_CHANGED


def test_cli_report_signoff_signed_rerender_reanalyze_verify(engine, tmp_path: Path) -> None:
    """The whole compliance loop through the CLI, with real rendering (HTML)."""
    from sqlalchemy import text
    from typer.testing import CliRunner

    from cuegap.cli import app

    db = ["--db", str(engine.url)]
    run = CliRunner().invoke
    assert run(app, [*db, "analyze", "--boot", "50"]).exit_code == 0
    res = run(app, [*db, "report", "--out", str(tmp_path / "r"), "--format", "html"])
    assert res.exit_code == 0 and "HTML report 1:" in res.output, res.output
    res = run(app, [*db, "signoff", "1", "--reviewer", "Ada", "--decision", "approve"])
    assert res.exit_code == 0, res.output
    res = run(app, [*db, "report", "--out", str(tmp_path / "r"), "-f", "html", "--signed", "1"])
    assert res.exit_code == 0 and "HTML report 2:" in res.output, res.output
    signed = next((tmp_path / "r").glob("*-signed.html")).read_text()
    assert 'data-cuegap="record-hash"' in signed and ">Ada<" in signed
    assert run(app, [*db, "verify"]).exit_code == 0
    res = run(app, [*db, "reanalyze", "--out", str(tmp_path / "r2"), "--boot", "50"])
    assert res.exit_code == 0 and "Nothing changed" in res.output
    _add_answer(engine, tmp_path, "sim-system-01", n=2)
    res = run(app, [*db, "reanalyze", "--out", str(tmp_path / "r2"), "--boot", "50"])
    assert res.exit_code == 1 and "changed: sim-system-01" in res.output, res.output
    new = next((tmp_path / "r2").glob("*.html")).read_text()
    assert "What changed since the last signed report" in new
    with engine.begin() as conn:
        conn.execute(text("DELETE FROM signoff"))
    res = run(app, [*db, "verify"])
    assert res.exit_code == 1 and "no longer in the chain" in res.output
    with store_lock(engine, "reanalyze", holder="cron-a"):
        res = run(app, [*db, "reanalyze", "--out", str(tmp_path / "r3")])
    assert res.exit_code == 2 and "another re-analysis is running" in res.output


def test_bayesian_reanalysis_compares_the_verdicts_the_report_showed(
    engine, tmp_path: Path
) -> None:
    """With --bayes the refit is joint, and changes are measured on posterior verdicts."""
    from cuegap.designs import BayesSettings

    bayes = BayesSettings(draws=200, tune=200, chains=2, seed=3)
    calls: list = []
    first = reanalyze(engine, tmp_path / "r", settings=SETTINGS, bayes=bayes, render=_render(calls))
    assert first.bayes_analysis_id is not None
    shown = load_table(engine, "verdicts", first.bayes_analysis_id).set_index("system")
    sign_off(engine, first.reports[0], reviewer="Ada", decision="approve")
    system = first.new_systems[0]
    _add_answer(engine, tmp_path, system, n=2)
    second = reanalyze(
        engine, tmp_path / "r", settings=SETTINGS, bayes=bayes, render=_render(calls)
    )
    assert second.changed_systems == [system] and second.bayes_analysis_id is not None
    changes = second.changes.set_index("system")
    for s in shown.index:
        assert changes.loc[s, "old_verdict"] == shown.loc[s, "verdict"]
        if pd.notna(shown.loc[s, "gap_pp"]):
            assert changes.loc[s, "old_gap_pp"] == pytest.approx(shown.loc[s, "gap_pp"])


def test_changes_are_measured_against_the_verdicts_of_the_same_question(tmp_path) -> None:
    """A Bayesian analysis of the same data but another comparison is not what a report of
    the frequentist analysis showed, so its verdicts are not the baseline."""
    from cuegap.audit import save_analysis
    from cuegap.changes import shown_records

    engine = make_engine(f"sqlite:///{tmp_path / 's.db'}")
    upgrade(engine)
    settings = AnalysisSettings().to_dict()

    def stored(kind: str, verdict: str, settings: dict) -> int:
        table = pd.DataFrame({"system": ["s"], "verdict": [verdict], "reason": ["why"]})
        return save_analysis(
            engine,
            kind=kind,
            status="ok",
            data_fingerprint="a" * 64,
            system_fingerprints={},
            settings=settings,
            tables={"verdicts": table},
        )

    freq = stored("frequentist", "inconclusive", settings)
    stored("bayesian", "flagged", {**settings, "implicit": ["puzzled", "easy"]})
    assert shown_records(engine, freq)["decision"].tolist() == ["inconclusive"]
    stored("bayesian", "passed", {**settings, "bayes": {"draws": 1000}})
    assert shown_records(engine, freq)["decision"].tolist() == ["passed"]
