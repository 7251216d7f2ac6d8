"""Command-line misuse: one line and a non-zero exit, never a traceback, nothing half-written.

Real SQLite stores and real files; the read-only store is read by an unprivileged process
(``setpriv`` drops root's privileges, since root may write anywhere).
"""

from __future__ import annotations

import functools
import hashlib
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import func, select
from typer.testing import CliRunner

from cuegap.cli import app
from cuegap.designs.dilemma._analysis import analyze
from cuegap.designs.dilemma._analysis_settings import AnalysisSettings
from cuegap.designs.dilemma.simulate import simulate, synthetic_item_bank
from cuegap.ingest import ingest_path
from cuegap.schema import Report, make_engine, upgrade
from tests.conftest import DATA

runner = CliRunner()


def cli(db: Path | str, *args: str):
    result = runner.invoke(app, ["--db", f"sqlite:///{db}", *args], env={"COLUMNS": "200"})
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(
        result.exception
    )
    return result


def one_line_error(result, *needles: str, code: int = 2) -> None:
    """The command failed with ``code`` and exactly one line saying ``needles``."""
    assert result.exit_code == code, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1, result.output
    assert "Traceback" not in result.output
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])


@pytest.fixture(scope="module")
def analysed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A SQLite store of a small simulated audit (12 dilemmas, 3 systems), analysed."""
    root = tmp_path_factory.mktemp("cli-errors")
    result = simulate(root / "sim", systems=3, seed=3, item_bank=synthetic_item_bank(seed=3))
    db = root / "store.db"
    engine = make_engine(f"sqlite:///{db}")
    upgrade(engine)
    for path in (result.itembank_path, result.responses_path):
        ingest_path(engine, path)
    analyze(engine, AnalysisSettings(n_boot=5))
    engine.dispose()
    return db


@pytest.fixture
def store(analysed: Path, tmp_path: Path) -> Path:
    db = tmp_path / "store.db"
    shutil.copy(analysed, db)
    return db


def _reports(db: Path) -> int:
    engine = make_engine(f"sqlite:///{db}")
    with engine.connect() as conn:
        n = conn.execute(select(func.count()).select_from(Report)).scalar_one()
    engine.dispose()
    return n


# --------------------------------------------------------------------------- paths


def test_policy_that_is_a_folder(store: Path, tmp_path: Path) -> None:
    one_line_error(
        cli(store, "analyze", "--policy", str(tmp_path)),
        f"{tmp_path}: is a folder, not a policy file",
    )


def test_report_out_that_is_a_file(store: Path, tmp_path: Path) -> None:
    target = tmp_path / "notes.txt"
    target.write_text("keep me")
    one_line_error(cli(store, "report", "--out", str(target)), f"{target}: is a file")
    assert target.read_text() == "keep me" and _reports(store) == 0


def test_report_out_below_a_file(store: Path, tmp_path: Path) -> None:
    target = tmp_path / "notes.txt"
    target.write_text("keep me")
    one_line_error(
        cli(store, "report", "--out", str(target / "reports")), f"{target / 'reports'}: not a"
    )
    assert _reports(store) == 0


def test_simulate_into_a_file(tmp_path: Path) -> None:
    target = tmp_path / "data.jsonl"
    target.write_text("keep me")
    one_line_error(
        runner.invoke(app, ["simulate", str(target)]), f"{target}: is a file, not a folder"
    )
    assert target.read_text() == "keep me"


@pytest.mark.parametrize(
    "args",
    [
        ["analyze", "--boot", "50000000"],
        ["analyze", "--draws", "100000000", "--bayes"],
        ["analyze", "--chains", "100000"],
        ["analyze", "--seed", "-1"],
        ["reanalyze", "--out", "r", "--boot", "50000000"],
        ["simulate", "x", "--systems", "1000000000"],
        ["demo", "--systems", "1000000000"],
    ],
)
def test_absurd_numbers_are_refused_before_any_work(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: list[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    db = tmp_path / "never.db"
    out = runner.invoke(app, ["--db", str(db), *args])
    assert out.exit_code == 2, out.output
    assert "Invalid value for" in out.output and "Traceback" not in out.output
    assert list(tmp_path.iterdir()) == []


# --------------------------------------------------------------------------- stores


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["ingest", "missing.jsonl"], "missing.jsonl: no such file or directory"),
        (
            ["ingest", str(DATA / "tiny_bank.json"), "missing.jsonl"],
            "missing.jsonl: no such file or directory",
        ),
        (
            ["ingest", "--mapping", "missing.toml", str(DATA / "tiny_bank.json")],
            "missing.toml: no such mapping file",
        ),
        (["ingest", "--format", "nope", str(DATA / "tiny_bank.json")], "unknown format 'nope'"),
    ],
)
def test_ingest_with_bad_arguments_creates_no_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: list[str], message: str
) -> None:
    monkeypatch.chdir(tmp_path)
    db = tmp_path / "new.db"
    one_line_error(cli(db, *args), message)
    assert not db.exists()


@pytest.mark.parametrize("command", ["verify", "status", "analyses", "analyze"])
def test_an_empty_file_is_not_a_store_and_is_not_written(tmp_path: Path, command: str) -> None:
    db = tmp_path / "zero.db"
    db.touch()
    out = cli(db, command)
    assert out.exit_code == 1 and "is empty" in out.output, out.output
    assert db.stat().st_size == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["zero.db"]


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@functools.cache
def _drop_privileges() -> tuple[list[str], str]:
    """The command prefix that runs as user ``nobody`` (empty when not root), or why not."""
    if os.geteuid() != 0:
        return [], ""
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        return [], "running as root without setpriv: cannot make a folder read-only"
    drop = [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups"]
    probe = subprocess.run([*drop, sys.executable, "-c", "import cuegap"], capture_output=True)
    if probe.returncode != 0:  # no CAP_SETUID, or the checkout is private to root
        return [], f"cannot run cuegap as user nobody: {probe.stderr[-300:]!r}"
    return drop, ""


def _as_another_user(*args: str) -> list[str]:
    """Run the CLI in a fresh process; as root, as the unprivileged user ``nobody``."""
    drop, why_not = _drop_privileges()
    if why_not:
        pytest.skip(why_not)
    return [*drop, sys.executable, "-c", "from cuegap.cli import app; app()", *args]


@pytest.fixture
def public_dir() -> Iterator[Path]:
    """A folder that user ``nobody`` can enter (pytest's tmp_path is private to root)."""
    path = Path(tempfile.mkdtemp(prefix="cuegap-ro-"))
    path.chmod(0o755)
    try:
        yield path
    finally:
        for p in (path, *path.rglob("*")):
            p.chmod(p.stat().st_mode | stat.S_IWUSR | stat.S_IRUSR | stat.S_IXUSR)
        shutil.rmtree(path)


def test_a_store_in_a_read_only_folder_can_be_verified_and_is_not_written(
    analysed: Path, public_dir: Path
) -> None:
    folder = public_dir / "archive"
    folder.mkdir()
    db = folder / "store.db"
    shutil.copy(analysed, db)
    before = _sha(db)
    db.chmod(0o444)
    folder.chmod(0o555)
    env = {**os.environ, "HOME": str(public_dir), "COLUMNS": "200"}

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            _as_another_user("--db", str(db), *args),
            capture_output=True,
            text=True,
            env=env,
            cwd=public_dir,
            timeout=120,
        )

    verified = run("verify")
    assert verified.returncode == 0, verified.stderr
    assert "intact" in verified.stdout
    status = run("status")
    assert status.returncode == 0, status.stderr
    assert "3 systems" in status.stdout
    written = run("ingest", str(DATA / "tiny_bank.json"))
    assert written.returncode == 2 and "Traceback" not in written.stderr
    assert "store's file or folder is not writable" in written.stderr
    assert len(written.stderr.strip().splitlines()) == 1, written.stderr
    assert sorted(p.name for p in folder.iterdir()) == ["store.db"]
    assert _sha(db) == before


# --------------------------------------------------------------------------- publishing


def test_a_pdf_that_cannot_be_written_leaves_no_html_behind(
    store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The disk fills up while the PDF is written: no report file may be left written but
    unregistered (or registered without its companion)."""
    import weasyprint

    def disk_full(*_args, **_kwargs):
        raise OSError(28, "No space left on device", str(tmp_path / "r" / "report.pdf"))

    monkeypatch.setattr(weasyprint.HTML, "write_pdf", disk_full)
    out = tmp_path / "r"
    one_line_error(cli(store, "report", "--out", str(out)), "no space left on device")
    assert not out.exists() or list(out.iterdir()) == []
    assert _reports(store) == 0
