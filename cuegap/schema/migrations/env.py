"""Alembic environment: runs on the connection that cuegap.schema.upgrade hands over."""

from __future__ import annotations

from alembic import context
from sqlmodel import SQLModel

from cuegap.schema import _tables  # noqa: F401  (registers the tables on SQLModel.metadata)

config = context.config
target_metadata = SQLModel.metadata


def run_migrations_online() -> None:
    connection = config.attributes.get("connection")
    if connection is None:
        from cuegap.schema._engine import make_engine

        engine = make_engine(config.get_main_option("sqlalchemy.url"))
        with engine.begin() as conn:
            _run(conn)
        return
    _run(connection)


def _run(connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()


if context.is_offline_mode():
    raise SystemExit("cuegap migrations run online only (cuegap init)")
run_migrations_online()
