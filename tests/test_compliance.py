"""Report registry, hash-chained sign-offs, tamper detection and the store lock.

Runs on a real SQLite file and a real PostgreSQL server (the ``engine`` fixture).
"""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pandas as pd
import pytest
from sqlalchemy import delete, func, select, text, update
from typer.testing import CliRunner

from cuegap.audit import save_analysis
from cuegap.cli import app
from cuegap.compliance import (
    GENESIS,
    ComplianceError,
    LockHeld,
    find_report,
    record_hash,
    register_report,
    sign_off,
    signoffs,
    store_lock,
    verify,
)
from cuegap.schema import SignOff, StoreLock


@pytest.fixture
def registered(engine, tmp_path: Path):
    analysis_id = save_analysis(
        engine,
        kind="frequentist",
        status="ok",
        data_fingerprint="f" * 64,
        system_fingerprints={},
        settings={},
        tables={"t": pd.DataFrame({"x": [1]})},
    )
    report = tmp_path / "audit.html"
    report.write_text("<html><body>verdicts</body></html>")
    report_id = register_report(engine, report, analysis_id=analysis_id)
    return engine, report, report_id


def _count(engine) -> int:
    with engine.connect() as conn:
        return conn.execute(select(func.count()).select_from(SignOff)).scalar()


def test_register_and_find(registered, tmp_path: Path) -> None:
    engine, report, report_id = registered
    rep = find_report(engine, report)
    assert (rep.id, rep.format, rep.version, rep.data_fingerprint) == (
        report_id,
        "html",
        1,
        "f" * 64,
    )
    assert find_report(engine, rep.sha256[:10]).id == report_id
    assert find_report(engine, str(report_id)).path == str(report.resolve())
    other = tmp_path / "v2.html"
    other.write_text("<html>v2</html>")
    assert find_report(engine, register_report(engine, other, analysis_id=1)).version == 2
    with pytest.raises(ComplianceError, match="no registered report matches"):
        find_report(engine, tmp_path / "nope.html")
    with pytest.raises(ComplianceError, match="analysis 99 does not exist"):
        register_report(engine, other, analysis_id=99)


def test_chain_links_every_record(registered) -> None:
    engine, report, report_id = registered
    t0 = datetime(2026, 11, 21, 9, 0, tzinfo=UTC)
    a = sign_off(engine, report, reviewer="Ada", decision="changes-requested", now=t0)
    b = sign_off(engine, report_id, reviewer="Bo", decision="approve", comment="ok", now=t0)
    assert (a.seq, a.prev_hash) == (1, GENESIS)
    assert (b.seq, b.prev_hash) == (2, a.record_hash)
    expected = record_hash(
        seq=2,
        report_id=report_id,
        report_sha256=b.report_sha256,
        reviewer="Bo",
        decision="approve",
        comment="ok",
        signed_at="2026-11-21T09:00:00+00:00",
        prev_hash=a.record_hash,
        record_version=2,
        analysis_digest=b.analysis_digest,
        ledger_head=b.ledger_head,
        key_id=None,
    )
    assert b.record_hash == expected
    # version 2 records vouch for the analysis and for the ledger as it stood
    assert b.analysis_digest is not None and len(b.ledger_head or "") == 64
    assert b.ledger_head != a.ledger_head  # a's own ledger entry came in between
    result = verify(engine)
    assert result.ok and (result.reports, result.signoffs, result.head) == (1, 2, b.record_hash)
    assert [r.reviewer for r in signoffs(engine, report_id)] == ["Ada", "Bo"]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"decision": "lgtm"}, "unknown decision 'lgtm'; use one of: approve, reject"),
        ({"reviewer": "  "}, "a reviewer name is required"),
    ],
)
def test_bad_requests_write_nothing(registered, kwargs: dict, message: str) -> None:
    engine, report, _ = registered
    args = {"reviewer": "Ada", "decision": "approve", **kwargs}
    with pytest.raises(ComplianceError, match=message):
        sign_off(engine, report, **args)
    assert _count(engine) == 0


def test_modified_or_missing_report_cannot_be_signed(registered) -> None:
    engine, report, report_id = registered
    report.write_text(report.read_text().replace("verdicts", "verdictz"))
    with pytest.raises(ComplianceError, match="was modified since it was registered"):
        sign_off(engine, report_id, reviewer="Ada", decision="approve")
    report.unlink()
    with pytest.raises(ComplianceError, match="is missing; nothing signed"):
        sign_off(engine, report_id, reviewer="Ada", decision="approve")
    assert _count(engine) == 0
    problems = verify(engine).problems
    assert problems == [f"report {report_id}: file {report.resolve()} is missing"]


def _three(engine, report) -> None:
    for who in ("Ada", "Bo", "Cy"):
        sign_off(engine, report, reviewer=who, decision="approve")


def test_edited_signoff_is_named(registered) -> None:
    engine, report, _ = registered
    _three(engine, report)
    with engine.begin() as conn:
        conn.execute(update(SignOff).where(SignOff.seq == 2).values(decision="reject"))
    problems = verify(engine).problems
    assert problems == [
        "sign-off 2: its record changed after it was recorded (ledger entry 5)",
        "sign-off 2 (report 1, Bo): its content was edited after signing",
    ]


def test_deleted_signoff_is_named(registered) -> None:
    engine, report, _ = registered
    _three(engine, report)
    with engine.begin() as conn:
        conn.execute(delete(SignOff).where(SignOff.seq == 2))
    problems = " | ".join(verify(engine).problems)
    assert "record 2 is missing" in problems and "sign-off 3: its link" in problems


def test_reordered_signoffs_are_named(registered) -> None:
    engine, report, _ = registered
    _three(engine, report)
    with engine.begin() as conn:  # swap the order of records 1 and 2
        conn.execute(update(SignOff).where(SignOff.seq == 1).values(seq=-1))
        conn.execute(update(SignOff).where(SignOff.seq == 2).values(seq=1))
        conn.execute(update(SignOff).where(SignOff.seq == -1).values(seq=2))
    problems = " | ".join(verify(engine).problems)
    assert "sign-off 1: its link to the previous record is broken" in problems
    assert "content was edited" in problems  # each record's hash covers its seq


def test_changed_report_byte_is_named(registered) -> None:
    engine, report, report_id = registered
    sign_off(engine, report, reviewer="Ada", decision="approve")
    data = bytearray(report.read_bytes())
    data[10] ^= 1
    report.write_bytes(bytes(data))
    problems = verify(engine).problems
    assert len(problems) == 1 and f"report {report_id}: " in problems[0]
    assert "was altered" in problems[0]


def test_report_file_overwritten_by_a_later_render_names_that_render(registered) -> None:
    engine, report, report_id = registered
    analysis_id = find_report(engine, report).analysis_id
    report.unlink()  # the folder emptied, then rendered again under the same name
    report.write_text("<html><body>verdicts, rendered again</body></html>")
    later = register_report(engine, report, analysis_id=analysis_id)
    problems = verify(engine).problems
    assert len(problems) == 1 and problems[0].startswith(f"report {report_id}: ")
    assert f"now holds the bytes of report {later} (written to the same path" in problems[0]
    report.write_text("<html><body>edited by hand</body></html>")  # matches no render
    problems = verify(engine).problems
    assert len(problems) == 2 and all("was altered" in p for p in problems)


def test_altered_posterior_is_named(registered) -> None:
    """The stored NetCDF posterior, from which verdicts can be re-derived, is checked too."""
    import hashlib

    from cuegap.schema import AnalysisArtifact

    engine, _report, _ = registered
    blob = b"CDF\x01 stand-in posterior bytes"
    analysis_id = save_analysis(
        engine,
        kind="bayesian",
        status="ok",
        data_fingerprint="f" * 64,
        system_fingerprints={},
        settings={},
        tables={},
        artifacts={"idata": (blob, "application/x-netcdf")},
    )
    result = verify(engine)
    assert result.ok and result.artifacts == 1
    with engine.begin() as conn:
        conn.execute(update(AnalysisArtifact).values(content=blob.replace(b"stand", b"STAND")))
    problems = verify(engine).problems
    assert problems == [
        f"analysis {analysis_id}: its stored artifacts (posterior) changed after it was "
        "recorded (ledger entry 4)",
        f"analysis {analysis_id}: its stored idata was altered (the bytes no longer match "
        f"SHA-256 {hashlib.sha256(blob).hexdigest()[:12]}…)",
    ]


def test_quoted_signoff_deleted_from_the_end_is_named(registered) -> None:
    engine, report, report_id = registered
    _three(engine, report)
    last = signoffs(engine)[-1].record_hash
    with engine.begin() as conn:
        conn.execute(delete(SignOff).where(SignOff.seq == 3))
    # the sign-off chain alone cannot tell; the ledger entry of sign-off 3 still can ...
    assert verify(engine).problems == ["sign-off 3 was deleted (it is recorded in ledger entry 6)"]
    problems = verify(engine, quoted={report_id: [last]}).problems  # ... and so can the report
    assert len(problems) == 2 and "no longer in the chain" in problems[1]


def test_concurrent_signers_keep_one_chain(registered) -> None:
    engine, report, _ = registered
    errors: list[Exception] = []

    def worker(who: str) -> None:
        try:
            for i in range(5):
                sign_off(engine, report, reviewer=f"{who}{i}", decision="approve")
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(w,)) for w in ("a", "b")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    result = verify(engine)
    assert result.ok and result.signoffs == 10
    assert [r.seq for r in signoffs(engine)] == list(range(1, 11))


def test_store_lock(engine) -> None:
    with store_lock(engine, "reanalyze", holder="one") as me:
        assert me == "one"
        with (
            pytest.raises(LockHeld, match="lock 'reanalyze' is held by one"),
            store_lock(engine, "reanalyze", holder="two"),
        ):
            pass  # pragma: no cover
        with store_lock(engine, "other", holder="two"):
            pass
    with store_lock(engine, "reanalyze", holder="two"):
        pass  # released: free again
    past = datetime.now(UTC) - timedelta(hours=1)
    with engine.begin() as conn:  # a crashed holder's expired lock is taken over
        conn.execute(
            StoreLock.__table__.insert().values(
                name="reanalyze", holder="dead", acquired_at=past, expires_at=past
            )
        )
    with store_lock(engine, "reanalyze", holder="three"):
        with engine.connect() as conn:
            holder = conn.execute(text("SELECT holder FROM store_lock")).scalar()
        assert holder == "three"


def test_a_live_holder_keeps_its_lock_past_the_ttl(engine) -> None:
    """The heartbeat renews the lock: held for 2 TTLs, it is never taken over, and the
    row's expiry keeps moving; once released, it is free."""
    ttl = timedelta(seconds=1.5)
    with store_lock(engine, "reanalyze", ttl=ttl, holder="slow"):
        expiries = []
        for _ in range(3):
            time.sleep(1.0)
            with engine.connect() as conn:
                expiries.append(conn.execute(select(StoreLock.expires_at)).scalar_one())
            with (
                pytest.raises(LockHeld, match="held by slow"),
                store_lock(engine, "reanalyze", ttl=ttl, holder="cron"),
            ):
                pass  # pragma: no cover
        assert expiries == sorted(expiries) and expiries[0] < expiries[-1]
    with store_lock(engine, "reanalyze", ttl=ttl, holder="cron") as me:
        assert me == "cron"


def test_cli_signoff_and_verify(db_url: str, tmp_path: Path) -> None:
    from cuegap.schema import make_engine, upgrade

    engine = make_engine(db_url)
    upgrade(engine)
    analysis_id = save_analysis(
        engine,
        kind="frequentist",
        status="ok",
        data_fingerprint="e" * 64,
        system_fingerprints={},
        settings={},
        tables={},
    )
    report = tmp_path / "r.pdf"
    report.write_bytes(b"%PDF-1.7 fake")
    register_report(engine, report, analysis_id=analysis_id)
    runner = CliRunner()
    base = ["--db", db_url]
    res = runner.invoke(
        app,
        [*base, "signoff", str(report), "--reviewer", "Ada", "--decision", "maybe"],
    )
    assert res.exit_code == 2 and "unknown decision 'maybe'" in res.output
    assert len(res.output.strip().splitlines()) == 1
    res = runner.invoke(
        app, [*base, "signoff", "nope.pdf", "--reviewer", "A", "--decision", "approve"]
    )
    assert res.exit_code == 2 and "no registered report matches" in res.output
    assert _count(engine) == 0
    res = runner.invoke(
        app, [*base, "signoff", str(report), "--reviewer", "Ada", "--decision", "approve"]
    )
    assert res.exit_code == 0 and "sign-off 1" in res.output
    res = runner.invoke(app, [*base, "verify"])
    assert res.exit_code == 0 and "intact" in res.output
    report.unlink()
    res = runner.invoke(app, [*base, "verify"])
    assert res.exit_code == 1 and "is missing" in res.output
    engine.dispose()


def test_re_ingesting_and_resolving_quarantined_lines_is_not_tampering(
    engine, tiny_bank: Path, tmp_path: Path
) -> None:
    """cuegap itself moves a line quarantined again to the newer ingest pass, and resolves
    lines stored later; the ledger follows, so verify stays intact (no false alarm), while
    an edit of the same rows by hand is still named."""
    from cuegap.ingest import ingest_path

    responses = tmp_path / "responses.jsonl"
    lines = [
        '{"system": "s1", "item_bank": "tiny", "item_id": "neutral-d1", "probe": "main", '
        '"response": "option1"}',
        '{"system": "s1", "item_bank": "tiny", "item_id": "no-such-item", "probe": "main", '
        '"response": "option2"}',
        "not json",
    ]
    responses.write_text("\n".join(lines) + "\n")
    ingest_path(engine, tiny_bank)
    first = ingest_path(engine, responses)
    assert first.quarantined == 2
    again = ingest_path(engine, responses)  # the same lines are quarantined again
    assert again.quarantined == 2
    result = verify(engine)
    assert result.ok, result.problems
    with engine.begin() as conn:
        conn.execute(text("UPDATE quarantine SET reason = 'fine' WHERE line_no = 3"))
    problems = verify(engine).problems
    assert len(problems) == 1 and "its quarantined lines changed" in problems[0]
    # a tampered earlier pass is not re-sealed by a later ingest of the same file
    ingest_path(engine, responses)
    assert any("its quarantined lines," in p for p in verify(engine).problems)
