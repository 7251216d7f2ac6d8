"""What every command shares: the console, the store's engine, error handling, progress.

Expected failures become one readable line on stderr and a non-zero exit (:func:`friendly`);
the global ``--db`` option lands in :class:`_State` through :func:`main`, the app's callback.

Imports only typer and rich at the top: ``cuegap.schema`` and ``cuegap.ingest`` (SQLAlchemy,
SQLModel, Alembic, every reader) load inside the functions that need them, so that
``cuegap --help`` and ``--version`` start fast (``tests/test_cli_startup.py``).
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer
from rich.console import Console

from cuegap import __version__
from cuegap.terminal import safe

# emoji=False: a name like ":thumbs_up:" is printed as written (markup is escaped by safe())
console = Console(emoji=False)
err = Console(stderr=True, emoji=False)
F = TypeVar("F", bound=Callable[..., Any])

# Upper bounds, checked before any work: beyond them a run would exhaust memory or disk
# (50 million bootstrap replicates need 137 GiB) instead of failing with a clear message.
MAX_SYSTEMS = 100  # a simulated system is ~22,000 responses, ~4.5 MB of JSONL
MAX_BOOT = 100_000
MAX_DRAWS = 100_000
MAX_CHAINS = 64
MAX_SEED = 2**32 - 1


class _State:
    db: str | None = None


def _version(value: bool) -> None:
    if value:
        console.print(f"cuegap {__version__}")
        raise typer.Exit()


def main(
    db: Annotated[
        str | None,
        typer.Option(
            "--db",
            help="Database URL (sqlite:///FILE or postgresql://USER@HOST/DB) or a SQLite file "
            "path. Default: $CUEGAP_DB, else sqlite:///cuegap.db in the working directory.",
            envvar="CUEGAP_DB",
            show_envvar=False,
        ),
    ] = None,
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version.")
    ] = False,
) -> None:
    """Cue Visibility Gap audits of LLM fairness results: ingest, analyse, report."""
    _State.db = db


def _fail(message: str, code: int = 2) -> typer.Exit:
    err.print(f"[bold red]error:[/] {safe(message)}", highlight=False, soft_wrap=True)
    return typer.Exit(code)


def friendly(fn: F) -> F:
    """Turn expected failures into one readable line and a non-zero exit."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except (ValueError, TypeError, *_loaded("cuegap.ingest._records", "IngestError")) as exc:
            raise _fail(str(exc)) from None
        except OSError as exc:
            raise _fail(_os_error(exc)) from None
        except _loaded("sqlalchemy.exc", "SQLAlchemyError") as exc:
            message = f"database error: {str(exc).splitlines()[0]}"
            if "readonly database" in message:
                message += (
                    "; the store's file or folder is not writable: only commands that read "
                    "the store (status, verify, tables, analyses, export) work on it"
                )
            raise _fail(message) from None

    return wrapper  # type: ignore[return-value]


def _loaded(module: str, name: str) -> tuple[type[BaseException], ...]:
    """``(module.name,)`` when ``module`` was imported, else ``()`` (an ``except`` that
    matches nothing): an exception cannot be an instance of a class that was never loaded,
    so :func:`friendly` catches IngestError and SQLAlchemy's errors without importing them."""
    loaded = sys.modules.get(module)
    return (getattr(loaded, name),) if loaded is not None else ()


def _os_error(exc: OSError) -> str:
    """One line for a failed file operation: the path and what went wrong."""
    if exc.filename is None:
        return str(exc)
    path = Path(exc.filename)
    if isinstance(exc, FileExistsError) and path.exists() and not path.is_dir():
        what = "is a file, not a folder"  # mkdir of an output folder over a file
    else:
        what = (exc.strerror or type(exc).__name__).lower()
    target = f" -> {exc.filename2}" if exc.filename2 is not None else ""
    return f"{exc.filename}{target}: {what}"


def _require_folder(path: Path) -> None:
    """Fail before any work when an output folder is an existing file."""
    if path.exists() and not path.is_dir():
        raise _fail(f"{path}: is a file, not a folder; give a folder to write to")


def _require_file(engine, code: int = 1) -> None:
    """Exit with ``code`` when a SQLite store's file is missing or empty: connecting would
    create a file behind a mistyped ``--db``, or write into an empty one."""
    from cuegap.schema import describe_url

    path = engine.url.database if engine.dialect.name == "sqlite" else None
    if path and path != ":memory:" and not Path(path).exists():
        err.print(
            f"No store at {safe(describe_url(engine))}: there is no such file. Check --db (or "
            "CUEGAP_DB), or create one with `cuegap init` or `cuegap ingest`."
        )
        raise typer.Exit(code)
    if path and path != ":memory:" and Path(path).is_file() and Path(path).stat().st_size == 0:
        _report_uninitialised(engine)  # opening it would write a SQLite header into it
        raise typer.Exit(code)


def _engine(*, create: bool, missing_code: int = 1):
    """The store's engine, checked: exits ``missing_code`` when there is no store (unless
    ``create``), 2 when its schema is older than this cuegap's."""
    from cuegap.schema import (
        current_revision,
        describe_url,
        head_revision,
        known_revision,
        make_engine,
        newer_store_error,
        upgrade,
    )

    engine = make_engine(_State.db)
    if not create:
        _require_file(engine, missing_code)
    rev = current_revision(engine)
    if rev is None:
        if not create:
            _report_uninitialised(engine)
            raise typer.Exit(missing_code)
        upgrade(engine)
    elif not known_revision(rev):
        raise _fail(str(newer_store_error(rev)))
    elif rev != head_revision():
        raise _fail(
            f"the store at {describe_url(engine)} is at schema revision {rev}, this cuegap "
            f"needs {head_revision()}: run `cuegap init` to upgrade it"
        )
    return engine


def _report_uninitialised(engine) -> int:
    from cuegap.schema import describe_url

    err.print(
        f"The store at {safe(describe_url(engine))} is empty. Run `cuegap init`, or "
        "`cuegap ingest` a file (which initialises it)."
    )
    return 1


@contextmanager
def _progress(label: str) -> Iterator[Callable[[int, int], None] | None]:
    if not err.is_terminal:
        yield None
        return
    from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn

    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        DownloadColumn(),
        TimeRemainingColumn(),
    )
    with Progress(*columns, console=err, transient=True) as bar:
        task = bar.add_task(label, total=None)
        yield lambda done, total: bar.update(task, completed=done, total=total)


@contextmanager
def _steps(label: str) -> Iterator[Callable[[str], None]]:
    """A spinner showing the current step of a long computation (on a terminal only)."""
    if not err.is_terminal:
        yield lambda _msg: None
        return
    with err.status(label) as status:
        yield lambda msg: status.update(f"{label}: {safe(msg)}")


#: Public names of the helpers a design's command bodies use (``designs/<name>/_cli*.py``).
progress = _progress
steps = _steps
