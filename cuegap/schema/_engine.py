"""Engines and sessions: SQLite file by default, PostgreSQL by URL. No module-level engine."""

from __future__ import annotations

import os
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
        SQLite engines get foreign keys, WAL journaling and a busy timeout.

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
        event.listen(engine, "connect", _sqlite_pragmas)
    return engine


def describe_url(engine: Engine) -> str:
    """The engine's URL with any password hidden, for messages."""
    return engine.url.render_as_string(hide_password=True)
