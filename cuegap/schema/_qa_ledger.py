"""Ledger parts of revision 0007: QA banks and responses, and tidy demographic axes.

Each part is added to an object's digest only when it holds rows, so that the digests of
objects sealed before revision 0007 (a dilemma batch has no QA responses) do not change.
Rows added to an object later make the part appear, and deleting all of them makes it
disappear: either changes the digest.

``individual_axes`` covers the ``individual_axis`` rows of a dilemma bank by their
*difference* from the ``gender`` and ``race`` columns of ``item_individual`` (rows that are
not a copy of those columns, and copies that are missing). Revision 0007 fills the table
with exactly those copies, so a bank sealed before it keeps its digest; any edit, deletion
or insertion of an axis row makes the difference non-empty. The columns themselves are
covered by the ``individuals`` part.
"""

from __future__ import annotations

import hashlib
from typing import Any

import orjson
from sqlalchemy import select
from sqlalchemy.engine import Connection

from cuegap.schema._chunks import driver_chunks
from cuegap.schema._qa_tables import (
    IndividualAxis,
    QAItem,
    QAOption,
    QAOptionAxis,
)
from cuegap.schema._tables import Item, ItemIndividual

EMPTY = hashlib.sha256().hexdigest()
QA_RESPONSE_COLUMNS = (
    "id", "response_key", "content_hash", "run_id", "batch_id", "system_id", "item_id",
    "repeat", "raw_text", "predicted", "parsed_index", "answer", "parse_status",
    "parse_reason", "sample_id", "source_line",
)  # fmt: skip
_MIRRORED = ("gender", "race")


def _digest_query(conn: Connection, sql: str, params: tuple[Any, ...]) -> str:
    """SHA-256 over the rows of a raw query, fetched with the driver's cursor in chunks."""
    h = hashlib.sha256()
    for rows in driver_chunks(conn, sql, params, 10_000):
        h.update(orjson.dumps([list(r) for r in rows], default=str))
    return h.hexdigest()


def qa_batch_parts(conn: Connection, batch_id: int) -> dict[str, str]:
    """The QA parts of an ingest batch: its QA responses and their factors (if any)."""
    cols = ", ".join(f'"{c}"' for c in QA_RESPONSE_COLUMNS)
    responses = _digest_query(
        conn, f"SELECT {cols} FROM qa_response WHERE batch_id = ? ORDER BY id", (batch_id,)
    )
    if responses == EMPTY:
        return {}
    factors = _digest_query(
        conn,
        "SELECT f.id, f.response_id, f.name, f.value FROM qa_response_factor f "
        "JOIN qa_response r ON r.id = f.response_id WHERE r.batch_id = ? ORDER BY f.id",
        (batch_id,),
    )
    return {"qa_responses": responses, "qa_factors": factors}


def qa_bank_parts(conn: Connection, bank_id: int, part: Any) -> dict[str, str]:
    """The QA parts of an item bank (its items, options and option axes), if any.

    ``part(conn, table, where, order)`` is the ledger's row digest.
    """
    item, opt, axis = QAItem.__table__, QAOption.__table__, QAOptionAxis.__table__
    items = part(conn, item, item.c.bank_id == bank_id, item.c.id)
    if items == EMPTY:
        return {}
    item_ids = select(item.c.id).where(item.c.bank_id == bank_id)
    option_ids = select(opt.c.id).where(opt.c.item_id.in_(item_ids))
    return {
        "qa_items": items,
        "qa_options": part(conn, opt, opt.c.item_id.in_(item_ids), opt.c.id),
        "qa_option_axes": part(conn, axis, axis.c.option_id.in_(option_ids), axis.c.id),
    }


def individual_axes_part(conn: Connection, bank_id: int) -> dict[str, str]:
    """The ``individual_axes`` part of a dilemma bank (see the module docstring)."""
    ind, ax = ItemIndividual.__table__, IndividualAxis.__table__
    in_bank = select(Item.id).where(Item.bank_id == bank_id)
    mirror = {
        (r.id, a, getattr(r, a))
        for r in conn.execute(
            select(ind.c.id, ind.c.gender, ind.c.race).where(ind.c.item_id.in_(in_bank))
        )
        for a in _MIRRORED
    }
    ind_ids = select(ind.c.id).where(ind.c.item_id.in_(in_bank))
    stored = {
        (r.individual_id, r.axis, r.value)
        for r in conn.execute(
            select(ax.c.individual_id, ax.c.axis, ax.c.value).where(ax.c.individual_id.in_(ind_ids))
        )
    }
    extra, missing = sorted(stored - mirror), sorted(mirror - stored)
    if not extra and not missing:
        return {}
    text_ = orjson.dumps({"extra": extra, "missing": missing})
    return {"individual_axes": hashlib.sha256(text_).hexdigest()}
