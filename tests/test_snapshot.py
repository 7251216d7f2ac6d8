"""An analysis reads one snapshot of the store, however ingests interleave (real servers).

An ingest that commits between two of the analysis's aggregation queries must be in all
of the count tables or in none, so that the data fingerprint describes one state of the
store. The ingest is started from an SQLAlchemy event right after the analysis's first
query, so the interleaving is exact rather than left to timing.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import event

from cuegap.designs.dilemma._analysis import analyze
from cuegap.designs.dilemma._analysis_settings import AnalysisSettings
from cuegap.designs.dilemma._analysis_tables import fingerprints, load_store_data
from cuegap.designs.dilemma._report import build_report
from cuegap.designs.dilemma.simulate import simulate, synthetic_item_bank
from cuegap.ingest import ingest_path
from cuegap.schema import make_engine, upgrade


@pytest.fixture(scope="module")
def halves(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("snapshot")
    bank = synthetic_item_bank(seed=5, n_dilemmas=10)
    sim = simulate(root / "data", systems=2, seed=5, item_bank=bank)
    header, *lines = sim.responses_path.read_text().splitlines()
    # The first system's responses before the analysis, the second's during it.
    first = [ln for ln in lines if "sim-system-01" in ln]
    second = [ln for ln in lines if "sim-system-01" not in ln]
    (root / "a.jsonl").write_text("\n".join([header, *first]) + "\n")
    (root / "b.jsonl").write_text("\n".join([header, *second]) + "\n")
    return {"bank": sim.itembank_path, "a": root / "a.jsonl", "b": root / "b.jsonl"}


def _ingest_after_first_select(engine, db_url: str, path: Path) -> list[int]:
    """Ingest ``path`` from another connection right after ``engine``'s next SELECT."""
    done: list[int] = []

    def after(conn, cursor, statement, *args) -> None:
        if done or not statement.lstrip().upper().startswith("SELECT"):
            return
        other = make_engine(db_url)
        try:
            done.append(ingest_path(other, path).stored)
        finally:
            other.dispose()

    event.listen(engine, "after_cursor_execute", after)
    return done


def test_analysis_sees_one_snapshot(db_url: str, halves) -> None:
    engine = make_engine(db_url)
    upgrade(engine)
    ingest_path(engine, halves["bank"])
    ingest_path(engine, halves["a"])
    before = load_store_data(engine)
    done = _ingest_after_first_select(engine, db_url, halves["b"])
    during = load_store_data(engine)
    assert done and done[0] > 0  # the second system's responses went in meanwhile
    assert fingerprints(during) == fingerprints(before)
    assert set(during.abstention["system"]) == {"sim-system-01"}
    after = load_store_data(engine)
    assert fingerprints(after)[0] != fingerprints(before)[0]
    assert set(after.abstention["system"]) == {"sim-system-01", "sim-system-02"}
    engine.dispose()


def test_report_store_counts_from_one_snapshot(db_url: str, halves) -> None:
    """The report's provenance and store status agree: both before or both after an ingest."""
    engine = make_engine(db_url)
    upgrade(engine)
    ingest_path(engine, halves["bank"])
    ingest_path(engine, halves["a"])
    analyze(engine, AnalysisSettings())  # the report below reads this analysis
    done: list[int] = []

    def after(conn, cursor, statement, *args) -> None:
        if done or "run.runner_version" not in statement:
            return  # wait for provenance's read of the runs, then ingest before the rest
        other = make_engine(db_url)
        try:
            done.append(ingest_path(other, halves["b"]).stored)
        finally:
            other.dispose()

    event.listen(engine, "after_cursor_execute", after)
    data = build_report(engine)
    assert done and done[0] > 0
    runs = data.provenance.runs
    assert int(runs["responses"].sum()) == data.store.responses
    assert data.store.runs == len(runs)
    engine.dispose()
