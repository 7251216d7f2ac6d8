"""Issue 30 item 3: an interrupted ingest is finished, never left with unsealed rows.

A pass killed after committing some of its transactions left its batch "running" and its
rows in no ledger entry; ingesting the file again stored nothing new, so nothing sealed
them, and an edit of their raw text passed ``cuegap verify``. The deterministic tests here
leave that state in-process (the pass "dies" right after its last commit: its final seal
is skipped and its lock dropped, as the kernel or server drops them at a kill); the kill
-9 trials of every design, on both backends, are in ``tests/test_ingest_kills.py``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sqlalchemy import text
from typer.testing import CliRunner

from cuegap.cli import app
from cuegap.compliance import verify
from cuegap.ingest import ingest_path
from cuegap.ingest._pass import _IngestPass
from cuegap.ingest._recover import recover_interrupted
from cuegap.schema import make_engine, upgrade
from cuegap.schema._liveness import BatchLock, is_alive
from tests.conftest import DATA

HEADER = {"format": "cuegap-responses", "version": 1, "item_bank": "tiny"}


def _file(path: Path, n: int = 40) -> Path:
    lines = [HEADER]
    for i in range(n):
        item = "direct-d1" if i % 10 else "no-such-item"  # every tenth is quarantined
        who = "AB"[i % 2]
        lines.append({"system": "s1", "item_id": item, "probe": "what_if", "individual": who})
        lines[-1].update(repeat=i, response="option1")
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    return path


def _die_before_the_seal(monkeypatch: pytest.MonkeyPatch) -> None:
    """The next pass commits its transactions and then "dies": no final seal."""
    monkeypatch.setattr(_IngestPass, "_seal", lambda self, *args: None)


def _interrupted(engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, int]:
    ingest_path(engine, DATA / "tiny_bank.json")
    path = _file(tmp_path / "r.jsonl")
    with monkeypatch.context() as m:
        _die_before_the_seal(m)
        s = ingest_path(engine, path, batch_size=10)
    with engine.connect() as conn:
        status = conn.execute(
            text("SELECT status FROM ingest_batch WHERE id = :b"), {"b": s.batch_id}
        ).scalar_one()
    assert status == "running"
    return path, s.batch_id


def _edit_first_response(engine, batch_id: int) -> None:
    with engine.begin() as conn:
        conn.execute(
            text(
                "UPDATE response SET raw_text = 'edited' WHERE id = "
                "(SELECT min(id) FROM response WHERE batch_id = :b)"
            ),
            {"b": batch_id},
        )


def test_verify_names_unsealed_rows_and_fails(engine, tmp_path, monkeypatch) -> None:
    _, batch = _interrupted(engine, tmp_path, monkeypatch)
    result = verify(engine)
    assert not result.ok and not result.problems
    (line,) = result.unsealed
    assert line.startswith(f"ingest batch {batch} of ")
    assert "36 responses (response ids 1, 2, 3, 4, 5, …)" in line
    assert "4 quarantined lines (quarantine ids" in line
    assert "its ingest was interrupted: run `cuegap init`" in line


def test_recovery_seals_the_committed_rows_with_balanced_counts(
    engine, tmp_path, monkeypatch
) -> None:
    _, batch = _interrupted(engine, tmp_path, monkeypatch)
    (found,) = recover_interrupted(engine)
    assert found.batch_id == batch and found.sealed
    assert (found.lines_read, found.stored, found.duplicate, found.quarantined) == (40, 36, 0, 4)
    assert recover_interrupted(engine) == []  # nothing left
    with engine.connect() as conn:
        row = conn.execute(
            text("SELECT status, error FROM ingest_batch WHERE id = :b"), {"b": batch}
        ).one()
    assert row.status == "interrupted" and "sealed by recovery" in row.error
    assert verify(engine).ok
    _edit_first_response(engine, batch)  # a row that was unsealed is now covered
    changed = f"ingest batch {batch}: its stored responses changed"
    assert any(p.startswith(changed) for p in verify(engine).problems)


def test_ingesting_the_file_again_recovers_first(engine, tmp_path, monkeypatch) -> None:
    path, batch = _interrupted(engine, tmp_path, monkeypatch)
    s = ingest_path(engine, path)
    assert (s.read, s.stored, s.duplicate, s.quarantined) == (40, 0, 36, 4)
    result = verify(engine)
    assert result.ok, result.problems + result.unsealed
    with engine.connect() as conn:
        statuses = dict(conn.execute(text("SELECT id, status FROM ingest_batch")).all())
    assert statuses[batch] == "interrupted" and statuses[s.batch_id] == "completed"


def test_a_live_pass_is_left_alone(engine) -> None:
    """A batch whose pass still holds its lock (another process, or another thread here)
    is not sealed under it; once the lock is dropped it is."""
    ingest_path(engine, DATA / "tiny_bank.json")
    with engine.begin() as conn:
        batch = conn.execute(
            text(
                "INSERT INTO ingest_batch (source_path, source_sha256, format, status, "
                "lines_read, stored, duplicate, quarantined, started_at) VALUES "
                "('f', 'x', 'generic', 'running', 0, 0, 0, 0, CURRENT_TIMESTAMP) RETURNING id"
            )
        ).scalar_one()
    lock = BatchLock(engine, batch)
    try:
        with engine.connect() as conn:
            assert is_alive(conn, batch) is True
        (found,) = recover_interrupted(engine)
        assert not found.sealed
    finally:
        lock.release()
    with engine.connect() as conn:
        assert is_alive(conn, batch) is False
    (found,) = recover_interrupted(engine)
    assert found.sealed and verify(engine).ok


def test_cli_verify_exits_1_and_init_seals(tmp_path, monkeypatch) -> None:
    url = f"sqlite:///{tmp_path / 'store.db'}"
    engine = make_engine(url)
    upgrade(engine)
    _, batch = _interrupted(engine, tmp_path, monkeypatch)
    engine.dispose()
    runner = CliRunner()
    out = runner.invoke(app, ["--db", url, "verify"], env={"COLUMNS": "300"})
    assert out.exit_code == 1
    assert f"not sealed: ingest batch {batch} of" in out.output.replace("\n", " ")
    out = runner.invoke(app, ["--db", url, "init"], env={"COLUMNS": "300"})
    assert out.exit_code == 0, out.output
    assert f"Sealed interrupted ingest {batch} of" in out.output
    assert "(36 stored + 0 duplicate + 4 quarantined)" in out.output
    out = runner.invoke(app, ["--db", url, "verify"], env={"COLUMNS": "300"})
    assert out.exit_code == 0, out.output


def test_a_killed_re_ingest_that_took_over_quarantined_lines_verifies_after_recovery(
    engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first pass quarantines every tenth line; a second pass of the same file moves
    those rows into its own batch and dies before its seal. Recovery seals it and re-seals
    the first batch (only its quarantine parts changed), as a finished pass does: verify
    passes. An edit of the first batch's stored answers is still named afterwards."""
    ingest_path(engine, DATA / "tiny_bank.json")
    path = _file(tmp_path / "r.jsonl")
    first = ingest_path(engine, path)
    assert first.quarantined == 4
    with monkeypatch.context() as m:
        _die_before_the_seal(m)
        ingest_path(engine, path, batch_size=10)
    assert not verify(engine).ok  # batch 2 unsealed, batch 1's quarantine moved away
    assert [r.batch_id for r in recover_interrupted(engine)]
    result = verify(engine)
    assert result.ok, result.problems + result.unsealed
    with engine.begin() as conn:
        conn.execute(
            text("UPDATE response SET raw_text = 'option2' WHERE batch_id = :b"),
            {"b": first.batch_id},
        )
    assert any(f"ingest batch {first.batch_id}" in p for p in verify(engine).problems)
