"""The store: migrations match the SQLModel tables; URLs resolve as documented."""

from __future__ import annotations

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import inspect
from sqlmodel import SQLModel

from cuegap.schema import current_revision, head_revision, make_engine, resolve_url, upgrade


def test_migrations_create_exactly_the_tables(engine) -> None:
    """Alembic's autogenerate finds no difference between the migrated store and the models."""
    with engine.connect() as conn:
        diff = compare_metadata(MigrationContext.configure(conn), SQLModel.metadata)
    assert diff == []
    names = set(inspect(engine).get_table_names())
    assert {
        "system",
        "item_bank",
        "dilemma",
        "item",
        "item_individual",
        "run",
        "response",
        "ingest_batch",
        "quarantine",
        "annotation",
    } <= names
    assert current_revision(engine) == head_revision()


def test_upgrade_is_idempotent(db_url: str) -> None:
    eng = make_engine(db_url)
    assert current_revision(eng) is None
    assert upgrade(eng) == (None, head_revision())
    assert upgrade(eng) == (head_revision(), head_revision())


def test_resolve_url(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CUEGAP_DB", raising=False)
    assert resolve_url() == "sqlite:///cuegap.db"
    assert resolve_url("x/y.db") == "sqlite:///x/y.db"
    assert resolve_url("postgresql://u@h/db") == "postgresql+psycopg://u@h/db"
    monkeypatch.setenv("CUEGAP_DB", "sqlite:////tmp/env.db")
    assert resolve_url() == "sqlite:////tmp/env.db"
    assert resolve_url("sqlite:///explicit.db") == "sqlite:///explicit.db"


def test_unknown_backend_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="must be sqlite:///FILE or postgresql://"):
        make_engine("mysql://u@h/db")


def test_models_never_import_the_store() -> None:
    """cuegap.models is pure statistics: no database, ingest or template imports."""
    import ast
    from pathlib import Path

    banned = (
        "sqlalchemy",
        "sqlmodel",
        "jinja2",
        "cuegap.schema",
        "cuegap.ingest",
        "cuegap.reports",
    )
    for path in (Path(__file__).parent.parent / "cuegap" / "models").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else ([node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            )
            for name in names:
                assert not name.startswith(banned), f"{path.name} imports {name}"


def test_a_store_from_a_newer_cuegap_is_refused_clearly(tmp_path) -> None:
    from sqlalchemy import text
    from typer.testing import CliRunner

    from cuegap.cli import app

    db = tmp_path / "newer.db"
    eng = make_engine(f"sqlite:///{db}")
    upgrade(eng)
    with eng.begin() as conn:
        conn.execute(text("UPDATE alembic_version SET version_num = '9999'"))
    with pytest.raises(ValueError, match=r"revision 9999, which this cuegap .* does not know"):
        upgrade(eng)
    eng.dispose()
    for args in (["init"], ["tables"]):
        res = CliRunner().invoke(app, ["--db", str(db), *args])
        assert res.exit_code == 2, res.output
        assert "written by a newer cuegap; upgrade cuegap" in res.output
