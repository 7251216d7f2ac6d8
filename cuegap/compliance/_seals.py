"""Seal histories: the ledger entry an object's content must still match, and re-seals.

The ledger is append-only, so someone with write access to the store can edit an object
and append one more entry that seals the edited content: the older entries, the witness
file's heads and the heads the sign-offs recorded all stay intact. cuegap therefore never
lets a later entry replace a seal, except where it re-seals objects itself:

* a ``system`` is re-sealed when a later ingest reports new metadata for it (provider,
  version, metadata); the reports signed before keep what they showed;
* an ingest ``batch`` is re-sealed when a later pass of the same file stores its
  quarantined lines or quarantines them again: only the parts that hold its quarantined
  lines may change, and the re-seal follows, in the same transaction, the first seal of
  that later pass.

Any other later entry for an object is a **re-seal** and :func:`cuegap.compliance.verify`
names it, with the parts that differ; the object's content is then checked against the
last entry that was a legitimate seal, not against the re-seal.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from sqlalchemy import select
from sqlalchemy.engine import Connection

from cuegap.schema import IngestBatch, ledger

#: The parts of an ingest batch that a later pass of its file may change.
BATCH_RESEAL_PARTS = ledger.QUARANTINE_PARTS


@dataclass(slots=True)
class Reseal:
    """A later entry for an already sealed object."""

    entry: ledger.Entry
    previous: ledger.Entry
    changed: list[str]
    legitimate: bool


@dataclass(slots=True)
class History:
    """Every entry of one object, and the one its content must match."""

    kind: str
    ref: int
    first: ledger.Entry
    valid: ledger.Entry
    reseals: list[Reseal] = field(default_factory=list)

    @property
    def forged(self) -> list[Reseal]:
        """The re-seals cuegap would not have written."""
        return [r for r in self.reseals if not r.legitimate]


def changed_parts(before: ledger.Entry, after: ledger.Entry) -> list[str]:
    """Names of the parts whose digest differs between two entries of one object."""
    a, b = before.parts, after.parts
    changed = sorted(p for p in set(a) | set(b) if a.get(p) != b.get(p))
    return changed or ["record"]


def histories(conn: Connection, entries: list[ledger.Entry]) -> dict[tuple[str, int], History]:
    """The seal history of every object the ledger records, keyed by (kind, id)."""
    by_object: dict[tuple[str, int], list[ledger.Entry]] = defaultdict(list)
    for e in entries:
        if e.kind != "genesis" and e.ref_id is not None:
            by_object[(e.kind, e.ref_id)].append(e)
    runs = _batch_runs(conn, [ref for kind, ref in by_object if kind == "batch"])
    by_seq = {e.seq: e for e in entries}
    first_seq = {key: seals[0].seq for key, seals in by_object.items()}
    out: dict[tuple[str, int], History] = {}
    for (kind, ref), seals in by_object.items():
        h = History(kind, ref, seals[0], seals[0])
        for e in seals[1:]:
            changed = changed_parts(h.valid, e)
            ok = kind == "system" or (
                kind == "batch"
                and set(changed) <= BATCH_RESEAL_PARTS
                and _follows_later_pass(e, ref, by_seq, first_seq, runs)
            )
            h.reseals.append(Reseal(e, h.valid, changed, ok))
            if ok:
                h.valid = e
        out[(kind, ref)] = h
    return out


def _batch_runs(conn: Connection, ids: list[int]) -> dict[int, int | None]:
    out: dict[int, int | None] = {}
    b = IngestBatch.__table__
    for i in range(0, len(ids), 900):
        chunk = ids[i : i + 900]
        out.update(conn.execute(select(b.c.id, b.c.run_id).where(b.c.id.in_(chunk))).all())
    return out


def _follows_later_pass(
    e: ledger.Entry,
    ref: int,
    by_seq: dict[int, ledger.Entry],
    first_seq: dict[tuple[str, int], int],
    runs: dict[int, int | None],
) -> bool:
    """Whether a batch re-seal is one of those written right after a later pass of the
    same file was first sealed (the entries between are re-seals of that file's batches)."""
    seq = e.seq - 1
    while (prev := by_seq.get(seq)) is not None and prev.kind == "batch":
        other = prev.ref_id
        if other is not None and other != ref and runs.get(other) == runs.get(ref):
            if first_seq.get(("batch", other)) == prev.seq:
                return other > ref
        else:
            return False
        seq -= 1
    return False


def reseal_problem(name: str, kind: str, r: Reseal, noun: dict[str, str]) -> str:
    """One sentence naming a re-seal cuegap would not have written."""
    what = ", ".join(noun.get(p, p) for p in r.changed)
    why = (
        "cuegap re-seals an ingest batch only when a later pass of its file stores or "
        "re-quarantines its quarantined lines"
        if kind == "batch"
        else "cuegap seals it once"
    )
    return (
        f"{name} was re-sealed in ledger entry {r.entry.seq} after it was sealed in entry "
        f"{r.previous.seq} ({what} differ): {why}, so the later entry cannot vouch for "
        "changed content"
    )
