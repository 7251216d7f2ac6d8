"""Verification of the store's ledger: its hash chain, and every object it seals.

:class:`Verification` collects what each check of :func:`cuegap.compliance.verify` finds;
:func:`_walk_ledger` checks the chain itself, :func:`_check_objects` recomputes the digest
of every sealed object and names the objects written outside cuegap.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field

from sqlalchemy import select
from sqlalchemy.engine import Connection

from cuegap.compliance._signoff import GENESIS
from cuegap.schema import Analysis, IngestBatch, ItemBank, Report, SignOff, System, ledger

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
    unsealed : list of str
        One sentence per ingest batch whose rows no ledger entry covers (an interrupted
        ingest not yet recovered): they could be edited unnoticed.
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
    unsealed: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when nothing was altered and every ingested row is sealed."""
        return not self.problems and not self.unsealed


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
                    "are not sealed in the ledger yet (if it is not running, `cuegap init` "
                    "seals what it committed; ingest the file again to store the rest)"
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
