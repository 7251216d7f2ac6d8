"""No writer follows a symbolic link (issue 30, item 4).

For every command that writes a file (export, simulate for each design, demo, report,
signed copies in ``test_signed_copy.py``, witness, keygen), a link planted at an output
name pointing at a "victim" file: the command refuses with one line and a non-zero exit
(reports write the next free name instead), and the victim is unchanged. Real files,
real SQLite stores, the real command line.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from cuegap.files import LinkRefused, append_output, make_dir, open_output, write_output
from tests import test_cli_errors as ce
from tests.test_cli_errors import cli, one_line_error

analysed, store = ce.analysed, ce.store  # the small analysed SQLite store, copied per test

VICTIM = b"do not touch\n"


@pytest.fixture
def victim(tmp_path: Path) -> Path:
    path = tmp_path / "victim.txt"
    path.write_bytes(VICTIM)
    return path


def _plant(link: Path, victim: Path) -> Path:
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(victim)
    return link


def _untouched(victim: Path, link: Path) -> None:
    assert victim.read_bytes() == VICTIM
    assert link.is_symlink() and link.resolve() == victim.resolve()


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_export_refuses_a_link(store: Path, victim: Path, tmp_path: Path, suffix: str) -> None:
    link = _plant(tmp_path / f"verdicts{suffix}", victim)
    result = cli(store, "export", "verdicts", "-o", str(link))
    one_line_error(result, str(link), "symbolic link")
    _untouched(victim, link)
    # a regular file is still replaced
    plain = tmp_path / f"plain{suffix}"
    plain.write_bytes(b"old")
    assert cli(store, "export", "verdicts", "-o", str(plain)).exit_code == 0
    assert plain.read_bytes() != b"old"


@pytest.mark.parametrize(
    ("design", "name"),
    [
        ("dilemma", "responses.jsonl"),
        ("dilemma", "truth.json"),
        ("qa", "qa_results.jsonl"),
        ("qa", "truth.json"),
        ("prompt-variance", "truth.json"),
        ("prompt-variance", "responses_bbq.jsonl"),
        ("conversation", "counts.csv"),
        ("conversation", "experiment"),
    ],
)
def test_simulate_refuses_a_link_in_its_folder(
    tmp_path: Path, victim: Path, design: str, name: str
) -> None:
    out = tmp_path / "sim"
    target = victim if "." in name else victim.parent
    link = _plant(out / name, target)
    result = cli(tmp_path / "s.db", "simulate", str(out), "--design", design, "--systems", "1")
    one_line_error(result, str(link), "symbolic link")
    _untouched(victim, link) if target == victim else None
    assert [p.name for p in out.iterdir()] == [name]  # nothing else written
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sim", "victim.txt"]


def test_demo_refuses_a_link_in_its_folder(tmp_path: Path, victim: Path) -> None:
    link = _plant(tmp_path / "demo" / "responses.jsonl", victim)
    result = cli(tmp_path / "demo.db", "demo", "--dir", str(tmp_path / "demo"), "--no-bayes")
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    assert f"{link}: is a symbolic link" in result.output.replace("\n", "")
    _untouched(victim, link)


def test_report_writes_beside_a_link_never_through_it(
    store: Path, victim: Path, tmp_path: Path
) -> None:
    out = tmp_path / "rep"
    link = _plant(out / "cuegap-report-1.html", victim)
    result = cli(store, "report", "-o", str(out), "--format", "html", "--analysis", "1")
    assert result.exit_code == 0, result.output
    _untouched(victim, link)
    assert (out / "cuegap-report-1-2.html").read_bytes().startswith(b"<!DOCTYPE html>")


def test_witness_refuses_a_link(store: Path, victim: Path, tmp_path: Path) -> None:
    link = _plant(tmp_path / "witness.jsonl", victim)
    one_line_error(cli(store, "witness", str(link)), str(link), "symbolic link")
    _untouched(victim, link)
    dangling = tmp_path / "dangling.jsonl"
    dangling.symlink_to(tmp_path / "nowhere.jsonl")
    one_line_error(cli(store, "witness", str(dangling)), "symbolic link")
    assert not (tmp_path / "nowhere.jsonl").exists()


@pytest.mark.parametrize("which", ["key", "key.pub"])
def test_keygen_refuses_a_link(tmp_path: Path, victim: Path, which: str) -> None:
    link = _plant(tmp_path / which, victim)
    result = cli(tmp_path / "s.db", "keygen", str(tmp_path / "key"), "--reviewer", "Ada")
    one_line_error(result, str(link), "symbolic link")
    _untouched(victim, link)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([which, "victim.txt"])


def test_the_helpers_refuse_a_link_planted_after_the_check(
    tmp_path: Path, victim: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``O_NOFOLLOW`` and the rename hold even when the link appears after the lstat."""
    import cuegap.files as files

    link = _plant(tmp_path / "late", victim)
    real = files.refuse_link
    calls = {"n": 0}

    def late_check(path: Path | str) -> Path:  # the first check sees no link
        calls["n"] += 1
        return Path(path) if calls["n"] == 1 else real(path)

    for write in (
        lambda: write_output(link, b"x"),
        lambda: append_output(link, b"x"),
    ):
        calls["n"] = 0
        monkeypatch.setattr(files, "refuse_link", late_check)
        with pytest.raises(LinkRefused):
            write()
        _untouched(victim, link)
    monkeypatch.setattr(files, "refuse_link", Path)  # no check at all
    with open_output(link) as fh:  # renamed over the link: the link goes, the victim stays
        fh.write(b"new")
    assert victim.read_bytes() == VICTIM and link.read_bytes() == b"new"
    assert not link.is_symlink()


def test_make_dir_refuses_a_linked_folder_inside_the_output(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "a").symlink_to(elsewhere)
    with pytest.raises(LinkRefused, match="a: is a symbolic link"):
        make_dir(tmp_path / "out", Path("a", "b"))
    assert not list(elsewhere.iterdir())
    linked_root = tmp_path / "root-link"
    linked_root.symlink_to(elsewhere)  # the folder the user names may be a link
    assert make_dir(linked_root, "c").is_dir() and (elsewhere / "c").is_dir()


def test_writers_refuse_what_is_not_a_regular_file(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for write in (write_output, append_output):
        with pytest.raises(ValueError, match="not a regular file"):
            write(fifo, b"x")  # never blocks waiting for a reader
        with pytest.raises(ValueError, match="not a regular file"):
            write(tmp_path, b"x")
