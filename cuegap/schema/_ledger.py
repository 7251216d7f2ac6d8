"""The store's ledger: content digests of everything cuegap writes, hash-chained.

Each object that a verdict or a sign-off depends on gets a ledger entry when cuegap writes
it, in the same transaction:

========== ================================================================================
kind       digest covers
========== ================================================================================
``batch``  an ingest pass: its record and counts, its run (runner, settings), every
           response row it stored (QA responses and their factors, conversations and
           their opinions too) and every line it quarantined; for a file counted by
           ``cuegap count``, the tally rows it counted (:mod:`cuegap.schema._counted`)
``bank``   an item bank: its record, dilemmas, annotations, items and individuals (and
           their demographic axes), or its QA items, options and option axes
``system`` an audited system's name, version, provider and metadata (a new entry each
           time an ingest changes them)
``analysis`` its settings, policy, package versions, data fingerprint, every result table
           and every artifact's bytes
``report`` a registry row: path, format, SHA-256 of the file, the HTML it shows, and the
           analysis digest it was rendered from
``signoff`` a sign-off row, field by field
========== ================================================================================

A digest is the SHA-256 of its parts' digests (``detail`` keeps the parts, so that
``cuegap verify`` can say *which* part changed). Rows are hashed as canonical JSON of their
non-NULL columns, so a column added by a later migration does not change old digests.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import orjson
from sqlalchemy import func, insert, select, text
from sqlalchemy.engine import Connection

from cuegap.schema import _conv_ledger, _qa_ledger
from cuegap.schema._chunks import driver_chunks
from cuegap.schema._counted import counted_tally_part
from cuegap.schema._tables import (
    Analysis,
    AnalysisArtifact,
    AnalysisTable,
    Annotation,
    Dilemma,
    IngestBatch,
    Item,
    ItemBank,
    ItemIndividual,
    LedgerEntry,
    Report,
    Run,
    SignOff,
    System,
)

GENESIS = "0" * 64
KINDS = ("batch", "bank", "system", "analysis", "report", "signoff")
_PG_LOCK_KEY = 0x6375_6567  # "cueg": serialises ledger appends on PostgreSQL


def _default(value: Any) -> Any:
    if isinstance(value, bytes | bytearray | memoryview):
        return hashlib.sha256(bytes(value)).hexdigest()
    if isinstance(value, datetime):
        return value.isoformat()
    return str(value)


def row_hash_update(h: Any, row: Mapping[str, Any]) -> None:
    """Feed one row (its non-NULL columns, canonical JSON) into a running hash."""
    values = {k: v for k, v in row.items() if v is not None}
    h.update(
        orjson.dumps(
            values, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS, default=_default
        )
    )
    h.update(b"\n")


def rows_digest(rows: Iterable[Mapping[str, Any]]) -> str:
    """SHA-256 over rows in the order given (see :func:`row_hash_update`)."""
    h = hashlib.sha256()
    for row in rows:
        row_hash_update(h, row)
    return h.hexdigest()


def _rows(conn: Connection, table: Any, where: Any, order: Any) -> Iterator[Mapping[str, Any]]:
    stmt = select(table).where(where).order_by(order).execution_options(yield_per=5000)
    for row in conn.execute(stmt):
        yield row._mapping


def _part(conn: Connection, table: Any, where: Any, order: Any) -> str:
    return rows_digest(_rows(conn, table, where, order))


# Large tables are hashed as tuples of these columns (the columns of revision 0005),
# fetched with the driver's own cursor: about three times faster than through Core.
RESPONSE_COLUMNS = (
    "id", "response_key", "content_hash", "run_id", "batch_id", "system_id", "item_id",
    "condition", "difficulty", "probe", "individual", "consequences", "prompt_variant",
    "repeat", "raw_text", "prompt", "sample_id", "parsed_answer", "selected_individual",
    "parse_status", "abstained", "assignment", "recovered", "puzzle_correct", "runner_result",
    "source_line",
)  # fmt: skip
QUARANTINE_COLUMNS = ("id", "source_sha256", "line_no", "field", "reason", "raw")
# Whether and when a quarantined line was stored later (``cuegap status`` counts only the
# open ones): sealed with the line's own batch, which the resolving pass re-seals.
RESOLUTION_COLUMNS = ("id", "resolved_at", "resolved_batch_id")
# Parts added after stores were sealed without them. An entry recorded without one was
# written by an older cuegap: its digest is checked without that part (and verify says
# what that leaves uncovered). Every entry written now has them.
LATE_PARTS = frozenset({"quarantine_resolved", "conv_snapshots"})
# The parts of an ingest batch that a later pass of its file may change (it stores the
# batch's quarantined lines, or quarantines them again and takes them over).
QUARANTINE_PARTS = frozenset({"quarantine", "quarantine_resolved"})
DIGEST_CHUNK = 10_000  # rows per hashed array (cuegap.ingest._digest hashes the same)


def _bulk_digest(conn: Connection, table: str, columns: tuple[str, ...], batch_id: int) -> str:
    """SHA-256 over the rows of ``table`` with ``batch_id``, in id order, in chunks."""
    cols = ", ".join(f'"{c}"' for c in columns)
    sql = f"SELECT {cols} FROM {table} WHERE batch_id = ? ORDER BY id"
    h = hashlib.sha256()
    for rows in driver_chunks(conn, sql, (batch_id,), DIGEST_CHUNK):
        h.update(orjson.dumps(rows, default=_default))
    return h.hexdigest()


def combine(parts: Mapping[str, str]) -> str:
    """The digest of an object from its parts' digests."""
    text_ = json.dumps(dict(parts), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text_.encode()).hexdigest()


# --------------------------------------------------------------------------- digests


def batch_parts(
    conn: Connection, batch_id: int, *, responses: str | None = None
) -> dict[str, str] | None:
    """Part digests of an ingest batch; None when its row is gone.

    ``responses``, when given, is the digest of the batch's responses computed as they
    were written (``cuegap.ingest._digest``): the same value, without reading them back.
    """
    b = IngestBatch.__table__
    row = conn.execute(select(b).where(b.c.id == batch_id)).first()
    if row is None:
        return None
    record = dict(row._mapping)
    for volatile in ("finished_at", "started_at"):
        record.pop(volatile, None)
    run = Run.__table__
    return {
        "record": rows_digest([record]),
        "run": _part(conn, run, run.c.id == row.run_id, run.c.id),
        "responses": responses or _bulk_digest(conn, "response", RESPONSE_COLUMNS, batch_id),
        "quarantine": _bulk_digest(conn, "quarantine", QUARANTINE_COLUMNS, batch_id),
        "quarantine_resolved": _bulk_digest(conn, "quarantine", RESOLUTION_COLUMNS, batch_id),
        **_qa_ledger.qa_batch_parts(conn, batch_id),
        **_conv_ledger.conv_batch_parts(conn, batch_id),
        **counted_tally_part(conn, row._mapping, _part),  # a counted file's tally rows
    }


def bank_parts(conn: Connection, bank_id: int) -> dict[str, str] | None:
    """Part digests of an item bank; None when its row is gone."""
    bank = ItemBank.__table__
    if conn.execute(select(bank.c.id).where(bank.c.id == bank_id)).first() is None:
        return None
    dil, item = Dilemma.__table__, Item.__table__
    dil_ids = select(dil.c.id).where(dil.c.bank_id == bank_id)
    item_ids = select(item.c.id).where(item.c.bank_id == bank_id)
    ann, ind = Annotation.__table__, ItemIndividual.__table__
    return {
        "record": _part(conn, bank, bank.c.id == bank_id, bank.c.id),
        "dilemmas": _part(conn, dil, dil.c.bank_id == bank_id, dil.c.id),
        "annotations": _part(conn, ann, ann.c.dilemma_id.in_(dil_ids), ann.c.id),
        "items": _part(conn, item, item.c.bank_id == bank_id, item.c.id),
        "individuals": _part(conn, ind, ind.c.item_id.in_(item_ids), ind.c.id),
        **_qa_ledger.individual_axes_part(conn, bank_id),
        **_qa_ledger.qa_bank_parts(conn, bank_id, _part),
    }


def system_parts(conn: Connection, system_id: int) -> dict[str, str] | None:
    """Part digest of a system's record (created_at left out); None when it is gone."""
    s = System.__table__
    row = conn.execute(select(s).where(s.c.id == system_id)).first()
    if row is None:
        return None
    record = {k: v for k, v in row._mapping.items() if k != "created_at"}
    return {"record": rows_digest([record])}


def analysis_parts(conn: Connection, analysis_id: int) -> dict[str, str] | None:
    """Part digests of an analysis: its record, tables and artifacts (bytes re-hashed)."""
    a = Analysis.__table__
    row = conn.execute(select(a).where(a.c.id == analysis_id)).first()
    if row is None:
        return None
    record = {k: v for k, v in row._mapping.items() if k != "content_digest"}
    t = AnalysisTable.__table__
    art = AnalysisArtifact.__table__
    return {
        "record": rows_digest([record]),
        "tables": _part(conn, t, t.c.analysis_id == analysis_id, t.c.id),
        "artifacts": _part(conn, art, art.c.analysis_id == analysis_id, art.c.id),
    }


def report_parts(conn: Connection, report_id: int) -> dict[str, str] | None:
    """Part digest of a registry row (the HTML it keeps hashed as part of it)."""
    r = Report.__table__
    return _single(conn, r, r.c.id == report_id)


def signoff_parts(conn: Connection, seq: int) -> dict[str, str] | None:
    """Part digest of a sign-off row."""
    s = SignOff.__table__
    row = conn.execute(select(s).where(s.c.seq == seq)).first()
    if row is None:
        return None
    return {"record": rows_digest([{k: v for k, v in row._mapping.items() if k != "id"}])}


def _single(conn: Connection, table: Any, where: Any) -> dict[str, str] | None:
    row = conn.execute(select(table).where(where)).first()
    return None if row is None else {"record": rows_digest([dict(row._mapping)])}


PARTS = {
    "batch": batch_parts,
    "bank": bank_parts,
    "system": system_parts,
    "analysis": analysis_parts,
    "report": report_parts,
    "signoff": signoff_parts,
}


def object_digest(conn: Connection, kind: str, ref_id: int) -> str | None:
    """The current digest of one object (None when it no longer exists)."""
    parts = PARTS[kind](conn, ref_id)
    return None if parts is None else combine(parts)


def as_recorded(parts: Mapping[str, str], recorded: Mapping[str, str]) -> dict[str, str]:
    """``parts`` without the :data:`LATE_PARTS` that the ``recorded`` entry predates."""
    return {k: v for k, v in parts.items() if k not in LATE_PARTS or k in recorded}


def unchanged_since(conn: Connection, kind: str, ref_id: int) -> bool | None:
    """Whether an object still has the digest of its newest entry (None: no entry).

    Parts added since that entry was written (:data:`LATE_PARTS`) are left out, so an
    object sealed by an older cuegap is not mistaken for a changed one.
    """
    last = latest_entry(conn, kind, ref_id)
    if last is None:
        return None
    parts = PARTS[kind](conn, ref_id)
    return parts is not None and combine(as_recorded(parts, last.parts)) == last.digest


# --------------------------------------------------------------------------- entries


@dataclass(frozen=True, slots=True)
class Entry:
    """A ledger entry as stored."""

    seq: int
    kind: str
    ref_id: int | None
    digest: str
    detail: str | None
    recorded_at: str
    prev_hash: str
    entry_hash: str

    @property
    def parts(self) -> dict[str, str]:
        """The part digests kept in ``detail`` (empty for the genesis entry)."""
        if self.kind == "genesis" or not self.detail:
            return {}
        return json.loads(self.detail)


def entry_hash(
    *,
    seq: int,
    kind: str,
    ref_id: int | None,
    digest: str,
    detail: str | None,
    recorded_at: str,
    prev_hash: str,
) -> str:
    """SHA-256 of an entry's canonical JSON (sorted keys, no whitespace)."""
    payload = {
        "seq": seq,
        "kind": kind,
        "ref_id": ref_id,
        "digest": digest,
        "detail": detail,
        "recorded_at": recorded_at,
        "prev_hash": prev_hash,
    }
    return hashlib.sha256(
        json.dumps(payload, sort_keys=True, separators=(",", ":")).encode()
    ).hexdigest()


def lock_ledger(conn: Connection) -> None:
    """Take the ledger's append lock for the rest of ``conn``'s transaction.

    PostgreSQL: a transaction-level advisory lock. SQLite: a write statement, which takes
    the database's write lock (call it before reading anything in the transaction).
    """
    if conn.dialect.name == "postgresql":
        conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": _PG_LOCK_KEY})
    else:
        conn.execute(text("DELETE FROM ledger WHERE 1 = 0"))


def head(conn: Connection) -> Entry | None:
    """The newest entry."""
    cols = [getattr(LedgerEntry, k) for k in Entry.__slots__]
    row = conn.execute(select(*cols).order_by(LedgerEntry.seq.desc()).limit(1)).first()
    return None if row is None else Entry(*row)


def latest_digest(conn: Connection, kind: str, ref_id: int) -> str | None:
    """The digest of the newest entry recorded for an object."""
    last = latest_entry(conn, kind, ref_id)
    return None if last is None else last.digest


def latest_entry(conn: Connection, kind: str, ref_id: int) -> Entry | None:
    """The newest entry recorded for an object."""
    cols = [getattr(LedgerEntry, k) for k in Entry.__slots__]
    row = conn.execute(
        select(*cols)
        .where(LedgerEntry.kind == kind, LedgerEntry.ref_id == ref_id)
        .order_by(LedgerEntry.seq.desc())
        .limit(1)
    ).first()
    return None if row is None else Entry(*row)


def record(
    conn: Connection,
    kind: str,
    ref_id: int,
    *,
    parts: Mapping[str, str] | None = None,
    only_if_changed: bool = False,
) -> Entry | None:
    """Append an entry for an object in ``conn``'s transaction.

    Parameters
    ----------
    parts : mapping, optional
        Precomputed part digests (computed before taking the lock, for large objects);
        default: computed now.
    only_if_changed : bool
        Skip when the object still has the digest of its newest entry (systems, and an
        earlier batch whose quarantined lines a later pass of its file stored or took over).

    Returns
    -------
    Entry or None
        The entry written (None when skipped). Stores written before the ledger existed
        (no genesis entry) get none: there is nothing to chain to.
    """
    if kind not in KINDS:
        raise ValueError(f"ledger kind should be one of {', '.join(KINDS)} but got {kind!r}")
    if parts is None:
        parts = PARTS[kind](conn, ref_id)
        if parts is None:
            raise ValueError(f"cannot record {kind} {ref_id}: it does not exist")
    digest = combine(parts)
    lock_ledger(conn)
    if only_if_changed:
        last_own = latest_entry(conn, kind, ref_id)
        if last_own is not None and combine(as_recorded(parts, last_own.parts)) == last_own.digest:
            return None
    last = head(conn)
    if last is None:
        return None
    values = {
        "seq": last.seq + 1,
        "kind": kind,
        "ref_id": ref_id,
        "digest": digest,
        "detail": json.dumps(dict(parts), sort_keys=True, separators=(",", ":")),
        "recorded_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "prev_hash": last.entry_hash,
    }
    values["entry_hash"] = entry_hash(**values)
    conn.execute(insert(LedgerEntry).values(**values))
    return Entry(**values)


def entries(conn: Connection) -> list[Entry]:
    """Every entry, in chain order."""
    cols = [getattr(LedgerEntry, k) for k in Entry.__slots__]
    return [Entry(*r) for r in conn.execute(select(*cols).order_by(LedgerEntry.seq))]


def count(conn: Connection) -> int:
    """How many entries the ledger holds."""
    return int(conn.execute(select(func.count()).select_from(LedgerEntry)).scalar() or 0)
