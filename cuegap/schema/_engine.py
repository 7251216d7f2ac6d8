"""Engines and sessions: SQLite file by default, PostgreSQL by URL. No module-level engine."""

from __future__ import annotations

import os
import urllib.parse
from pathlib import Path

from sqlalchemy import event
from sqlalchemy.engine import Engine, make_url
from sqlmodel import create_engine

DEFAULT_DB_FILE = "cuegap.db"
ENV_VAR = "CUEGAP_DB"


def resolve_url(url: str | None = None) -> str:
    """Return the database URL to use.

    Parameters
    ----------
    url : str, optional
        An explicit URL (the CLI's ``--db``). A bare file path is taken as a SQLite file.
        When None, the ``CUEGAP_DB`` environment variable, else ``sqlite:///cuegap.db`` in
        the working directory.

    Returns
    -------
    str
        A SQLAlchemy URL. ``postgresql://`` URLs are mapped to the psycopg 3 driver.
    """
    url = url or os.environ.get(ENV_VAR) or f"sqlite:///{DEFAULT_DB_FILE}"
    if "://" not in url:
        url = f"sqlite:///{Path(url)}"
    if url.startswith(("postgresql://", "postgres://")):
        url = "postgresql+psycopg://" + url.split("://", 1)[1]
    return url


def _sqlite_pragmas(dbapi_connection, _record) -> None:
    cur = dbapi_connection.cursor()
    cur.execute("PRAGMA foreign_keys=ON")
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA synchronous=NORMAL")
    cur.execute("PRAGMA busy_timeout=30000")
    cur.execute("PRAGMA cache_size=-65536")  # 64 MiB: random-key index inserts stay in cache
    cur.close()


def _sqlite_read_only_pragmas(dbapi_connection, _record) -> None:
    cur = dbapi_connection.cursor()
    cur.execute("PRAGMA foreign_keys=ON")
    cur.execute("PRAGMA busy_timeout=30000")
    cur.execute("PRAGMA query_only=ON")
    cur.close()


def _read_only_uri(resolved: str) -> str | None:
    """A read-only SQLite ``file:`` URI for a store that this process cannot write, else None.

    A store in WAL mode needs its ``-shm`` file to be read: in a folder that cannot be
    written (and with no writer holding the store open, so no ``-shm`` file) it is opened
    ``immutable``, which reads the file as it is, without locks.
    """
    url = make_url(resolved)
    path = url.database
    if not path or path == ":memory:" or path.startswith("file:") or url.query:
        return None
    file = Path(path)
    if not file.is_file():
        return None
    folder = file.parent
    if os.access(file, os.W_OK) and os.access(folder, os.W_OK):
        return None
    params = {"mode": "ro"}
    if not os.access(folder, os.W_OK) and not Path(f"{file}-shm").exists():
        params["immutable"] = "1"
    return f"file:{urllib.parse.quote(str(file.resolve()))}?{urllib.parse.urlencode(params)}"


def make_engine(url: str | None = None, *, echo: bool = False) -> Engine:
    """Create an engine for a cuegap store.

    Parameters
    ----------
    url : str, optional
        Database URL or SQLite file path; see :func:`resolve_url`.
    echo : bool
        Log SQL statements.

    Returns
    -------
    Engine
        SQLite engines get foreign keys, WAL journaling and a busy timeout. A SQLite file
        that this process cannot write (the file or its folder is read-only) is opened
        read-only, so that it can still be read (``status``, ``verify``); writing to it
        raises "attempt to write a readonly database".

    Raises
    ------
    ValueError
        When the URL names a backend other than SQLite or PostgreSQL.
    """
    resolved = resolve_url(url)
    backend = make_url(resolved).get_backend_name()
    if backend not in ("sqlite", "postgresql"):
        raise ValueError(
            f"database URL must be sqlite:///FILE or postgresql://..., but got {resolved!r}"
        )
    engine = create_engine(resolved, echo=echo)
    if backend == "sqlite":
        read_only = _read_only_uri(resolved)
        if read_only:  # engine.url stays the store's path, for messages

            def connect_read_only(_dialect, _record, cargs: list, cparams: dict) -> None:
                cargs[:] = [read_only]
                cparams["uri"] = True

            event.listen(engine, "do_connect", connect_read_only)
        pragmas = _sqlite_read_only_pragmas if read_only else _sqlite_pragmas
        event.listen(engine, "connect", pragmas)
    return engine


def describe_url(engine: Engine) -> str:
    """The engine's URL with any password hidden, for messages."""
    return engine.url.render_as_string(hide_password=True)
