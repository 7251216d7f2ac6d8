"""Read a large query's rows in chunks through the driver, in bounded memory.

The ledger hashes every row an ingest batch stored, and ``cuegap verify`` hashes them
again; a batch of a million conversations is gigabytes of raw text. SQLite's cursor steps
through the result as it is fetched. A plain psycopg cursor does not: ``execute`` pulls
the whole result into the client (libpq's result buffer), so a seed-003 pass of 974,400
transcripts took the ingest process to 3.9 GiB resident. On PostgreSQL the rows are read
through a server-side (named) cursor instead, which sends each ``fetchmany`` chunk on
request.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

from sqlalchemy.engine import Connection

_NAMES = itertools.count()


def driver_chunks(
    conn: Connection, sql: str, params: tuple[Any, ...], size: int
) -> Iterator[list[tuple[Any, ...]]]:
    """The rows of ``sql`` (``?`` placeholders) in lists of at most ``size``.

    Parameters
    ----------
    conn : Connection
        A SQLAlchemy connection on SQLite or PostgreSQL (psycopg 3).
    sql : str
        The query, with ``?`` placeholders for ``params``.
    params : tuple
    size : int
        Rows per chunk; on PostgreSQL also the rows the server sends per round trip.

    Yields
    ------
    list of tuple
        The next rows, never empty.
    """
    if conn.dialect.name == "postgresql":
        dbapi: Any = conn.connection.dbapi_connection
        # in a transaction (the driver opens one, as for any query) the cursor lives in it;
        # an autocommit connection has none, so the cursor is declared WITH HOLD instead
        name = f"cuegap_chunks_{next(_NAMES)}"
        cur = dbapi.cursor(name=name, withhold=bool(getattr(dbapi, "autocommit", False)))
        sql = sql.replace("?", "%s")
    else:
        cur = conn.connection.dbapi_connection.cursor()  # type: ignore[union-attr]
    try:
        cur.execute(sql, params)
        while rows := cur.fetchmany(size):
            yield rows
    finally:
        cur.close()
