"""Driver-level bulk writes the response loaders share.

SQLAlchemy turns each row of an ``executemany`` into bound parameters one by one
(``construct_params``, type processing): for the loaders that was more time than the
insert itself. These helpers hand rows already built as tuples to the DB-API instead:
``executemany`` on SQLite, ``COPY`` on PostgreSQL. They run inside the caller's
transaction (the batch's, see :mod:`cuegap.ingest._batch_tx`), so a batch still commits or
rolls back as one, and the ledger still seals what it wrote.

On SQLite, NULLs in nullable columns are bound as cheap markers (``NULLIF(?, 0)`` for text,
``NULLIF(?, '')`` for other types), as :class:`cuegap.ingest._sql._Codec` describes;
:func:`sqlite_insert` writes the statement that reads them.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import String, Table
from sqlalchemy.engine import Connection

#: The ids of the rows an insert stored and the rows themselves, in id order.
Stored = tuple[list[int], list[tuple[Any, ...]]]


@dataclass(frozen=True, slots=True)
class KeyedTable:
    """A table whose rows are stored once per natural key, by :func:`insert_keyed`.

    Attributes
    ----------
    name : str
        The table (``response``, ``qa_response``).
    cols : tuple of str
        The inserted columns, in the order of the row tuples; the first is the natural key
        (unique), the table's ``id`` is not among them.
    sqlite_insert : str
        SQLite's ``INSERT OR IGNORE`` of those columns (see :func:`sqlite_insert`).
    """

    name: str
    cols: tuple[str, ...]
    sqlite_insert: str


def sqlite_insert(table: Table, cols: Sequence[str], *, ignore: bool = True) -> str:
    """SQLite's insert of ``cols`` of ``table``, reading the NULL markers of the codec.

    Parameters
    ----------
    table : Table
        The table written.
    cols : sequence of str
        Its columns, in the order of the row tuples.
    ignore : bool
        ``INSERT OR IGNORE`` (a row whose unique key is stored is skipped), else ``INSERT``.

    Returns
    -------
    str
        The statement, with ``NULLIF(?, 0)`` for a nullable text column, ``NULLIF(?, '')``
        for another nullable column and ``?`` for the rest.
    """

    def mark(name: str) -> str:
        col = table.c[name]
        if not col.nullable:
            return "?"
        text = isinstance(col.type, String) or isinstance(getattr(col.type, "impl", None), String)
        return "NULLIF(?, 0)" if text else "NULLIF(?, '')"

    verb = "INSERT OR IGNORE" if ignore else "INSERT"
    names = ", ".join(f'"{c}"' for c in cols)
    return f"{verb} INTO {table.name} ({names}) VALUES ({', '.join(mark(c) for c in cols)})"


def max_id(conn: Connection, table: str) -> int:
    """The largest ``id`` of ``table`` (0 when it is empty)."""
    return int(conn.exec_driver_sql(f"SELECT coalesce(max(id), 0) FROM {table}").scalar())


def insert_keyed(
    conn: Connection, target: KeyedTable, rows: Collection[tuple[Any, ...]], after_id: int
) -> tuple[int, Stored | None]:
    """Insert rows, skipping keys already stored (by an earlier pass or a concurrent one).

    Parameters
    ----------
    conn : Connection
        Inside the batch's transaction.
    target : KeyedTable
        The table and its column order.
    rows : collection of tuples
        In ``target.cols`` order, NULLs encoded with the dialect's codec.
    after_id : int
        The table's largest id before this insert (:func:`max_id`).

    Returns
    -------
    tuple
        The number of rows inserted, and the ids and rows stored in id order when they are
        known, else None. PostgreSQL returns them; on SQLite they are known when every row
        was stored and the ids are one range after ``after_id``: row i then has id
        ``after_id + 1 + i`` (ids are the rowid, which grows by one per insert, and a write
        holds the whole store).
    """
    if not rows:
        return 0, ([], [])
    raw = conn.connection.driver_connection
    if conn.dialect.name != "postgresql":
        cur = raw.cursor()
        try:
            cur.executemany(target.sqlite_insert, rows)
            inserted = cur.rowcount
        finally:
            cur.close()
        if inserted == 0:
            return 0, ([], [])
        if inserted == len(rows) and max_id(conn, target.name) == after_id + inserted:
            return inserted, (list(range(after_id + 1, after_id + 1 + inserted)), list(rows))
        return inserted, None
    cols = ", ".join(f'"{c}"' for c in target.cols)
    key, stage = target.cols[0], f"_{target.name}_stage"
    with raw.cursor() as cur:
        cur.execute(
            f"CREATE TEMP TABLE IF NOT EXISTS {stage} ON COMMIT DELETE ROWS AS "
            f"SELECT {cols} FROM {target.name} WITH NO DATA"
        )
        with cur.copy(f"COPY {stage} ({cols}) FROM STDIN") as copy:
            for row in rows:
                copy.write_row(row)
        # In key order: concurrent batches then lock their keys in one order, so that
        # overlapping ingests wait for each other instead of deadlocking.
        cur.execute(
            f"INSERT INTO {target.name} ({cols}) SELECT {cols} FROM {stage} "
            f"ORDER BY {key} ON CONFLICT ({key}) DO NOTHING RETURNING id, {key}"
        )
        ids = dict((k, rid) for rid, k in cur.fetchall())
        cur.execute(f"DELETE FROM {stage}")
    pairs = sorted(((ids[row[0]], row) for row in rows if row[0] in ids), key=lambda p: p[0])
    return len(ids), ([i for i, _ in pairs], [row for _, row in pairs])


def insert_rows(
    conn: Connection,
    table: str,
    cols: tuple[str, ...],
    rows: list[dict[str, Any]] | list[tuple[Any, ...]],
    *,
    conflict: str | None = None,
) -> None:
    """Insert rows (dicts by ``cols``, or tuples in ``cols`` order) through the driver.

    With ``conflict`` (a unique column), rows whose key is stored already are skipped;
    without, PostgreSQL takes the rows by ``COPY``. Values are bound as given: no NULL
    markers (see :func:`sqlite_insert` for those).
    """
    if not rows:
        return
    if isinstance(rows[0], dict):
        rows = [tuple(row[c] for c in cols) for row in rows]  # type: ignore[index]
    names = ", ".join(f'"{c}"' for c in cols)
    cur = conn.connection.driver_connection.cursor()
    try:
        if conn.dialect.name == "postgresql" and conflict is None:
            with cur.copy(f"COPY {table} ({names}) FROM STDIN") as copy:
                for row in rows:
                    copy.write_row(row)
        elif conn.dialect.name == "postgresql":
            marks = ", ".join(["%s"] * len(cols))
            cur.executemany(
                f"INSERT INTO {table} ({names}) VALUES ({marks}) "
                f"ON CONFLICT ({conflict}) DO NOTHING",
                rows,
            )
        else:
            verb = "INSERT OR IGNORE" if conflict else "INSERT"
            marks = ", ".join(["?"] * len(cols))
            cur.executemany(f"{verb} INTO {table} ({names}) VALUES ({marks})", rows)
    finally:
        cur.close()


__all__ = ["KeyedTable", "Stored", "insert_keyed", "insert_rows", "max_id", "sqlite_insert"]
