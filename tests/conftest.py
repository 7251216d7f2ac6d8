"""Shared fixtures: real stores on SQLite files and on a real PostgreSQL server.

Set ``CUEGAP_TEST_PG_URL`` (e.g. ``postgresql://cuegap@localhost/postgres``) to run every
store test against PostgreSQL too; each test gets a fresh database. With
``CUEGAP_REQUIRE_PG=1`` (as ``.ci/run`` sets) a missing server fails instead of skipping.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

# pytest-xdist's workers export COLUMNS=80, which Rich would read once, at import, and
# keep: a test's CliRunner(env={"COLUMNS": ...}) could then not widen the console. Rich
# reads COLUMNS live when it is not set at import, as in a serial run.
os.environ.pop("COLUMNS", None)
os.environ.pop("LINES", None)

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import Engine, make_url

from cuegap.schema import make_engine, upgrade

DATA = Path(__file__).parent / "data"
PG_URL = os.environ.get("CUEGAP_TEST_PG_URL")
REQUIRE_PG = os.environ.get("CUEGAP_REQUIRE_PG") == "1"


def _pg_admin_url() -> str:
    url = make_url(PG_URL.replace("postgresql://", "postgresql+psycopg://", 1))
    return url.render_as_string(hide_password=False)


@contextmanager
def pg_database() -> Iterator[str]:
    """Create a fresh PostgreSQL database on the test server; yields its URL, drops it after.

    Skips the test when no server is configured (fails instead with CUEGAP_REQUIRE_PG=1).
    """
    if not PG_URL:
        if REQUIRE_PG:
            pytest.fail("CUEGAP_REQUIRE_PG=1 but CUEGAP_TEST_PG_URL is not set")
        pytest.skip("no PostgreSQL server: set CUEGAP_TEST_PG_URL")
    name = f"cuegap_test_{uuid.uuid4().hex[:12]}"
    admin = create_engine(_pg_admin_url(), isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    url = make_url(_pg_admin_url()).set(database=name).render_as_string(hide_password=False)
    try:
        yield url
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A URL of a fresh, empty database on each backend."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'store.db'}"
        return
    with pg_database() as url:
        yield url


@pytest.fixture
def engine(db_url: str) -> Iterator[Engine]:
    """An initialised (migrated) store on each backend."""
    eng = make_engine(db_url)
    upgrade(eng)
    yield eng
    eng.dispose()


@pytest.fixture
def tiny_bank() -> Path:
    """A hand-written two-dilemma item bank (see tests/data/tiny_bank.json)."""
    return DATA / "tiny_bank.json"


def _pdf_problem() -> str | None:
    """Why WeasyPrint cannot render PDFs here (its system libraries are missing), else None."""
    try:
        import weasyprint  # noqa: F401  (loads Pango through cffi at import)
    except OSError as exc:
        return (
            f"WeasyPrint cannot load Pango ({str(exc).splitlines()[0]}); "
            "apt-get install libpango-1.0-0 libpangoft2-1.0-0 fonts-dejavu-core"
        )
    return None


PDF_PROBLEM = _pdf_problem()


def need_pdf() -> None:
    """Skip a test that renders PDF where Pango is missing (fail with CUEGAP_REQUIRE_BROWSER=1)."""
    if PDF_PROBLEM is not None:
        if os.environ.get("CUEGAP_REQUIRE_BROWSER") == "1":
            pytest.fail(f"CUEGAP_REQUIRE_BROWSER=1 but {PDF_PROBLEM}")
        pytest.skip(PDF_PROBLEM)


def pytest_report_header(config: pytest.Config) -> list[str]:
    """Say up front which optional system components this run has (see docs/testing.md)."""
    import shutil

    def have(ok: bool) -> str:
        return "yes" if ok else "no (their tests are skipped)"

    return [
        f"cuegap: PostgreSQL server: {have(bool(PG_URL))}; Pango for PDF: "
        f"{have(PDF_PROBLEM is None)}; chromium: {have(bool(shutil.which('chromium')))}; "
        f"poppler: {have(bool(shutil.which('pdftotext')))}"
    ]


@contextmanager
def store_copy(url: str, tmp_path: Path) -> Iterator[str]:
    """A fresh copy of a store (a file copy on SQLite, ``CREATE DATABASE ... TEMPLATE`` on
    PostgreSQL); yields its URL and drops it after."""
    import shutil

    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        db = tmp_path / f"copy-{uuid.uuid4().hex[:8]}.db"
        shutil.copy(parsed.database, db)
        yield f"sqlite:///{db}"
        return
    name = f"cuegap_copy_{uuid.uuid4().hex[:10]}"
    admin = create_engine(_pg_admin_url(), isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}" TEMPLATE "{parsed.database}"'))
    try:
        yield parsed.set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


@contextmanager
def restored(root: Path) -> Iterator[None]:
    """Put a folder back as it was: files made inside are removed, changed ones restored."""
    import shutil

    saved = {p: p.read_bytes() for p in root.rglob("*") if p.is_file() and not p.is_symlink()}
    try:
        yield
    finally:
        for p in sorted(root.rglob("*"), reverse=True):
            if p.is_symlink() or (p.is_file() and p not in saved):
                p.unlink()
            elif p.is_dir() and not any(q.is_relative_to(p) for q in saved):
                shutil.rmtree(p)
        for p, data in saved.items():
            if not p.exists() or p.read_bytes() != data:
                p.parent.mkdir(parents=True, exist_ok=True)
                p.write_bytes(data)
