"""A batch's transaction whose foreign keys are checked once per batch, not once per row.

On SQLite, ``PRAGMA foreign_keys=ON`` (set on every connection by ``make_engine``) checks
each inserted row's parents: four look-ups per response and three per tally row, about
0.45 s of the 5.5 s of CPU a 305k-response ingest takes after start-up. A batch's rows
point at a handful of parents only (its run and ingest batch, the systems and items it
names), so the loader turns the per-row check off for the batch's transaction and checks
those parents itself, once, just before the commit. SQLite has one writer at a time: no
other connection can delete a parent between that check and the commit, so the guarantee
is the one the per-row check gives. A missing parent raises
:class:`sqlalchemy.exc.IntegrityError` and the batch rolls back, as before.

The pragma cannot change inside a transaction. It is set before the transaction begins
and read back; when it did not take effect, the per-row check simply stays on. It is
switched on again after the commit or roll-back, and a connection where that fails is
discarded rather than returned to the pool. PostgreSQL is unchanged: its foreign keys
are triggers, which an ordinary role cannot switch off.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator
from contextlib import contextmanager

from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import IntegrityError

# Ids per ``IN (...)`` list: below SQLite's oldest default limit of 999 variables.
_CHUNK = 900
_PARENT_TABLES = frozenset(("run", "ingest_batch", "system", "item", "qa_item", "qa_response"))
# Consecutive ids from this many on are checked with one ``BETWEEN`` (ids are unique).
_RANGE = 64


@contextmanager
def batch_transaction(engine: Engine) -> Iterator[tuple[Connection, bool]]:
    """One batch's transaction; on SQLite without the per-row foreign-key check.

    Parameters
    ----------
    engine : Engine
        The store.

    Yields
    ------
    tuple
        The connection, inside its transaction, and whether the per-row foreign-key check
        is off. When it is, the caller must call :func:`check_parents` with every parent
        id the batch wrote before the block ends.
    """
    with engine.connect() as conn:
        sqlite = conn.dialect.name == "sqlite"
        raw = conn.connection.driver_connection if sqlite else None
        touched = raw is not None and not raw.in_transaction
        off = False
        if touched:
            raw.execute("PRAGMA foreign_keys=OFF")
            off = raw.execute("PRAGMA foreign_keys").fetchone()[0] == 0
        try:
            with conn.begin():
                yield conn, off
        finally:
            if touched:
                try:
                    raw.execute("PRAGMA foreign_keys=ON")
                    on = raw.execute("PRAGMA foreign_keys").fetchone()[0] == 1
                except raw.Error:  # the DB-API's errors, as attributes of the connection
                    on = False
                if not on:
                    conn.invalidate()  # never hand a connection without the check back


def check_parents(conn: Connection, parents: dict[str, Collection[int]]) -> None:
    """Check that every parent row a batch points at exists (inside its transaction).

    Parameters
    ----------
    conn : Connection
        The batch's connection, inside :func:`batch_transaction`.
    parents : dict
        Parent table (``run``, ``ingest_batch``, ``system``, ``item``, ``qa_item``,
        ``qa_response``) -> the ids the batch's rows refer to.

    Raises
    ------
    sqlalchemy.exc.IntegrityError
        When an id has no row, as the per-row check would have raised; the batch's
        transaction then rolls back.
    ValueError
        For a table that is not a known parent.
    """
    for table, ids in parents.items():
        if table not in _PARENT_TABLES:
            raise ValueError(f"table must be one of {sorted(_PARENT_TABLES)}, but got {table!r}")
        ranges, single = _runs(sorted(set(ids)))
        for lo, hi in ranges:
            found = conn.exec_driver_sql(
                f"SELECT count(*) FROM {table} WHERE id BETWEEN ? AND ?", (lo, hi)
            ).scalar()
            if found != hi - lo + 1:
                _missing(table, [lo, hi])
        for i in range(0, len(single), _CHUNK):
            part = single[i : i + _CHUNK]
            marks = ", ".join("?" * len(part))
            found = conn.exec_driver_sql(
                f"SELECT count(*) FROM {table} WHERE id IN ({marks})", tuple(part)
            ).scalar()
            if found != len(part):
                _missing(table, part)


def _runs(ids: list[int]) -> tuple[list[tuple[int, int]], list[int]]:
    """Sorted distinct ids as ranges of at least ``_RANGE`` consecutive ids, and the rest
    (a QA batch's answers are one range of new ids; its items and systems are not)."""
    ranges: list[tuple[int, int]] = []
    single: list[int] = []
    start = 0
    for i in range(1, len(ids) + 1):
        if i == len(ids) or ids[i] != ids[i - 1] + 1:
            if i - start >= _RANGE:
                ranges.append((ids[start], ids[i - 1]))
            else:
                single.extend(ids[start:i])
            start = i
    return ranges, single


def _missing(table: str, part: list[int]) -> None:
    raise IntegrityError(
        f"SELECT count(*) FROM {table} WHERE id IN (...)",
        part,
        ValueError(
            f"FOREIGN KEY constraint failed: a row of this batch refers to a "
            f"{table} id that is not stored (one of {part[:5]})"
        ),
    )
