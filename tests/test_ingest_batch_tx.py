"""A batch's foreign keys, checked once per batch on SQLite, protect as the per-row check did.

``cuegap.ingest._batch_tx`` turns SQLite's per-row foreign-key check off for a batch's
transaction and checks the batch's parents once before the commit. These tests hold the
three promises that makes: a batch pointing at a missing parent still fails and stores
nothing (on both backends, where PostgreSQL keeps its per-row check); the check is back on
for every connection afterwards, after a failed batch too; and an ingest leaves a store
whose every foreign key holds.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy import func, insert, select, text
from sqlalchemy.exc import IntegrityError

import cuegap.ingest._responses as responses
from cuegap.ingest import ingest_path
from cuegap.ingest._batch_tx import batch_transaction, check_parents
from cuegap.schema import IngestBatch, Response, ResponseTally
from tests.conftest import DATA


def _foreign_keys(engine) -> list[int]:
    """``PRAGMA foreign_keys`` of three connections checked out at once (the pool's)."""
    conns = [engine.connect() for _ in range(3)]
    try:
        return [c.exec_driver_sql("PRAGMA foreign_keys").scalar() for c in conns]
    finally:
        for c in conns:
            c.close()


def _count(engine, table) -> int:
    with engine.connect() as conn:
        return conn.execute(select(func.count()).select_from(table)).scalar_one()


def test_the_row_check_is_off_inside_and_on_after(engine) -> None:
    with batch_transaction(engine) as (conn, unchecked):
        if engine.dialect.name == "sqlite":
            assert unchecked
            assert conn.exec_driver_sql("PRAGMA foreign_keys").scalar() == 0
        else:
            assert not unchecked  # PostgreSQL keeps its per-row check
    if engine.dialect.name == "sqlite":
        assert _foreign_keys(engine) == [1, 1, 1]


def test_a_missing_parent_fails_the_batch_and_stores_nothing(engine) -> None:
    row = {
        "run_id": 999,  # no such run
        "source_path": "x",
        "source_sha256": "0" * 64,
        "format": "generic",
        "status": "running",
        "lines_read": 0,
        "stored": 0,
        "duplicate": 0,
        "quarantined": 0,
        "started_at": datetime(2025, 1, 1, tzinfo=UTC),
    }
    with pytest.raises(IntegrityError), batch_transaction(engine) as (conn, unchecked):
        conn.execute(insert(IngestBatch), row)  # PostgreSQL refuses it here
        assert unchecked
        check_parents(conn, {"run": [999]})
    assert _count(engine, IngestBatch) == 0
    if engine.dialect.name == "sqlite":
        assert _foreign_keys(engine) == [1, 1, 1]  # back on after the roll-back


def test_existing_parents_pass_and_unknown_tables_are_refused(engine) -> None:
    with batch_transaction(engine) as (conn, _):
        check_parents(conn, {"run": [], "item": set()})
        with pytest.raises(ValueError, match="table must be one of"):
            check_parents(conn, {"response": [1]})


def test_the_row_check_is_back_on_after_an_error(engine) -> None:
    with pytest.raises(RuntimeError, match="mid-batch"), batch_transaction(engine):
        raise RuntimeError("mid-batch")
    if engine.dialect.name == "sqlite":
        assert _foreign_keys(engine) == [1, 1, 1]


def test_an_ingest_pointing_at_a_missing_item_fails_as_before(
    engine, tiny_bank, monkeypatch
) -> None:
    """The loader's rows name an item id that is not stored: the ingest fails, stores no
    response and no tally row, on both backends (the per-row check did this before)."""
    ingest_path(engine, tiny_bank)
    real = responses._ResponseLoader._load_bank

    def shifted(self, conn, name):
        bank = real(self, conn, name)
        for info in bank[1].values():
            info.id += 10_000
        return bank

    monkeypatch.setattr(responses._ResponseLoader, "_load_bank", shifted)
    with pytest.raises(Exception, match=r"(?i)foreign key"):
        ingest_path(engine, DATA / "tiny_responses.jsonl")
    assert _count(engine, Response) == 0
    assert _count(engine, ResponseTally) == 0
    if engine.dialect.name == "sqlite":
        assert _foreign_keys(engine) == [1, 1, 1]


def test_an_ingest_leaves_every_foreign_key_holding(engine, tiny_bank, tmp_path: Path) -> None:
    ingest_path(engine, tiny_bank)
    header = {"format": "cuegap-responses", "version": 1, "item_bank": "tiny"}
    lines = [json.dumps(header)] + [
        json.dumps(
            {
                "system": f"s{i % 3}",
                "item_id": "direct-d1",
                "probe": "what_if",
                "individual": "ABCD"[i % 4],
                "repeat": i,
                "response": "option1",
            }
        )
        for i in range(40)
    ]
    path = tmp_path / "r.jsonl"
    path.write_text("\n".join(lines) + "\n{not json}\n")
    s = ingest_path(engine, path, batch_size=7)
    assert (s.stored, s.quarantined) == (40, 1)
    if engine.dialect.name == "sqlite":
        with engine.connect() as conn:
            assert conn.execute(text("PRAGMA foreign_key_check")).all() == []
        assert _foreign_keys(engine) == [1, 1, 1]
