"""Whether the ingest pass behind a batch marked "running" is still alive.

A pass marks its ingest batch "running" when it begins and "completed" or "failed" when it
ends; a pass killed in between (``kill -9``, a power cut) leaves it "running" for ever,
its committed rows unsealed. To tell such a batch from one that another process is
writing right now, every pass holds a lock named by its batch for as long as it runs,
which the operating system or the server drops when the process dies:

- PostgreSQL: a session-level advisory lock (the two-key form: ``_PG_CLASS`` and the
  batch id) on a connection of its own;
- SQLite: an ``fcntl`` lock on byte ``batch_id`` of the file ``<store>-ingest.lock``
  beside the store (created on first use; it stays, empty).

The lock is taken before the batch's row is committed, so no other process ever sees a
"running" batch whose owner has not locked it yet. Within one process the batches held
are also kept in a set: ``fcntl`` locks belong to the process (another thread's test of
one would succeed), and closing any descriptor of the lock file would drop them all, so
the file is opened once per process and never closed.
"""

from __future__ import annotations

import os
import threading
import urllib.parse
from pathlib import Path

from sqlalchemy import text
from sqlalchemy.engine import Connection, Engine

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: liveness of other processes is unknown
    fcntl = None  # type: ignore[assignment]

_PG_CLASS = 0x6375_6769  # "cugi": advisory locks of live ingest passes (two-key form)
_mutex = threading.Lock()
_held: set[tuple[str, int]] = set()  # (store, batch id) held by this process
_files: dict[str, int] = {}  # lock file path -> descriptor, open for the process's life


_PG_CALL = "SELECT {}(CAST(:c AS integer), CAST(:b AS integer))"


_PG_HELD = (
    "SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND granted "
    "AND objsubid = 2 AND classid::bigint = :c AND objid::bigint = :b "
    "AND database = (SELECT oid FROM pg_database WHERE datname = current_database()))"
)


def _pg(conn: Connection, function: str, batch_id: int) -> bool:
    params = {"c": _PG_CLASS, "b": batch_id}
    return bool(conn.execute(text(_PG_CALL.format(function)), params).scalar())


def _store(engine: Engine | Connection) -> str:
    path = lock_file(engine)
    return str(path) if path is not None else engine.engine.url.render_as_string()


def lock_file(engine: Engine | Connection) -> Path | None:
    """The lock file of a SQLite store file (None for PostgreSQL and in-memory stores).

    Beside the store's real path (links resolved), so that every process that opens the
    store, by whatever path, tests the same file.
    """
    url = engine.engine.url
    if url.get_backend_name() != "sqlite" or url.database in (None, "", ":memory:"):
        return None
    if url.database.startswith("file:"):  # a URI (read-only stores): its path part
        path = urllib.parse.unquote(url.database[5:].split("?")[0])
        return Path(f"{Path(path).resolve()}-ingest.lock")
    return Path(f"{Path(url.database).resolve()}-ingest.lock")


def _descriptor(path: Path) -> int | None:
    """The process's descriptor of a lock file; None when it cannot be opened."""
    key = str(path.resolve())
    with _mutex:
        fd = _files.get(key)
        if fd is None:
            try:
                fd = os.open(key, os.O_RDWR | os.O_CREAT, 0o644)
            except OSError:  # a read-only folder: nothing can ingest there anyway
                return None
            _files[key] = fd
        return fd


class BatchLock:
    """The lock an ingest pass holds on its batch while it runs (see the module docstring).

    Parameters
    ----------
    engine : Engine
        The store.
    batch_id : int
        The pass's ``ingest_batch`` id; its row may still be uncommitted.
    """

    def __init__(self, engine: Engine, batch_id: int) -> None:
        self.key = (_store(engine), batch_id)
        self.batch_id = batch_id
        self._conn: Connection | None = None
        self._fd: int | None = None
        with _mutex:
            _held.add(self.key)
        if engine.dialect.name == "postgresql":
            self._conn = engine.connect()
            _pg(self._conn, "pg_advisory_lock", batch_id)
            self._conn.commit()  # a session lock outlives the transaction
        elif fcntl is not None and (path := lock_file(engine)) is not None:
            self._fd = _descriptor(path)
            if self._fd is not None:
                try:
                    fcntl.lockf(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, batch_id)
                except OSError:  # held elsewhere: an id reused after a restore; harmless
                    self._fd = None

    def release(self) -> None:
        """Drop the lock (the pass has committed its final status)."""
        try:
            if self._conn is not None:
                try:
                    _pg(self._conn, "pg_advisory_unlock", self.batch_id)
                    self._conn.commit()
                finally:
                    self._conn.close()  # a broken connection drops its session lock anyway
                    self._conn = None
            if self._fd is not None and fcntl is not None:
                fcntl.lockf(self._fd, fcntl.LOCK_UN, 1, self.batch_id)
                self._fd = None
        finally:
            with _mutex:
                _held.discard(self.key)


def is_alive(conn: Connection, batch_id: int) -> bool | None:
    """Whether a live ingest pass holds ``batch_id``.

    Parameters
    ----------
    conn : Connection
        A connection to the store (it takes no lock).
    batch_id : int
        An ``ingest_batch`` id.

    Returns
    -------
    bool or None
        True when a pass (in this process or another) holds it; False when none does, so
        a batch still marked "running" was interrupted; None when this cannot be told
        (a SQLite store whose lock file cannot be opened, or no ``fcntl``).
    """
    with _mutex:
        if (_store(conn), batch_id) in _held:
            return True
    if conn.dialect.name == "postgresql":  # read from pg_locks: takes nothing itself
        return bool(conn.execute(text(_PG_HELD), {"c": _PG_CLASS, "b": batch_id}).scalar())
    path = lock_file(conn)
    if path is None:  # in memory: no other process can reach the store
        return False
    if fcntl is None or not path.exists():
        return None if fcntl is None else False  # no pass ever locked a batch of it
    fd = _descriptor(path)
    if fd is None:
        return None
    try:
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, batch_id)
    except OSError:
        return True
    fcntl.lockf(fd, fcntl.LOCK_UN, 1, batch_id)
    return False
