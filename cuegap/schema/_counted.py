"""Tallies counted outside the store (``cuegap count``): which batches, and their seal.

A counted file is an ingest batch whose ``mapping`` names the engine that counted it and
the tally table it filled (``{"engine": "spark", "tally": "response_tally", ...}``). Its
tally rows carry its ``batch_id`` (the file in which each key was first counted) and are
never merged by tally compaction, so that the batch's ledger entry can seal them: the
``tally`` part of its digest covers those rows. A batch ingested by ``cuegap ingest`` has
no such part, so the digests of ingested batches do not change.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from typing import Any

from sqlalchemy import select
from sqlalchemy.engine import Connection
from sqlmodel import SQLModel

from cuegap.schema._tables import IngestBatch


def counted_tally(mapping: Any) -> str | None:
    """The tally table a batch's ``mapping`` says was counted into; None for an ingest."""
    if isinstance(mapping, Mapping) and mapping.get("engine") and mapping.get("tally"):
        return str(mapping["tally"])
    return None


def counted_batches(conn: Connection, tally: str | None = None) -> dict[int, dict[str, Any]]:
    """The counted batches (id -> mapping), in id order; only those of ``tally`` if given.

    Parameters
    ----------
    conn : Connection
        A connection to the store.
    tally : str, optional
        A tally table's name (``response_tally``).

    Returns
    -------
    dict
        Batch id to its mapping (engine, engine_version, size, tally, count run).
    """
    b = IngestBatch.__table__.c
    out = {}
    for batch_id, mapping in conn.execute(select(b.id, b.mapping).order_by(b.id)):
        name = counted_tally(mapping)
        if name is not None and (tally is None or name == tally):
            out[int(batch_id)] = dict(mapping)
    return out


def not_counted(table: Any, counted: list[int]) -> tuple[Any, str]:
    """A condition (SQLAlchemy, and SQL text) keeping a tally's rows that were not counted.

    The SQL text inlines the batch ids, which are integers read from the store.
    """
    if not counted:
        return table.c.id.isnot(None), "1 = 1"
    ids = ", ".join(str(int(i)) for i in counted)
    return (
        table.c.batch_id.is_(None) | table.c.batch_id.notin_(counted),
        f"(batch_id IS NULL OR batch_id NOT IN ({ids}))",
    )


def counted_tally_part(
    conn: Connection, record: Mapping[str, Any], part: Callable[..., str]
) -> dict[str, str]:
    """The ``tally`` ledger part of a counted batch (empty for an ingested one).

    Parameters
    ----------
    conn : Connection
        A connection to the store.
    record : mapping
        The batch's row.
    part : callable
        ``part(conn, table, where, order)``: the ledger's digest of rows.
    """
    name = counted_tally(record.get("mapping"))
    if name is None:
        return {}
    table = SQLModel.metadata.tables.get(name)
    if table is None or "batch_id" not in table.c:  # a mapping naming no tally table
        return {"tally": hashlib.sha256(f"no tally table {name!r}".encode()).hexdigest()}
    return {"tally": part(conn, table, table.c.batch_id == record["id"], table.c.id)}


__all__ = ["counted_batches", "counted_tally", "counted_tally_part", "not_counted"]
