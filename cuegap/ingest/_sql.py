"""The SQL of the response loaders: column order, value encoding, bulk and idempotent writes.

On SQLite, NULLs and booleans are bound as cheap integers (binding Python's None and bool
is several times slower than binding an int in the sqlite3 module): see :class:`_Codec`.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from sqlalchemy import insert, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection

from cuegap.ingest._bulk import KeyedTable, Stored, insert_keyed
from cuegap.ingest._summary import utcnow
from cuegap.schema import Quarantine, Response, Run, ledger, max_response_id, tally_new_responses

# Insert order of the response columns: per-record values first, then the columns derived
# from (response text, probe, item), which come from one cached tuple.
_ROW_COLS = (
    "response_key",
    "run_id",
    "batch_id",
    "system_id",
    "item_id",
    "condition",
    "difficulty",
    "probe",
    "individual",
    "consequences",
    "prompt_variant",
    "repeat",
    "raw_text",
    "prompt",
    "sample_id",
    "runner_result",
    "source_line",
)
_DERIVED_COLS = (
    "content_hash",
    "parsed_answer",
    "selected_individual",
    "parse_status",
    "abstained",
    "assignment",
    "recovered",
    "puzzle_correct",
)
_RESPONSE_COLS = _ROW_COLS + _DERIVED_COLS
_LINE = _RESPONSE_COLS.index("source_line")
_BATCH = _RESPONSE_COLS.index("batch_id")
_SYSTEM = _RESPONSE_COLS.index("system_id")
_ITEM = _RESPONSE_COLS.index("item_id")
_CONTENT = _RESPONSE_COLS.index("content_hash")


@dataclass(frozen=True, slots=True)
class _Codec:
    """How NULLs and booleans are passed to the driver (see the module docstring).

    On SQLite, nullable columns are written as ``NULLIF(?, 0)`` (text) or ``NULLIF(?, '')``
    (boolean) and get 0 or '' for NULL; an integer never equals a text value in SQLite, so
    no real value is mistaken for the marker.
    """

    null: Any  # NULL in a nullable text column
    null_bool: Any  # NULL in a nullable boolean column
    true: Any
    false: Any


_SQLITE_CODEC = _Codec(0, "", 1, 0)
_PLAIN_CODEC = _Codec(None, None, True, False)
_SECONDARY = [ix for ix in Response.__table__.indexes if not ix.unique]
_NULLABLE_TEXT = frozenset(
    c.name
    for c in Response.__table__.columns
    if c.nullable and c.name in _RESPONSE_COLS and c.name != "puzzle_correct"
)


def _col(values: dict[str, Any]) -> dict[str, Any]:
    """Map attribute names to column names where they differ (System.meta -> metadata)."""
    if "meta" in values:
        values = dict(values)
        values["metadata"] = values.pop("meta")
    return values


def _insert_ignore(conn: Connection, table: Any, conflict: list[str]) -> Any:
    if conn.dialect.name == "postgresql":
        return postgresql.insert(table).on_conflict_do_nothing(index_elements=conflict)
    return sqlite.insert(table).on_conflict_do_nothing(index_elements=conflict)


def key_lookup(table: Any, key: str, columns: tuple[str, ...], keys: list[str]) -> Any:
    """The SELECT of :func:`stored_by_key` for one chunk of keys (no join: see there)."""
    cols = [table.c[c] for c in dict.fromkeys((key, *columns, "run_id"))]
    return select(*cols).where(table.c[key].in_(keys))


def stored_by_key(
    conn: Connection, table: Any, key: str, columns: tuple[str, ...], keys: list[str]
) -> dict[str, dict[str, Any]]:
    """The stored rows of natural keys: ``columns`` of ``table`` where ``key`` is one of
    ``keys``, plus ``run_id`` and ``source_path`` (the path of the run that stored it).

    The run's path comes from a second, small query by run id, not a join: on a store with
    a few large runs, SQLite's planner took the join through ``run_id`` (its sampled
    statistics, ``analysis_limit``, put a run at a thousand rows), reading every row of
    every earlier run for each lookup, so a pass slowed with the store's size (an 8M
    conversation benchmark fell from 3,000 to 450 transcripts/s on its second system).

    Parameters
    ----------
    conn : Connection
    table : Table
        ``response``, ``qa_response`` or ``conversation``.
    key : str
        Its natural-key column.
    columns : tuple of str
        The columns wanted besides the key and ``run_id``.
    keys : list of str
        The keys looked up (any number; queried 900 at a time).

    Returns
    -------
    dict
        Key -> the row as a dict: the key, ``columns``, ``run_id`` and ``source_path``.
    """
    out: dict[str, dict[str, Any]] = {}
    for i in range(0, len(keys), 900):
        for row in conn.execute(key_lookup(table, key, columns, keys[i : i + 900])):
            out[row._mapping[key]] = dict(row._mapping)
    run_ids = sorted({row["run_id"] for row in out.values()})
    paths: dict[int, str] = {}
    run = Run.__table__
    for i in range(0, len(run_ids), 900):
        stmt = select(run.c.id, run.c.source_path).where(run.c.id.in_(run_ids[i : i + 900]))
        paths.update(conn.execute(stmt).all())  # type: ignore[arg-type]
    for row in out.values():
        row["source_path"] = paths.get(row["run_id"])
    return out


def _existing(conn: Connection, keys: list[str]) -> dict[str, tuple[str, int, str, int]]:
    """Stored (content hash, line, source path, ingest batch) of response keys.

    A key stored by the current ingest pass in an earlier transaction has the pass's batch
    id and another line: a repeat (or a conflict) within the file, counted as such.
    """
    cols = ("content_hash", "source_line", "batch_id")
    rows = stored_by_key(conn, Response.__table__, "response_key", cols, keys)
    return {
        k: (r["content_hash"], r["source_line"], r["source_path"], r["batch_id"])
        for k, r in rows.items()
    }


def _intact_batches_with_quarantine(conn: Connection, sha: str) -> list[int]:
    """Earlier batches of file ``sha`` holding quarantined lines whose content still
    matches their ledger entry (a tampered one is left for ``cuegap verify`` to name)."""
    ids = conn.execute(
        select(Quarantine.batch_id).where(Quarantine.source_sha256 == sha).distinct()
    ).scalars()
    return [b for b in sorted(ids) if ledger.unchanged_since(conn, "batch", b)]


def _upsert_quarantine(conn: Connection) -> Any:
    """Insert quarantine rows; a line quarantined before is reopened with the new reason."""
    ins = (postgresql if conn.dialect.name == "postgresql" else sqlite).insert(Quarantine.__table__)
    return ins.on_conflict_do_update(
        index_elements=["source_sha256", "line_no"],
        set_={
            "batch_id": ins.excluded.batch_id,
            "field": ins.excluded.field,
            "reason": ins.excluded.reason,
            "raw": ins.excluded.raw,
            "resolved_at": None,
            "resolved_batch_id": None,
        },
    )


def _resolve_quarantine(conn: Connection, sha: str, lines: list[int], batch_id: int) -> None:
    """Mark the quarantined lines of file ``sha`` that are now stored as resolved.

    The rows stay (the history of what went wrong); status and reports count only the
    unresolved ones.
    """
    now = utcnow()
    for i in range(0, len(lines), 900):
        conn.execute(
            update(Quarantine)
            .where(
                Quarantine.source_sha256 == sha,
                Quarantine.line_no.in_(lines[i : i + 900]),
                Quarantine.resolved_at.is_(None),
            )
            .values(resolved_at=now, resolved_batch_id=batch_id)
        )


_Stored = Stored  # ids and their rows, in id order


def _write_responses(
    conn: Connection, rows: Collection[tuple[Any, ...]]
) -> tuple[int, _Stored | None]:
    """Insert new responses, skipping keys stored meanwhile by a concurrent ingest.

    ``rows`` are tuples in ``_RESPONSE_COLS`` order, encoded with the dialect's
    :class:`_Codec`. Bypasses SQLAlchemy's per-row parameter processing: the DBAPI's
    executemany on SQLite, COPY into a staging table on PostgreSQL.

    Returns
    -------
    tuple
        The number of rows inserted, and their ids and rows in id order when the ids are
        known (for :class:`cuegap.ingest._digest.ResponseDigest`), else None.
    """
    if not rows:
        return 0, ([], [])
    after_id = max_response_id(conn)
    inserted, stored = _insert_responses(conn, rows, after_id)
    if inserted:  # counted in the same transaction, so the tally never lags the responses
        tally_new_responses(conn, {row[_BATCH] for row in rows}, after_id)
    return inserted, stored


def _insert_responses(
    conn: Connection, rows: Collection[tuple[Any, ...]], after_id: int
) -> tuple[int, _Stored | None]:
    return insert_keyed(conn, _RESPONSE_TABLE, rows, after_id)


def _sqlite_value(col: str) -> str:
    if col == "puzzle_correct":
        return "NULLIF(?, '')"
    return "NULLIF(?, 0)" if col in _NULLABLE_TEXT else "?"


_SQLITE_INSERT = (
    f"INSERT OR IGNORE INTO response ({', '.join(_RESPONSE_COLS)}) "
    f"VALUES ({', '.join(_sqlite_value(c) for c in _RESPONSE_COLS)})"
)
_RESPONSE_TABLE = KeyedTable("response", _RESPONSE_COLS, _SQLITE_INSERT)


def insert_bank(
    conn: Connection, path: Any, bank: dict, sha: str, summary: Any, extra: dict[str, Any]
) -> int | None:
    """Insert an item bank's row, or note that the same bank is already stored.

    Parameters
    ----------
    conn : Connection
        Inside the bank's transaction.
    path : Path
        The bank's file (stored resolved).
    bank : dict
        ``name`` and optional ``description``, ``source``.
    sha : str
        The bank's content digest.
    summary : IngestSummary
        Its ``duplicate`` and ``note`` are set when the bank is already stored.
    extra : dict
        Further columns of the design (e.g. the dilemma bank's ``genders``, ``races``).

    Returns
    -------
    int or None
        The new bank's id; None when the same bank is already stored.

    Raises
    ------
    IngestError
        When a bank of that name with other content is stored.
    """
    from cuegap.ingest._records import IngestError
    from cuegap.ingest._validate import storable
    from cuegap.schema import ItemBank

    existing = conn.execute(
        select(ItemBank.id, ItemBank.sha256).where(ItemBank.name == bank["name"])
    ).first()
    if existing is not None:
        if existing.sha256 != sha:
            raise IngestError(
                f"{path}: item bank {bank['name']!r} is already in the store with different "
                "content; give the changed bank a new name"
            )
        summary.duplicate = summary.read
        summary.note = f"item bank {bank['name']!r} already in the store; nothing new"
        return None
    row = {
        "name": bank["name"],
        "description": bank.get("description"),
        "source": bank.get("source"),
        **extra,
        "source_path": storable(str(path.resolve())),
        "sha256": sha,
        "ingested_at": utcnow(),
    }
    return conn.execute(insert(ItemBank).returning(ItemBank.id), row).scalar_one()
