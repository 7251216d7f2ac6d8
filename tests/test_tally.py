"""The response tally: counts per distinct answer, kept at ingest, read by every query.

The tally is checked against truths that do not come from its own code: a store whose every
prompt was answered three times alike must give exactly three times the one-answer store's
counts (and the same Neutral baselines), a migrated store must count what the responses
say, and verify must name a tally edited on its own.
"""

from __future__ import annotations

from pathlib import Path

import orjson
import pandas as pd
import pytest
from alembic import command
from sqlalchemy import func, select, text

from cuegap.compliance import verify
from cuegap.designs.dilemma.simulate import simulate, synthetic_item_bank
from cuegap.ingest import ingest_path
from cuegap.schema import (
    ResponseTally,
    abstention_counts,
    compact_tally,
    current_revision,
    decision_counts,
    make_engine,
    recovery_counts,
    status_counts,
    tally_mismatches,
    upgrade,
)
from cuegap.schema._migrate import alembic_config

COUNTS = {
    "decision": (decision_counts, ["favor", "favor_trials", "against", "against_trials"]),
    "status": (status_counts, ["yes", "trials"]),
    "abstention": (abstention_counts, ["responses", "abstained", "ok", "invalid", "empty"]),
    "recovery": (recovery_counts, ["responses", "slots", "parsable", "correct"]),
}


def _repeated(src: Path, dst: Path, repeats: range) -> None:
    """The same answers again under repeat indexes ``repeats`` (header kept)."""
    lines = src.read_bytes().splitlines()
    with dst.open("wb") as out:
        out.write(lines[0] + b"\n")
        for k in repeats:
            for line in lines[1:]:
                rec = orjson.loads(line)
                rec["repeat"] = k
                rec["sample_id"] = f"{rec.get('sample_id')}-r{k}"
                out.write(orjson.dumps(rec) + b"\n")


@pytest.fixture(scope="module")
def sim(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("tally")
    # 20 dilemmas (8,720 responses) are enough: each repeat file still brings thousands of
    # repeat rows, so the loader merges them across files and chunks as at full size.
    bank = synthetic_item_bank(seed=11, n_dilemmas=20)
    result = simulate(root / "sim", systems=2, seed=11, item_bank=bank)
    return root, result


def _store(root: Path, name: str, sim, files: list[Path], batch_size: int = 5_000, engine=None):
    engine = engine or make_engine(f"sqlite:///{root / name}")
    upgrade(engine)
    ingest_path(engine, sim.itembank_path)
    for f in files:
        ingest_path(engine, f, batch_size=batch_size)
    return engine


def _tally_rows(engine) -> tuple[int, int]:
    with engine.connect() as conn:
        rows = conn.execute(select(func.count()).select_from(ResponseTally)).scalar()
        n = conn.execute(select(func.sum(ResponseTally.n))).scalar()
    return int(rows), int(n)


def test_three_alike_answers_count_three_times(sim) -> None:
    root, result = sim
    one = _store(root, "one.db", result, [result.responses_path])
    three_file = root / "three.jsonl"
    _repeated(result.responses_path, three_file, range(3))
    three = _store(root, "three.db", result, [three_file], batch_size=2_000)
    for name, (query, cols) in COUNTS.items():
        a, b = query(one), query(three)
        keys = [c for c in a.columns if c not in cols and a[c].dtype != "int64"]
        merged = a.merge(b, on=keys, suffixes=("_1", "_3"), how="outer", indicator=True)
        assert (merged["_merge"] == "both").all(), name
        for col in cols:
            assert (merged[f"{col}_3"] == 3 * merged[f"{col}_1"]).all(), (name, col)
    responses = len(result.responses_path.read_bytes().splitlines()) - 1
    rows, n = _tally_rows(three)
    assert n == 3 * responses
    # first answers keep a row each; repeats that answer alike share one row per key, merged
    # across the loader's chunks: twice the one-answer tally, whatever the number of repeats
    assert rows == 2 * _tally_rows(one)[0] < 3 * responses
    with three.connect() as conn:
        assert tally_mismatches(conn) == 0


def test_repeats_over_several_files_merge_and_keep_counts(sim, engine) -> None:
    """On both backends (PostgreSQL merges with one DELETE ... RETURNING statement)."""
    root, result = sim
    files = []
    for k in (1, 2, 3):
        files.append(root / f"repeat{k}.jsonl")
        _repeated(result.responses_path, files[-1], range(k, k + 1))
    engine = _store(root, "files.db", result, [result.responses_path, *files], engine=engine)
    before = decision_counts(engine)
    with engine.connect() as conn:
        merged_rows = conn.execute(
            select(func.count()).select_from(ResponseTally).where(ResponseTally.batch_id.is_(None))
        ).scalar()
        assert merged_rows > 0  # the loader merged repeat rows of different files
        assert tally_mismatches(conn) == 0
    # forcing a merge of whatever is left changes no count
    with engine.connect() as conn:
        compact_tally(conn, min_rows=0)
    with engine.connect() as conn:
        assert tally_mismatches(conn) == 0
    pd.testing.assert_frame_equal(before, decision_counts(engine))


def test_migration_counts_the_stored_responses(sim) -> None:
    root, result = sim
    engine = _store(root, "migrate.db", result, [result.responses_path])
    before = {name: q(engine) for name, (q, _) in COUNTS.items()}
    cfg = alembic_config(engine)
    with engine.connect() as conn:
        conn.exec_driver_sql("PRAGMA foreign_keys=OFF")
        cfg.attributes["connection"] = conn
        command.downgrade(cfg, "0007")
        conn.commit()
    with engine.connect() as conn:
        assert "response_tally" not in {
            r[0] for r in conn.execute(text("SELECT name FROM sqlite_master"))
        }
    assert upgrade(engine) == ("0007", current_revision(engine))
    with engine.connect() as conn:
        assert tally_mismatches(conn) == 0
    for name, (q, _) in COUNTS.items():
        pd.testing.assert_frame_equal(before[name], q(engine), obj=name)


def test_verify_names_an_edited_tally(sim) -> None:
    root, result = sim
    engine = _store(root, "verify.db", result, [result.responses_path])
    assert not any("tally" in p for p in verify(engine).problems)
    with engine.begin() as conn:
        conn.execute(
            text("DELETE FROM response_tally WHERE id = (SELECT max(id) FROM response_tally)")
        )
    problems = verify(engine).problems
    assert any(p.startswith("response tally: 1 distinct answer") for p in problems), problems
