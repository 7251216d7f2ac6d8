"""One consistent view of the store for a reader that runs several queries.

An analysis runs half a dozen aggregation queries. Each on its own connection would see
the store as it was when *that* query started, so an ingest committing in between would
leave the decision counts from one state and the parse-status counts from another, and
the analysis's data fingerprint would describe no state the store was ever in.
:func:`read_snapshot` runs them all in one read transaction instead: REPEATABLE READ on
PostgreSQL, a deferred ``BEGIN`` on SQLite (in WAL mode, every read of the transaction
sees the database as of its first read). Ingests keep running meanwhile: neither backend
makes a reader block a writer.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy.engine import Connection, Engine


@contextmanager
def read_snapshot(engine: Engine) -> Iterator[Connection]:
    """A connection whose every query sees the store as of its first query.

    Parameters
    ----------
    engine : Engine
        A cuegap store.

    Yields
    ------
    Connection
        In a read-only REPEATABLE READ transaction on PostgreSQL, in a read transaction
        on SQLite; rolled back on exit (it writes nothing).
    """
    with engine.connect() as conn:
        if engine.dialect.name == "postgresql":
            conn.execution_options(isolation_level="REPEATABLE READ")  # reset on release
            conn.begin()
            conn.exec_driver_sql("SET TRANSACTION READ ONLY")
        else:  # pysqlite opens transactions only before writes: open the read one here
            conn.exec_driver_sql("BEGIN")
        try:
            yield conn
        finally:
            conn.rollback()


@contextmanager
def connected(bind: Engine | Connection) -> Iterator[Connection]:
    """``bind`` itself when it is a connection (a snapshot), else a new one from the engine."""
    if isinstance(bind, Connection):
        yield bind
        return
    with bind.connect() as conn:
        yield conn
