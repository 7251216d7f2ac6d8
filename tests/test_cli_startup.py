"""The CLI starts fast: ``cuegap --help`` and ``--version`` import only typer, rich and the
command modules, never the store's stack (SQLAlchemy, SQLModel, Alembic) or the statistics
stack (pandas, NumPy), which the commands load when they run.

Each check runs in a fresh interpreter: pytest's own process has imported everything already.
The error handling that no longer imports those packages up front (``friendly``) is checked
with the real exception classes.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import typer

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("sqlalchemy", "sqlmodel", "alembic", "pandas", "numpy", "scipy", "pymc", "jinja2")
"""Packages a command may need when it runs, but ``--help`` and ``--version`` never do."""


def _run(code: str) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a fresh interpreter importing this checkout's cuegap; it prints the
    heavy packages it ended up importing, one per line, after a ``--- imported`` line."""
    tail = (
        "\nimport sys\nprint('--- imported')\n"
        f"print('\\n'.join(m for m in {HEAVY!r} if m in sys.modules))\n"
    )
    path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    env = {**os.environ, "PYTHONPATH": path, "COLUMNS": "100"}
    return subprocess.run(
        [sys.executable, "-c", code + tail], capture_output=True, text=True, env=env, check=True
    )


def _imported(result: subprocess.CompletedProcess[str]) -> list[str]:
    return result.stdout.split("--- imported\n", 1)[1].split()


def test_import_loads_no_heavy_package() -> None:
    result = _run("import cuegap.cli")
    assert _imported(result) == []


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--help"], "Usage: cuegap [OPTIONS] COMMAND [ARGS]..."),
        (["--version"], "cuegap 0.1.0"),
        (["ingest", "--help"], "--format"),
        (["status", "--help"], "Summarise the store"),
    ],
)
def test_help_and_version_load_no_heavy_package(args: list[str], expected: str) -> None:
    code = (
        "from cuegap.cli import app\n"
        "try:\n"
        f"    app({args!r}, prog_name='cuegap')\n"
        "except SystemExit as exc:\n"
        "    assert exc.code in (0, None), exc.code\n"
    )
    result = _run(code)
    assert expected in result.stdout
    assert _imported(result) == []


def test_a_command_that_runs_still_loads_what_it_needs(tmp_path: Path) -> None:
    """The lazy imports happen: ``init`` creates a store through SQLAlchemy and Alembic."""
    db = tmp_path / "store.db"
    code = (
        "from cuegap.cli import app\n"
        "try:\n"
        f"    app(['--db', {f'sqlite:///{db}'!r}, 'init'], prog_name='cuegap')\n"
        "except SystemExit as exc:\n"
        "    assert exc.code in (0, None), exc.code\n"
    )
    result = _run(code)
    assert "Created store" in result.stdout
    assert {"sqlalchemy", "alembic", "sqlmodel"} <= set(_imported(result))


def test_format_names_are_the_registry_keys() -> None:
    """``--format``'s help lists the names from a constant, not from the registry: the two
    must not drift (same names, same order)."""
    from cuegap.format_names import FORMAT_NAMES
    from cuegap.ingest import READERS, known_formats

    assert tuple(READERS) == FORMAT_NAMES
    assert known_formats() == ", ".join(READERS)


def _failure(exc: BaseException, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    """The exit code and stderr of a ``friendly`` command that raises ``exc``."""
    from cuegap.cli.common import friendly

    @friendly
    def command() -> None:
        raise exc

    with pytest.raises(typer.Exit) as caught:
        command()
    return caught.value.exit_code, capsys.readouterr().err


def test_friendly_turns_an_ingest_error_into_one_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from cuegap.ingest import IngestError

    code, err = _failure(IngestError("data.jsonl:3: field 'system': missing"), capsys)
    assert code == 2
    assert err == "error: data.jsonl:3: field 'system': missing\n"


def test_friendly_turns_a_database_error_into_one_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from sqlalchemy import create_engine, text
    from sqlalchemy.exc import OperationalError

    engine = create_engine("sqlite://")
    with engine.connect() as conn:
        try:  # a real error from a real database, not one built by hand
            conn.execute(text("SELECT * FROM no_such_table"))
        except OperationalError as exc:
            error = exc
    code, err = _failure(error, capsys)
    assert code == 2
    assert err == "error: database error: (sqlite3.OperationalError) no such table: no_such_table\n"


def test_friendly_lets_other_errors_through(capsys: pytest.CaptureFixture[str]) -> None:
    from cuegap.cli.common import friendly

    @friendly
    def command() -> None:
        raise KeyError("a bug, not a user error")

    with pytest.raises(KeyError):
        command()
    assert capsys.readouterr().err == ""
