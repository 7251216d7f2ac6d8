"""The QA loader's bulk paths store what its ordinary path does.

A large QA load on SQLite drops ``qa_response``'s secondary indexes and builds them once at
the end, and takes the ids of a fully stored batch from the id range instead of looking the
keys up. Its answers go to the driver as tuples, NULLs bound as the codec's markers. All of
it is forced on the small fixture (batches of 5, indexes deferred from the first record) and
compared with a store loaded with none of it (answers inserted through SQLAlchemy with real
NULLs, every key looked up), row for row, with the ledger checked by reading back.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import inspect, select, text

import cuegap.ingest._pass as ingest_pass
import cuegap.ingest._qa_loader as qa_loader
import cuegap.ingest._qa_rows as qa_rows
from cuegap.ingest import ingest_path
from cuegap.schema import IngestBatch, ledger, make_engine, upgrade

QA = Path(__file__).parent / "data" / "qa"
SECONDARY = {"ix_qa_response_agg", "ix_qa_response_batch", "ix_qa_response_run_id"}
FILES = ("bbq_small.jsonl", "mac_religion.jsonl", "bbq_results.jsonl", "bbq_results.jsonl")


def _dump(engine) -> dict[str, list[tuple]]:
    out = {}
    with engine.connect() as conn:
        for table, order in (
            ("qa_response", "source_line"),
            ("qa_response_factor", "response_id, name"),
            ("qa_tally", "system_id, item_id, strategy, answer"),
        ):
            rows = conn.execute(text(f"SELECT * FROM {table} ORDER BY {order}")).all()
            out[table] = [tuple(r) for r in rows]
    return out


def _load(engine, batch_size: int, after_each=lambda: None) -> list[tuple[int, int, int, int]]:
    sums = []
    for name in FILES:
        s = ingest_path(engine, QA / name, batch_size=batch_size)
        sums.append((s.read, s.stored, s.duplicate, s.quarantined))
        after_each()
    return sums


def test_bulk_qa_load_stores_the_same(tmp_path, monkeypatch) -> None:
    ordinary = make_engine(f"sqlite:///{tmp_path / 'ordinary.db'}")
    upgrade(ordinary)
    # The ordinary path: indexes in place, every key looked up after the insert.
    monkeypatch.setattr(ingest_pass, "DEFER_INDEXES_MIN", 10**9)
    monkeypatch.setattr(qa_loader, "write_answers", _lookup_only)
    want = _load(ordinary, 5)
    monkeypatch.undo()
    bulk = make_engine(f"sqlite:///{tmp_path / 'bulk.db'}")
    upgrade(bulk)
    monkeypatch.setattr(ingest_pass, "DEFER_INDEXES_MIN", 0)
    lookups: list[int] = []
    real = qa_rows.stored_by_key

    def counted(conn, table, key, cols, keys):
        lookups.append(len(keys))
        return real(conn, table, key, cols, keys)

    monkeypatch.setattr(qa_rows, "stored_by_key", counted)
    per_file: list[int] = []
    got = _load(bulk, 5, lambda: per_file.append(sum(lookups)))
    assert got == want
    # Fully stored batches look nothing up (in the answers file, only a batch holding a
    # line that repeats an earlier batch's does); the file that stores nothing new does.
    assert per_file[:2] == [0, 0] and per_file[2] < want[2][1] // 2
    assert per_file[3] - per_file[2] >= want[3][2]
    assert want[2][1] > 10 and want[3][1] == 0  # answers stored, then all duplicates
    assert _dump(bulk) == _dump(ordinary)
    assert {ix["name"] for ix in inspect(bulk).get_indexes("qa_response")} >= SECONDARY
    with bulk.connect() as conn:
        for b in conn.execute(select(IngestBatch.id)).scalars():
            assert ledger.latest_digest(conn, "batch", b) == ledger.object_digest(conn, "batch", b)


def _lookup_only(conn, rows):
    """The answers inserted through SQLAlchemy, NULL markers turned back into None."""
    from cuegap.ingest._loader import _insert_ignore
    from cuegap.schema import QAResponse

    marks = {"predicted": 0, "parse_reason": 0, "sample_id": 0, "parsed_index": ""}
    if conn.dialect.name != "sqlite":
        marks = {}
    dicts = []
    for row in sorted(rows.values()):
        d = dict(zip(qa_rows.QA_COLS, row, strict=True))
        for col, mark in marks.items():
            if type(d[col]) is type(mark) and d[col] == mark:
                d[col] = None
        dicts.append(d)
    if dicts:
        conn.execute(_insert_ignore(conn, QAResponse.__table__, ["response_key"]), dicts)
    cols = ("id", "content_hash", "batch_id", "source_line")
    found = qa_rows.stored_by_key(conn, QAResponse.__table__, "response_key", cols, list(rows))
    return {
        k: (r["id"], r["content_hash"], r["batch_id"], r["source_line"], r["source_path"])
        for k, r in found.items()
    }


def test_qa_indexes_left_dropped_are_rebuilt(engine) -> None:
    if engine.dialect.name != "sqlite":
        pytest.skip("indexes are only deferred on SQLite")
    ingest_path(engine, QA / "bbq_small.jsonl")
    with engine.begin() as conn:
        for name in SECONDARY:
            conn.execute(text(f"DROP INDEX {name}"))
    ingest_path(engine, QA / "bbq_results.jsonl")
    assert {ix["name"] for ix in inspect(engine).get_indexes("qa_response")} >= SECONDARY
