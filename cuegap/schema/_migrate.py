"""Create or upgrade a store with the packaged Alembic migrations."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import inspect
from sqlalchemy.engine import Connection, Engine

MIGRATIONS = Path(__file__).parent / "migrations"


def alembic_config(engine: Engine | None = None) -> Config:
    """An Alembic config pointing at the packaged migrations (no alembic.ini needed)."""
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    if engine is not None:
        cfg.set_main_option(
            "sqlalchemy.url", engine.url.render_as_string(hide_password=False).replace("%", "%%")
        )
    return cfg


def head_revision() -> str:
    """The newest migration revision shipped with this version of cuegap."""
    head = ScriptDirectory.from_config(alembic_config()).get_current_head()
    assert head is not None
    return head


def known_revision(revision: str) -> bool:
    """True when ``revision`` is one of the migrations shipped with this cuegap."""
    script = ScriptDirectory.from_config(alembic_config())
    return any(rev.revision == revision for rev in script.walk_revisions())


def newer_store_error(revision: str) -> ValueError:
    """The error for a store at a revision this cuegap does not ship."""
    return ValueError(
        f"the store is at schema revision {revision}, which this cuegap (schema "
        f"{head_revision()}) does not know: it was written by a newer cuegap; upgrade cuegap "
        "to use it"
    )


def current_revision(engine: Engine) -> str | None:
    """The revision a store is at, or None for an empty (uninitialised) database."""
    with engine.connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()


def upgrade(engine: Engine, revision: str = "head") -> tuple[str | None, str]:
    """Upgrade a store to ``revision``; returns (revision before, revision after).

    Raises
    ------
    ValueError
        When the store's revision is not one this cuegap ships (a newer cuegap wrote it).
    """
    before = current_revision(engine)
    if before is not None and not known_revision(before):
        raise newer_store_error(before)
    cfg = alembic_config(engine)
    with engine.connect() as conn:
        if conn.dialect.name == "sqlite":
            # Python's sqlite3 runs DDL outside any transaction unless one is open: a store
            # killed while being created was left half-built ("table item_bank already
            # exists" ever after). One explicit transaction makes creation atomic.
            conn.exec_driver_sql("BEGIN IMMEDIATE")
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, revision)
        _restore_indexes(conn)
        conn.commit()
    return before, current_revision(engine) or ""


def _restore_indexes(conn: Connection) -> None:
    """Create the ``response`` indexes an interrupted bulk ingest left dropped (SQLite
    drops them during large loads and rebuilds them at the end)."""
    if conn.dialect.name != "sqlite" or not inspect(conn).has_table("response"):
        return
    from cuegap.schema._tables import Response

    for ix in Response.__table__.indexes:
        ix.create(conn, checkfirst=True)
