"""The QA answer tally: QA answers counted per system, item, strategy and answer.

Checked against truths outside its own code: answering every prompt three times alike
gives exactly three times the one-answer store's QA counts (and a tally no larger), the
migration counts what the answers say, and verify names a tally edited on its own.
"""

from __future__ import annotations

from pathlib import Path

import orjson
import pandas as pd
import pytest
from alembic import command
from sqlalchemy import func, select, text

from cuegap.compliance import verify
from cuegap.designs.qa._simulate import simulate_qa
from cuegap.ingest import ingest_path
from cuegap.schema import (
    QATally,
    compact_qa_tally,
    make_engine,
    qa_counts,
    qa_tally_mismatches,
    upgrade,
)
from cuegap.schema._migrate import alembic_config


def _repeated(src: Path, dst: Path, repeats: range) -> None:
    with dst.open("wb") as out:
        for k in repeats:
            for line in src.read_bytes().splitlines():
                rec = orjson.loads(line)
                rec["repeat"] = k
                out.write(orjson.dumps(rec) + b"\n")


@pytest.fixture(scope="module")
def sim(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("qa_tally")
    return root, simulate_qa(root / "sim", systems=2, templates_per_dimension=4, seed=5)


def _store(root: Path, name: str, sim, files: list[Path], engine=None, batch_size=2_000):
    engine = engine or make_engine(f"sqlite:///{root / name}")
    upgrade(engine)
    ingest_path(engine, sim.itembank_path)
    for f in files:
        ingest_path(engine, f, batch_size=batch_size)
    return engine


def _rows(engine) -> int:
    with engine.connect() as conn:
        return int(conn.execute(select(func.count()).select_from(QATally)).scalar())


def test_three_alike_answers_count_three_times(sim) -> None:
    root, result = sim
    one = _store(root, "one.db", result, [result.responses_path])
    three_file = root / "three.jsonl"
    _repeated(result.responses_path, three_file, range(3))
    three = _store(root, "three.db", result, [three_file])
    a, b = qa_counts(one), qa_counts(three)
    assert len(a) > 0
    keys = [c for c in a.columns if c != "n"]
    merged = a.merge(b, on=keys, suffixes=("_1", "_3"), how="outer", indicator=True)
    assert (merged["_merge"] == "both").all()
    assert (merged["n_3"] == 3 * merged["n_1"]).all()
    assert int(b["n"].sum()) == 3 * int(a["n"].sum())
    # merged across the loader's chunks: one row per key (here, per answer of the one-answer
    # store), whatever the number of repeats
    assert _rows(three) == _rows(one) == result.n_responses
    with three.connect() as conn:
        assert qa_tally_mismatches(conn) == 0


def test_repeat_files_merge_and_keep_counts(sim, engine) -> None:
    """On both backends (PostgreSQL merges with one DELETE ... RETURNING statement)."""
    root, result = sim
    files = []
    for k in (1, 2):
        files.append(root / f"repeat{k}.jsonl")
        _repeated(result.responses_path, files[-1], range(k, k + 1))
    engine = _store(root, "", result, [result.responses_path, *files], engine=engine)
    before = qa_counts(engine)
    with engine.connect() as conn:
        merged = select(func.count()).select_from(QATally).where(QATally.batch_id.is_(None))
        assert conn.execute(merged).scalar() > 0
        assert qa_tally_mismatches(conn) == 0
    with engine.connect() as conn:
        compact_qa_tally(conn, min_rows=0)
    with engine.connect() as conn:
        assert qa_tally_mismatches(conn) == 0
    pd.testing.assert_frame_equal(before, qa_counts(engine))


def test_migration_counts_the_stored_answers(sim) -> None:
    root, result = sim
    engine = _store(root, "migrate.db", result, [result.responses_path])
    before = qa_counts(engine)
    cfg = alembic_config(engine)
    with engine.connect() as conn:
        conn.exec_driver_sql("PRAGMA foreign_keys=OFF")
        cfg.attributes["connection"] = conn
        command.downgrade(cfg, "0008")
        conn.commit()
    with engine.connect() as conn:
        names = {r[0] for r in conn.execute(text("SELECT name FROM sqlite_master"))}
        assert "qa_tally" not in names
    upgrade(engine)
    with engine.connect() as conn:
        assert qa_tally_mismatches(conn) == 0
    pd.testing.assert_frame_equal(before, qa_counts(engine))


def test_verify_names_an_edited_qa_tally(sim) -> None:
    root, result = sim
    engine = _store(root, "verify.db", result, [result.responses_path])
    assert not any("tally" in p for p in verify(engine).problems)
    with engine.begin() as conn:
        conn.execute(
            text("UPDATE qa_tally SET n = n + 2 WHERE id = (SELECT min(id) FROM qa_tally)")
        )
    problems = verify(engine).problems
    assert any(p.startswith("QA answer tally: 1 answer count") for p in problems), problems
