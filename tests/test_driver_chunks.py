"""Large ledger reads in bounded memory: on PostgreSQL through a server-side cursor.

A plain psycopg cursor pulls a whole result into the client on ``execute``; a seed-003
ingest pass of 974,400 transcripts took the ingest process to 3.9 GiB while the ledger
hashed its rows. These tests pin the server-side cursor (visible in ``pg_cursors`` while
the rows are read) and that both backends give every row, in order, in chunks.
"""

from __future__ import annotations

from sqlalchemy import text
from sqlalchemy.engine import Engine

from cuegap.schema._chunks import driver_chunks

ROWS = 2_345


def _fill(engine: Engine) -> None:
    with engine.begin() as conn:
        conn.execute(text("CREATE TABLE chunked (id INTEGER PRIMARY KEY, body TEXT NOT NULL)"))
        conn.execute(
            text("INSERT INTO chunked (id, body) VALUES (:id, :body)"),
            [{"id": i, "body": f"row {i} " + "x" * (i % 50)} for i in range(ROWS)],
        )


def test_every_row_in_order_in_chunks(engine: Engine) -> None:
    _fill(engine)
    with engine.connect() as conn:
        chunks = list(
            driver_chunks(
                conn, "SELECT id, body FROM chunked WHERE id >= ? ORDER BY id", (5,), 1000
            )
        )
    assert [len(c) for c in chunks] == [1000, 1000, ROWS - 5 - 2000]
    rows = [tuple(r) for c in chunks for r in c]
    assert rows == [(i, f"row {i} " + "x" * (i % 50)) for i in range(5, ROWS)]


def test_postgresql_reads_through_a_server_side_cursor(engine: Engine) -> None:
    if engine.dialect.name != "postgresql":
        return  # SQLite's cursor steps through the result as it is fetched
    _fill(engine)
    with engine.connect() as conn:
        chunks = driver_chunks(conn, "SELECT id FROM chunked ORDER BY id", (), 100)
        first = next(chunks)
        dbapi = conn.connection.dbapi_connection
        with dbapi.cursor() as probe:  # same session: its open cursors
            probe.execute("SELECT name FROM pg_cursors")
            open_cursors = [r[0] for r in probe.fetchall()]
        assert len(first) == 100
        assert any(n.startswith("cuegap_chunks_") for n in open_cursors), open_cursors
        assert sum(len(c) for c in chunks) == ROWS - 100
        with dbapi.cursor() as probe:  # closed when the rows are read
            probe.execute("SELECT count(*) FROM pg_cursors WHERE name LIKE 'cuegap_chunks_%'")
            assert probe.fetchone()[0] == 0


def test_postgresql_autocommit_connection_holds_the_cursor(engine: Engine) -> None:
    if engine.dialect.name != "postgresql":
        return
    _fill(engine)
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        got = [r[0] for c in driver_chunks(conn, "SELECT id FROM chunked ORDER BY id", (), 500)
               for r in c]  # fmt: skip
    assert got == list(range(ROWS))
