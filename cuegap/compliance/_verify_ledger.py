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

from cuegap.compliance._seals import histories, reseal_problem
from cuegap.compliance._signoff_records import GENESIS
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
    "tally": "the tally rows counted from its file",
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
    "quarantine_resolved": "its quarantined lines' resolution (stored later or not)",
    "conversations": "its stored conversations",
    "conv_opinions": "its conversations' opinions",
    "conv_configs": "its conversations' configurations",
    "conv_agents": "its conversations' agents",
    "conv_snapshots": "its conversations' config snapshots",
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
        before the ledger began, an ingest still running or interrupted, entries sealed
        after the newest outside anchor).
    counted : list of str
        One stated result per file counted outside the store (``cuegap count``): checked
        against its size and digest, or not reachable from here and not checked.
    anchors : list of (entry hash, label)
        Ledger heads vouched for from outside the store: witnessed heads, and the heads
        recorded by sign-offs that a trusted key signed.
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
    anchors: list[tuple[str | None, str]] = field(default_factory=list)
    unsealed: list[str] = field(default_factory=list)
    counted: list[str] = field(default_factory=list)

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
    seals = histories(conn, entries)
    latest: dict[tuple[str, int], ledger.Entry] = {k: h.valid for k, h in seals.items()}
    late = 0
    for (kind, ref), h in sorted(seals.items(), key=lambda kv: kv[1].first.seq):
        for r in h.forged:
            out.problems.append(reseal_problem(_name(kind, ref), kind, r, _PART_NOUN))
        e = h.valid
        parts = ledger.PARTS[kind](conn, ref)
        if parts is None:
            out.problems.append(
                f"{_name(kind, ref)} was deleted (it is recorded in ledger entry {e.seq})"
            )
            continue
        checked = ledger.as_recorded(parts, e.parts)
        late += len(checked) < len(parts)
        if ledger.combine(checked) == e.digest:
            continue
        recorded = e.parts
        changed = [p for p, d in checked.items() if recorded.get(p) != d] or ["record"]
        what = ", ".join(_PART_NOUN.get(p, p) for p in changed)
        out.problems.append(
            f"{_name(kind, ref)}: {what} changed after it was recorded (ledger entry {e.seq})"
        )
    updated = sorted(ref for (kind, ref), h in seals.items() if kind == "system" and h.reseals)
    if updated:
        out.limits.append(
            f"{len(updated)} system record(s) were re-sealed when a later ingest reported new "
            f"metadata (systems {', '.join(map(str, updated[:10]))}): their provider, version "
            "and metadata are vouched for as last ingested, not as first"
        )
    if late:
        out.limits.append(
            f"{late} object(s) were sealed by an older cuegap, before it sealed quarantine "
            "resolutions and conversation config snapshots: those parts of them are not "
            "covered by the ledger"
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


def _check_anchors(entries: list[ledger.Entry], out: Verification) -> None:
    """Name the entries sealed after the newest head vouched for from outside the store.

    Called when a witness file or trusted keys were given: what was sealed after the newest
    witnessed head or trusted sign-off is vouched for only by the store itself, so an
    edit sealed there by someone with write access could not be told from cuegap's own.
    """
    seq_of = {e.entry_hash: e.seq for e in entries}
    anchored = [(seq_of[h], label) for h, label in out.anchors if h in seq_of]
    newest, label = max(anchored, default=(0, ""))
    after = [e for e in entries if e.seq > newest and e.kind != "genesis"]
    if not after:
        return
    kinds: dict[str, int] = {}
    for e in after:
        kinds[e.kind] = kinds.get(e.kind, 0) + 1
    what = ", ".join(f"{n} {_NOUN.get(k, k)}" + ("s" if n > 1 else "") for k, n in kinds.items())
    since = (
        f"the newest outside anchor ({label}, ledger entry {newest})"
        if newest
        else ("any outside anchor (no witnessed head or trusted sign-off is in this ledger)")
    )
    out.limits.append(
        f"ledger entries {after[0].seq}–{after[-1].seq} ({what}) were sealed after {since}: "
        "not covered by any outside anchor, so only the store vouches for them; record a "
        "witness (`cuegap witness FILE`) or sign off to anchor them"
    )
