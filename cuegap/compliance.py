"""Compliance workflow: report registry, hash-chained sign-offs, verification, store locks.

* Every rendered report is registered (:func:`register_report`) with its SHA-256, the
  analysis it came from and that analysis's data fingerprint.
* :func:`sign_off` appends a review decision. Each record carries the hash of the previous
  record, and its own hash covers its content and that link, so an edited, deleted or
  reordered record breaks the chain. Signing requires the report file to still match its
  registered hash.
* :func:`verify` re-hashes every registered report file and walks the whole chain, naming
  what was altered.
* :func:`store_lock` holds a named lock in the store itself (a row with a primary key), so
  that two scheduled re-analyses on different machines sharing a PostgreSQL store cannot
  run at once.

Deleting the *newest* sign-off leaves a shorter but valid chain; a re-rendered signed
report carries the record hash of every sign-off it shows, so :func:`verify` also checks
that each hash quoted by a registered signed report still exists.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

from sqlalchemy import delete, func, insert, select, update
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError

from cuegap.ingest._loader import file_sha256
from cuegap.schema import Analysis, AnalysisArtifact, Report, SignOff, StoreLock

DECISIONS = ("approve", "reject", "changes-requested")
_QUOTED = re.compile(r'data-cuegap="record-hash">([0-9a-f]{64})<')
GENESIS = "0" * 64


def record_hash(
    *,
    seq: int,
    report_id: int,
    report_sha256: str,
    reviewer: str,
    decision: str,
    comment: str | None,
    signed_at: str,
    prev_hash: str,
) -> str:
    """SHA-256 of a sign-off record's canonical JSON (sorted keys, no whitespace)."""
    payload = {
        "seq": seq,
        "report_id": report_id,
        "report_sha256": report_sha256,
        "reviewer": reviewer,
        "decision": decision,
        "comment": comment,
        "signed_at": signed_at,
        "prev_hash": prev_hash,
    }
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


class ComplianceError(ValueError):
    """A sign-off or registry request that cannot be honoured; nothing was written."""


# --------------------------------------------------------------------------- registry


def register_report(
    engine: Engine,
    path: Path | str,
    *,
    analysis_id: int,
    format: str | None = None,
    supersedes_id: int | None = None,
) -> int:
    """Register a rendered report file; returns its id.

    The version is one more than the newest registered report of the same format.

    Raises
    ------
    ComplianceError
        When the file or the analysis does not exist.
    """
    path = Path(path).resolve()
    if not path.is_file():
        raise ComplianceError(f"{path}: report file not found")
    fmt = format or path.suffix.lstrip(".").lower()
    sha = file_sha256(path)
    with engine.begin() as conn:
        fp = conn.execute(
            select(Analysis.data_fingerprint).where(Analysis.id == analysis_id)
        ).scalar()
        if fp is None:
            raise ComplianceError(f"analysis {analysis_id} does not exist")
        newest = conn.execute(select(func.max(Report.version)).where(Report.format == fmt))
        version = (newest.scalar() or 0) + 1
        return int(
            conn.execute(
                insert(Report).values(
                    analysis_id=analysis_id,
                    data_fingerprint=fp,
                    format=fmt,
                    path=str(path),
                    sha256=sha,
                    version=version,
                    supersedes_id=supersedes_id,
                    created_at=datetime.now(UTC),
                )
            ).inserted_primary_key[0]
        )


@dataclass(frozen=True, slots=True)
class RegisteredReport:
    """A row of the report registry."""

    id: int
    analysis_id: int
    data_fingerprint: str
    format: str
    path: str
    sha256: str
    version: int


def find_report(engine: Engine, report: int | str | Path) -> RegisteredReport:
    """Look a report up by id, by path, or by (a prefix of at least 8 chars of) its SHA-256.

    Raises
    ------
    ComplianceError
        When no registered report matches, or a hash prefix is ambiguous.
    """
    cols = select(
        Report.id,
        Report.analysis_id,
        Report.data_fingerprint,
        Report.format,
        Report.path,
        Report.sha256,
        Report.version,
    )
    text = str(report)
    with engine.connect() as conn:
        if isinstance(report, int) or text.isdigit():
            rows = conn.execute(cols.where(Report.id == int(text))).fetchall()
        elif len(text) >= 8 and all(c in "0123456789abcdef" for c in text.lower()):
            rows = conn.execute(cols.where(Report.sha256.startswith(text.lower()))).fetchall()
        else:
            path = str(Path(text).resolve())
            rows = conn.execute(cols.where(Report.path == path).order_by(Report.id.desc()))
            rows = rows.fetchall()[:1]
    if not rows:
        raise ComplianceError(f"no registered report matches {text!r}")
    if len(rows) > 1:
        raise ComplianceError(f"{text!r} matches {len(rows)} reports; give more of the hash")
    return RegisteredReport(*rows[0])


# --------------------------------------------------------------------------- sign-off


@dataclass(frozen=True, slots=True)
class SignOffRecord:
    """A stored sign-off."""

    seq: int
    report_id: int
    report_sha256: str
    reviewer: str
    decision: str
    comment: str | None
    signed_at: str
    prev_hash: str
    record_hash: str


def sign_off(
    engine: Engine,
    report: int | str | Path,
    *,
    reviewer: str,
    decision: str,
    comment: str | None = None,
    now: datetime | None = None,
) -> SignOffRecord:
    """Append a sign-off to the chain after checking the report file is unaltered.

    Raises
    ------
    ComplianceError
        For an unknown decision, an empty reviewer, an unknown report, a missing report
        file or one whose bytes no longer match the registered hash. Nothing is written.
    """
    if decision not in DECISIONS:
        raise ComplianceError(f"unknown decision {decision!r}; use one of: {', '.join(DECISIONS)}")
    if not reviewer.strip():
        raise ComplianceError("a reviewer name is required")
    rep = find_report(engine, report)
    path = Path(rep.path)
    if not path.is_file():
        raise ComplianceError(f"report {rep.id}: file {path} is missing; nothing signed")
    actual = file_sha256(path)
    if actual != rep.sha256:
        raise ComplianceError(
            f"report {rep.id}: {path} was modified since it was registered (SHA-256 "
            f"{actual[:12]}… != registered {rep.sha256[:12]}…); nothing signed"
        )
    signed_at = (now or datetime.now(UTC)).astimezone(UTC).isoformat(timespec="seconds")
    for _attempt in range(20):  # another signer may take the next seq: retry on conflict
        with engine.connect() as conn:
            last = conn.execute(
                select(SignOff.seq, SignOff.record_hash).order_by(SignOff.seq.desc()).limit(1)
            ).first()
        seq, prev = (1, GENESIS) if last is None else (last.seq + 1, last.record_hash)
        values = {
            "seq": seq,
            "report_id": rep.id,
            "report_sha256": rep.sha256,
            "reviewer": reviewer.strip(),
            "decision": decision,
            "comment": comment,
            "signed_at": signed_at,
            "prev_hash": prev,
        }
        values["record_hash"] = record_hash(**values)
        try:
            with engine.begin() as conn:
                conn.execute(insert(SignOff).values(**values))
        except IntegrityError:
            continue
        return SignOffRecord(**values)
    raise ComplianceError("could not append the sign-off: the chain kept changing; retry")


def signoffs(engine: Engine, report_id: int | None = None) -> list[SignOffRecord]:
    """Sign-off records in chain order (all, or those of one report)."""
    stmt = select(
        SignOff.seq,
        SignOff.report_id,
        SignOff.report_sha256,
        SignOff.reviewer,
        SignOff.decision,
        SignOff.comment,
        SignOff.signed_at,
        SignOff.prev_hash,
        SignOff.record_hash,
    ).order_by(SignOff.seq)
    if report_id is not None:
        stmt = stmt.where(SignOff.report_id == report_id)
    with engine.connect() as conn:
        return [SignOffRecord(*r) for r in conn.execute(stmt)]


# --------------------------------------------------------------------------- verify


@dataclass(slots=True)
class Verification:
    """What :func:`verify` checked and every problem it found (empty when all is intact)."""

    reports: int = 0
    signoffs: int = 0
    artifacts: int = 0
    head: str = GENESIS
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when nothing was altered."""
        return not self.problems


def verify(engine: Engine, *, quoted: dict[int, list[str]] | None = None) -> Verification:
    """Check every registered report file, the whole sign-off chain and the stored
    analysis artifacts (the Bayesian posteriors that verdicts are derived from).

    Parameters
    ----------
    quoted : dict, optional
        Report id -> sign-off record hashes that the report's rendered sign-off block quotes;
        each must still be in the chain. Registered HTML reports are scanned for them
        (``data-cuegap="record-hash"``) unless given here.

    Returns
    -------
    Verification
        Counts, the chain head, and one sentence per problem: a missing or changed report
        file; a sign-off whose content was edited (its hash no longer matches), whose link
        to the previous record is broken (a row deleted or reordered), a gap in the
        sequence, a sign-off whose report hash differs from the registry, a quoted
        sign-off that no longer exists, or an artifact whose bytes no longer match the
        SHA-256 stored with it.
    """
    out = Verification()
    with engine.connect() as conn:
        reports = conn.execute(
            select(Report.id, Report.path, Report.sha256, Report.format)
        ).fetchall()
    quoted = dict(quoted or {})
    for r in reports:  # signed HTML reports quote the record hashes of their sign-offs
        path = Path(r.path)
        if r.format == "html" and path.is_file() and r.id not in quoted:
            found = _QUOTED.findall(path.read_text(encoding="utf-8", errors="replace"))
            if found:
                quoted[r.id] = found
    registered = {r.id: r.sha256 for r in reports}
    for r in reports:
        out.reports += 1
        path = Path(r.path)
        if not path.is_file():
            out.problems.append(f"report {r.id}: file {path} is missing")
        elif (actual := file_sha256(path)) != r.sha256:
            out.problems.append(
                f"report {r.id}: {path} was altered (SHA-256 {actual[:12]}…, registered "
                f"{r.sha256[:12]}…)"
            )
    prev, expected_seq = GENESIS, 1
    hashes = set()
    for rec in signoffs(engine):
        out.signoffs += 1
        hashes.add(rec.record_hash)
        if rec.seq != expected_seq:
            out.problems.append(
                f"sign-off chain: record {expected_seq} is missing (next is {rec.seq}): a "
                "sign-off was deleted"
            )
        if rec.prev_hash != prev:
            out.problems.append(
                f"sign-off {rec.seq}: its link to the previous record is broken (a sign-off "
                "was deleted, reordered or edited before it)"
            )
        fields = {k: getattr(rec, k) for k in SignOffRecord.__slots__ if k != "record_hash"}
        if record_hash(**fields) != rec.record_hash:
            out.problems.append(
                f"sign-off {rec.seq} (report {rec.report_id}, {rec.reviewer}): its content "
                "was edited after signing"
            )
        if registered.get(rec.report_id, rec.report_sha256) != rec.report_sha256:
            out.problems.append(
                f"sign-off {rec.seq}: report {rec.report_id}'s registered hash changed after "
                "it was signed"
            )
        prev, expected_seq = rec.record_hash, rec.seq + 1
    out.head = prev
    with engine.connect() as conn:
        artifacts = conn.execute(
            select(
                AnalysisArtifact.analysis_id,
                AnalysisArtifact.name,
                AnalysisArtifact.sha256,
                AnalysisArtifact.content,
            ).execution_options(yield_per=1)
        )
        for a in artifacts:
            out.artifacts += 1
            if hashlib.sha256(a.content).hexdigest() != a.sha256:
                out.problems.append(
                    f"analysis {a.analysis_id}: its stored {a.name} was altered (the bytes no "
                    f"longer match SHA-256 {a.sha256[:12]}…)"
                )
    for report_id, quoted_hashes in quoted.items():
        for h in quoted_hashes:
            if h not in hashes:
                out.problems.append(
                    f"report {report_id} quotes sign-off {h[:12]}…, which is no longer in "
                    "the chain (deleted)"
                )
    return out


# --------------------------------------------------------------------------- locks


class LockHeld(RuntimeError):
    """The named lock is held by someone else."""


#: How long a lock survives its holder: renewed every third of it while held.
LOCK_TTL = timedelta(minutes=10)


@contextmanager
def store_lock(
    engine: Engine,
    name: str,
    *,
    ttl: timedelta = LOCK_TTL,
    holder: str | None = None,
) -> Iterator[str]:
    """Hold a named lock in the store for the duration of a ``with`` block.

    The lock is a row keyed by ``name``; inserting it is atomic on SQLite and PostgreSQL.
    While the block runs, a background thread renews the lock every ``ttl / 3``, so a
    live holder keeps it however long the work takes; a lock left unrenewed past its
    ``ttl`` (a crashed holder) is taken over.

    Raises
    ------
    LockHeld
        When another live holder has it.
    """
    me = holder or f"{socket.gethostname()}:{os.getpid()}"
    now = datetime.now(UTC)
    for _attempt in range(2):
        try:
            with engine.begin() as conn:
                conn.execute(
                    insert(StoreLock).values(
                        name=name, holder=me, acquired_at=now, expires_at=now + ttl
                    )
                )
            break
        except IntegrityError:
            with engine.begin() as conn:
                row = conn.execute(
                    select(StoreLock.holder, StoreLock.expires_at).where(StoreLock.name == name)
                ).first()
                if row is None:
                    continue
                expires = row.expires_at
                if expires.tzinfo is None:
                    expires = expires.replace(tzinfo=UTC)
                if expires > now:
                    raise LockHeld(
                        f"lock {name!r} is held by {row.holder} until "
                        f"{expires.isoformat(timespec='seconds')}"
                    ) from None
                conn.execute(
                    delete(StoreLock).where(StoreLock.name == name, StoreLock.holder == row.holder)
                )
    else:  # pragma: no cover - lost two races in a row
        raise LockHeld(f"lock {name!r} is contended; retry")
    stop = threading.Event()

    def renew() -> None:
        while not stop.wait(ttl.total_seconds() / 3):
            try:
                with engine.begin() as conn:
                    conn.execute(
                        update(StoreLock)
                        .where(StoreLock.name == name, StoreLock.holder == me)
                        .values(expires_at=datetime.now(UTC) + ttl)
                    )
            except Exception:  # a missed renewal only lets the lock age
                continue

    heartbeat = threading.Thread(target=renew, name=f"cuegap-lock-{name}", daemon=True)
    heartbeat.start()
    try:
        yield me
    finally:
        stop.set()
        heartbeat.join()
        with engine.begin() as conn:
            conn.execute(delete(StoreLock).where(StoreLock.name == name, StoreLock.holder == me))
