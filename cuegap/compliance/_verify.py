"""``cuegap verify``: recompute everything the compliance record depends on.

What is checked, and what cannot be ruled out, is written for a compliance reader in the
README ("What verify proves, and what it cannot").
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from sqlalchemy import select
from sqlalchemy.engine import Connection, Engine

from cuegap.compliance._conv_checks import conv_problems
from cuegap.compliance._registry import ComplianceError, file_sha256
from cuegap.compliance._signoff import (
    GENESIS,
    SignOffRecord,
    load_trusted_keys,
    record_hash,
    signature_valid,
    signoffs,
)
from cuegap.schema import (
    Analysis,
    AnalysisArtifact,
    IngestBatch,
    ItemBank,
    Report,
    SignOff,
    System,
    ledger,
    qa_tally_mismatches,
    tally_mismatches,
)

_QUOTED = re.compile(r'data-cuegap="record-hash">([0-9a-f]{64})<')
_NOUN = {
    "batch": "ingest batch",
    "bank": "item bank",
    "system": "system",
    "analysis": "analysis",
    "report": "registered report",
    "signoff": "sign-off",
}
_PART_NOUN = {
    "record": "its record",
    "run": "its run's record (runner, settings)",
    "responses": "its stored responses",
    "quarantine": "its quarantined lines",
    "dilemmas": "its dilemmas",
    "annotations": "its annotations",
    "items": "its items",
    "individuals": "its individuals",
    "individual_axes": "its individuals' demographic axes",
    "qa_items": "its QA items",
    "qa_options": "its QA answer options (text, role)",
    "qa_option_axes": "its QA options' demographic axes",
    "qa_responses": "its stored QA responses",
    "qa_factors": "its QA responses' prompt factors",
    "tables": "its result tables",
    "artifacts": "its stored artifacts (posterior)",
}
_TABLES = {
    "batch": (IngestBatch.__table__.c.id, IngestBatch.__table__),
    "bank": (ItemBank.__table__.c.id, ItemBank.__table__),
    "system": (System.__table__.c.id, System.__table__),
    "analysis": (Analysis.__table__.c.id, Analysis.__table__),
    "report": (Report.__table__.c.id, Report.__table__),
    "signoff": (SignOff.__table__.c.seq, SignOff.__table__),
}


@dataclass(slots=True)
class Verification:
    """What :func:`verify` checked, every problem it found, and what it could not rule out.

    Attributes
    ----------
    problems : list of str
        One sentence per alteration found; empty when everything checked is intact.
    limits : list of str
        What this run could not rule out (no witness file, no trusted keys, objects written
        before the ledger began, an ingest still running or interrupted).
    """

    reports: int = 0
    signoffs: int = 0
    artifacts: int = 0
    entries: int = 0
    head: str = GENESIS
    ledger_head: str = GENESIS
    ledger_seq: int = 0
    problems: list[str] = field(default_factory=list)
    limits: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when nothing was altered."""
        return not self.problems


def _name(kind: str, ref: int | None) -> str:
    return f"{_NOUN.get(kind, kind)} {ref}"


# --------------------------------------------------------------------------- ledger


def _walk_ledger(conn: Connection, out: Verification) -> tuple[list[ledger.Entry], dict]:
    entries = ledger.entries(conn)
    out.entries = len(entries)
    if not entries or entries[0].kind != "genesis":
        out.problems.append(
            "ledger: its first (genesis) entry is missing: the ledger was deleted or "
            "truncated from the start"
        )
        bounds: dict[str, int] = {}
    else:
        g = entries[0]
        try:
            bounds = json.loads(g.detail or "{}")
        except ValueError:
            bounds = {}
        if hashlib.sha256((g.detail or "").encode()).hexdigest() != g.digest:
            out.problems.append("ledger entry 1 (genesis): its content was edited")
    prev, expected = GENESIS, 1
    for e in entries:
        if e.seq != expected:
            out.problems.append(
                f"ledger: entries {expected}–{e.seq - 1} are missing: ledger entries were deleted"
            )
        if e.prev_hash != prev:
            out.problems.append(
                f"ledger entry {e.seq} ({_name(e.kind, e.ref_id)}): its link to the previous "
                "entry is broken (an entry was deleted, inserted or reordered before it)"
            )
        fields = {k: getattr(e, k) for k in ledger.Entry.__slots__ if k != "entry_hash"}
        if ledger.entry_hash(**fields) != e.entry_hash:
            out.problems.append(
                f"ledger entry {e.seq} ({_name(e.kind, e.ref_id)}): its content was edited"
            )
        prev, expected = e.entry_hash, e.seq + 1
    if entries:
        out.ledger_head, out.ledger_seq = entries[-1].entry_hash, entries[-1].seq
    return entries, bounds


def _check_objects(
    conn: Connection, entries: list[ledger.Entry], bounds: dict, out: Verification
) -> None:
    latest: dict[tuple[str, int], ledger.Entry] = {}
    for e in entries:
        if e.kind != "genesis" and e.ref_id is not None:
            latest[(e.kind, e.ref_id)] = e
    for (kind, ref), e in sorted(latest.items(), key=lambda kv: kv[1].seq):
        parts = ledger.PARTS[kind](conn, ref)
        if parts is None:
            out.problems.append(
                f"{_name(kind, ref)} was deleted (it is recorded in ledger entry {e.seq})"
            )
            continue
        if ledger.combine(parts) == e.digest:
            continue
        recorded = e.parts
        changed = [p for p, d in parts.items() if recorded.get(p) != d] or ["record"]
        what = ", ".join(_PART_NOUN.get(p, p) for p in changed)
        out.problems.append(
            f"{_name(kind, ref)}: {what} changed after it was recorded (ledger entry {e.seq})"
        )
    legacy = 0
    for kind, (col, table) in _TABLES.items():
        bound = int(bounds.get(kind, 0))
        ids = [int(i) for i in conn.execute(select(col).order_by(col)).scalars()]
        legacy += sum(1 for i in ids if i <= bound)
        missing = [i for i in ids if i > bound and (kind, i) not in latest]
        if kind == "batch" and missing:
            running = set(
                conn.execute(
                    select(col).where(col.in_(missing), table.c.status == "running")
                ).scalars()
            )
            for i in sorted(running):
                out.limits.append(
                    f"ingest batch {i} is still running or was interrupted: its responses "
                    "are not sealed in the ledger yet (re-ingest the file to complete it)"
                )
            missing = [i for i in missing if i not in running]
        for i in missing:
            out.problems.append(
                f"{_name(kind, i)} has no ledger entry: it was written outside cuegap"
            )
    if legacy:
        out.limits.append(
            f"{legacy} record(s) were written before this store's ledger began (an older "
            "cuegap): their content is not covered by it"
        )


# --------------------------------------------------------------------------- reports


def _check_report_files(conn: Connection, out: Verification) -> dict[int, str]:
    rows = conn.execute(
        select(Report.id, Report.path, Report.sha256, Report.analysis_digest, Report.analysis_id)
    ).fetchall()
    digests = dict(conn.execute(select(Analysis.id, Analysis.content_digest)).fetchall())
    for r in rows:
        out.reports += 1
        path = Path(r.path)
        if not path.is_file():
            out.problems.append(f"report {r.id}: file {path} is missing")
        elif (actual := file_sha256(path)) != r.sha256:
            out.problems.append(
                f"report {r.id}: {path} was altered (SHA-256 {actual[:12]}…, registered "
                f"{r.sha256[:12]}…)"
            )
        if r.analysis_digest is not None and digests.get(r.analysis_id) != r.analysis_digest:
            out.problems.append(
                f"report {r.id}: analysis {r.analysis_id} no longer has the content the "
                "report was rendered from"
            )
    return {r.id: r.sha256 for r in rows}


def _quoted_hashes(conn: Connection, quoted: dict[int, list[str]]) -> dict[int, list[str]]:
    """Record hashes quoted by signed reports: from the HTML kept in the store (PDFs too)
    and from registered HTML files."""
    out = dict(quoted)
    for r in conn.execute(select(Report.id, Report.path, Report.format, Report.html)):
        if r.id in out:
            continue
        found = set(_QUOTED.findall(r.html or ""))
        path = Path(r.path)
        if r.format == "html" and path.is_file():
            found |= set(_QUOTED.findall(path.read_text(encoding="utf-8", errors="replace")))
        if found:
            out[r.id] = sorted(found)
    return out


# --------------------------------------------------------------------------- sign-offs


def _check_signoffs(
    engine: Engine,
    conn: Connection,
    registered: dict[int, str],
    ledger_hashes: set[str],
    trusted: dict[str, object] | None,
    out: Verification,
) -> set[str]:
    prev, expected = GENESIS, 1
    hashes: set[str] = set()
    unsigned = 0
    for rec in signoffs(engine):
        out.signoffs += 1
        hashes.add(rec.record_hash)
        who = f"sign-off {rec.seq} (report {rec.report_id}, {rec.reviewer})"
        if rec.seq != expected:
            out.problems.append(
                f"sign-off chain: record {expected} is missing (next is {rec.seq}): a "
                "sign-off was deleted"
            )
        if rec.prev_hash != prev:
            out.problems.append(
                f"sign-off {rec.seq}: its link to the previous record is broken (a sign-off "
                "was deleted, reordered or edited before it)"
            )
        if record_hash(**rec.hashed_fields()) != rec.record_hash:  # type: ignore[arg-type]
            out.problems.append(f"{who}: its content was edited after signing")
        if registered.get(rec.report_id, rec.report_sha256) != rec.report_sha256:
            out.problems.append(
                f"sign-off {rec.seq}: report {rec.report_id}'s registered hash changed after "
                "it was signed"
            )
        if rec.ledger_head and rec.ledger_head not in ledger_hashes:
            out.problems.append(
                f"{who}: the ledger it vouched for is gone (its head {rec.ledger_head[:12]}… "
                "is no longer in the ledger): the ledger was rewritten"
            )
        if trusted is not None and not signature_valid(rec, trusted):
            out.problems.append(f"{who}: not signed by a trusted key")
        unsigned += rec.signature is None
        prev, expected = rec.record_hash, rec.seq + 1
    out.head = prev
    if trusted is None and out.signoffs:
        out.limits.append(
            "no trusted reviewer keys given (--trust): who made each sign-off is not proven, "
            "and someone with write access to the store could append a forged sign-off "
            f"with a valid hash ({unsigned} of {out.signoffs} sign-off(s) carry no "
            "signature at all)"
        )
    return hashes


def _check_artifacts(conn: Connection, out: Verification) -> None:
    rows = conn.execute(
        select(
            AnalysisArtifact.analysis_id,
            AnalysisArtifact.name,
            AnalysisArtifact.sha256,
            AnalysisArtifact.content,
        ).execution_options(yield_per=1)
    )
    for a in rows:
        out.artifacts += 1
        content = a.content if isinstance(a.content, bytes) else str(a.content).encode()
        if hashlib.sha256(content).hexdigest() != a.sha256:
            out.problems.append(
                f"analysis {a.analysis_id}: its stored {a.name} was altered (the bytes no "
                f"longer match SHA-256 {a.sha256[:12]}…)"
            )


# --------------------------------------------------------------------------- witness


def read_witness(path: Path | str) -> list[dict]:
    """The ledger heads recorded in a witness file (one JSON object per line)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ComplianceError(f"{path}: cannot read the witness file ({exc})") from None
    out = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
            out.append({"seq": int(obj["seq"]), "entry_hash": str(obj["entry_hash"])})
        except (ValueError, KeyError, TypeError):
            raise ComplianceError(
                f"{path}, line {n}: not a witness record (expected seq and entry_hash)"
            ) from None
    if not out:
        raise ComplianceError(f"{path}: the witness file holds no ledger heads")
    return out


def write_witness(engine: Engine, path: Path | str) -> ledger.Entry:
    """Append the ledger's current head to a witness file kept outside the store.

    Keep the file where the store's editors cannot change it (a compliance repository,
    write-once storage, an e-mail to the review board): ``cuegap verify --against FILE``
    then detects any rewrite or truncation of the ledger up to that head.
    """
    with engine.connect() as conn:
        top = ledger.head(conn)
    if top is None:
        raise ComplianceError("the store has no ledger (run `cuegap init` to upgrade it)")
    line = json.dumps(
        {
            "seq": top.seq,
            "entry_hash": top.entry_hash,
            "recorded_at": top.recorded_at,
            "witnessed_at": datetime.now(UTC).isoformat(timespec="seconds"),
        },
        sort_keys=True,
    )
    path = Path(path)
    if path.is_symlink() or (path.exists() and not path.is_file()):
        raise ComplianceError(f"{path}: not a regular file")
    try:
        with path.open("a", encoding="utf-8") as fh:
            fh.write(line + "\n")
    except OSError as exc:
        raise ComplianceError(f"{path}: cannot write the witness file: {exc.strerror}") from None
    return top


def _check_witness(entries: list[ledger.Entry], witness: list[dict], out: Verification) -> None:
    by_seq = {e.seq: e.entry_hash for e in entries}
    for w in witness:
        have = by_seq.get(w["seq"])
        if have is None:
            out.problems.append(
                f"ledger entry {w['seq']}, witnessed outside the store, is gone: the ledger "
                "was truncated"
            )
        elif have != w["entry_hash"]:
            out.problems.append(
                f"ledger entry {w['seq']} differs from the witnessed one "
                f"({have[:12]}… != {w['entry_hash'][:12]}…): the ledger was rewritten"
            )


# --------------------------------------------------------------------------- verify


def verify(
    engine: Engine,
    *,
    quoted: dict[int, list[str]] | None = None,
    witness: Path | str | None = None,
    trusted: list[Path] | None = None,
) -> Verification:
    """Recompute everything a verdict and a sign-off depend on, and name what changed.

    Parameters
    ----------
    quoted : dict, optional
        Report id -> sign-off record hashes that the report's rendered sign-off block
        quotes; each must still be in the chain. Default: read from the HTML kept in the
        store for every registered report (PDFs included) and from registered HTML files.
    witness : path, optional
        A witness file written by :func:`write_witness` (``cuegap witness``): every head it
        records must still be in the ledger, unchanged.
    trusted : list of paths, optional
        Reviewers' public keys: every sign-off must then carry a valid signature by one.

    Returns
    -------
    Verification
    """
    out = Verification()
    keys = load_trusted_keys(list(trusted)) if trusted is not None else None
    heads = read_witness(witness) if witness is not None else None
    with engine.connect() as conn:
        entries, bounds = _walk_ledger(conn, out)
        _check_objects(conn, entries, bounds, out)
        registered = _check_report_files(conn, out)
        _check_artifacts(conn, out)
        if differ := tally_mismatches(conn):
            out.problems.append(
                f"response tally: {differ} distinct answer count(s) no longer match the "
                "stored responses (the count table analyses read was edited)"
            )
        if differ := qa_tally_mismatches(conn):
            out.problems.append(
                f"QA answer tally: {differ} answer count(s) no longer match the stored QA "
                "answers (the count table QA analyses read was edited)"
            )
        out.problems += conv_problems(conn)  # the conversation design's tally
        hashes = _check_signoffs(
            engine, conn, registered, {e.entry_hash for e in entries}, keys, out
        )
        for report_id, quoted_hashes in sorted(_quoted_hashes(conn, quoted or {}).items()):
            for h in quoted_hashes:
                if h not in hashes:
                    out.problems.append(
                        f"report {report_id} quotes sign-off {h[:12]}…, which is no longer "
                        "in the chain (deleted)"
                    )
    if heads is not None:
        _check_witness(entries, heads, out)
    else:
        out.limits.append(
            "no witness file given (--against): a rewrite of the whole ledger, or removal "
            "of its newest entries, by someone with write access to the store cannot be "
            "ruled out; record heads with `cuegap witness FILE`"
        )
    return out


def check_report(engine: Engine, report_id: int) -> list[str]:
    """Problems with one registered report: its file, its registry record and the analysis
    it was rendered from, against the ledger. Empty when all three are intact."""
    problems: list[str] = []
    with engine.connect() as conn:
        rep = conn.execute(
            select(Report.path, Report.sha256, Report.analysis_id, Report.analysis_digest).where(
                Report.id == report_id
            )
        ).first()
        if rep is None:
            return [f"report {report_id} is not registered"]
        path = Path(rep.path)
        if not path.is_file():
            problems.append(f"file {path} is missing")
        elif file_sha256(path) != rep.sha256:
            problems.append(f"{path} was altered since it was registered")
        for kind, ref in (("report", report_id), ("analysis", rep.analysis_id)):
            recorded = ledger.latest_digest(conn, kind, ref)
            if recorded is None:
                if ledger.count(conn) and _after_genesis(conn, kind, ref):
                    problems.append(f"{_name(kind, ref)} has no ledger entry")
                continue
            if ledger.object_digest(conn, kind, ref) != recorded:
                problems.append(f"{_name(kind, ref)} changed after it was recorded")
        current = conn.execute(
            select(Analysis.content_digest).where(Analysis.id == rep.analysis_id)
        ).scalar()
        if rep.analysis_digest is not None and current != rep.analysis_digest:
            problems.append(f"analysis {rep.analysis_id} no longer has the reported content")
    return problems


def _after_genesis(conn: Connection, kind: str, ref: int) -> bool:
    entries = ledger.entries(conn)[:1]
    if not entries:
        return False
    bounds = json.loads(entries[0].detail or "{}")
    return ref > int(bounds.get(kind, 0))


def signed_records(engine: Engine, report_id: int) -> list[SignOffRecord]:
    """The sign-offs of one report, each checked against its hash (raises otherwise)."""
    recs = signoffs(engine, report_id)
    for rec in recs:
        if record_hash(**rec.hashed_fields()) != rec.record_hash:  # type: ignore[arg-type]
            raise ComplianceError(f"sign-off {rec.seq} was edited after signing")
    return recs


__all__ = ["Verification", "check_report", "read_witness", "verify", "write_witness"]
