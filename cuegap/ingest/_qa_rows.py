"""How the QA loader writes one batch's answers, prompt factors and tally rows.

Through the dilemma loader's driver-level path (:mod:`cuegap.ingest._bulk`): each answer is
one tuple in ``QA_COLS`` order, bound by the DB-API (``executemany`` on SQLite, ``COPY``
into a staging table on PostgreSQL), not by SQLAlchemy's per-row parameter processing,
which was the largest part of a QA ingest's writing. Rows are inserted in key order (as
they always were, so the ids they get are those they always got) inside the batch's
transaction (:func:`cuegap.ingest._batch_tx.batch_transaction`).
"""

from __future__ import annotations

from operator import itemgetter
from typing import Any

from sqlalchemy.engine import Connection

from cuegap.ingest._bulk import KeyedTable, insert_keyed, insert_rows, max_id, sqlite_insert
from cuegap.ingest._sql import stored_by_key
from cuegap.schema import QAResponse

#: The inserted columns of ``qa_response``, in the order of a row tuple (its key first).
QA_COLS = (
    "response_key", "content_hash", "run_id", "batch_id", "system_id", "item_id", "repeat",
    "raw_text", "predicted", "parsed_index", "answer", "parse_status", "parse_reason",
    "sample_id", "source_line",
)  # fmt: skip
CONTENT, SYSTEM, ITEM = (QA_COLS.index(c) for c in ("content_hash", "system_id", "item_id"))
ANSWER, LINE = QA_COLS.index("answer"), QA_COLS.index("source_line")
_BATCH = QA_COLS.index("batch_id")
_TABLE = KeyedTable("qa_response", QA_COLS, sqlite_insert(QAResponse.__table__, QA_COLS))
_FACTOR_COLS = ("response_id", "name", "value")
_TALLY_COLS = ("batch_id", "system_id", "item_id", "strategy", "answer", "n")

#: What is known of a stored answer: id, content hash, ingest batch, line, and the path of
#: the run that stored it (None for an answer this transaction stored).
StoredAnswer = tuple[int, str, int, int, "str | None"]


def write_answers(conn: Connection, rows: dict[str, tuple[Any, ...]]) -> dict[str, StoredAnswer]:
    """Insert new answers; what is stored under every key, by this insert or before.

    Parameters
    ----------
    conn : Connection
        Inside the batch's transaction.
    rows : dict
        Response key -> the answer's row tuple in ``QA_COLS`` order, NULLs encoded with the
        dialect's codec (:class:`cuegap.ingest._sql._Codec`).

    Returns
    -------
    dict
        Response key -> :data:`StoredAnswer`. Keys the insert stored come from the insert
        itself (PostgreSQL returns their ids; on SQLite they are one new range when every
        row was stored); the others (a re-ingest, an overlap) are looked up.
    """
    if not rows:
        return {}
    ordered = sorted(rows.values(), key=itemgetter(0))
    _, written = insert_keyed(conn, _TABLE, ordered, max_id(conn, "qa_response"))
    out: dict[str, StoredAnswer] = {}
    if written is not None:
        for rid, row in zip(*written, strict=True):
            out[row[0]] = (rid, row[CONTENT], row[_BATCH], row[LINE], None)
    if len(out) < len(rows):
        cols = ("id", "content_hash", "batch_id", "source_line")
        table = QAResponse.__table__
        missing = [k for k in rows if k not in out]
        for k, r in stored_by_key(conn, table, "response_key", cols, missing).items():
            out[k] = (r["id"], r["content_hash"], r["batch_id"], r["source_line"], r["source_path"])
    return out


def write_factors(conn: Connection, factors: list[tuple[int, str, str]]) -> None:
    """Insert prompt factors, as (answer id, name, value) tuples, in the order given."""
    insert_rows(conn, "qa_response_factor", _FACTOR_COLS, factors)


def write_tally(conn: Connection, tally: list[dict[str, Any]]) -> None:
    """Insert tally rows (:func:`cuegap.schema.qa_tally_rows`), in the order given."""
    insert_rows(conn, "qa_tally", _TALLY_COLS, tally)


__all__ = [
    "ANSWER",
    "CONTENT",
    "ITEM",
    "LINE",
    "QA_COLS",
    "SYSTEM",
    "StoredAnswer",
    "write_answers",
    "write_factors",
    "write_tally",
]
