"""Finish what an interrupted ingest pass left: seal its committed rows in the ledger.

A pass writes its records in transactions of ``batch_size`` records, each committing its
rows together with the batch's running counts (``lines_read``, ``stored``, ``duplicate``,
``quarantined``), and seals the batch in the ledger when it ends. A pass killed in
between (``kill -9``, a power cut, an out-of-memory kill) leaves its batch "running" and
the rows it committed in no ledger entry; ingesting the file again stores nothing new
(those rows count as duplicates), so nothing would ever seal them.

Those rows are real: each was read from the file and committed whole, with the counts
that account for it. So they are kept and sealed, not deleted: the batch is marked
``interrupted`` with the counts it committed (they balance: read = stored + duplicate +
quarantined, for the lines it got through) and recorded in the ledger, exactly as a pass
that stops with an error seals itself as ``failed``. Ingesting the file again then
stores the rest, its own counts balancing over the whole file.

A batch is recovered only when no live pass holds it (:mod:`cuegap.schema._liveness`), so
an ingest running in another process is left alone. Every ingest does this before it
starts (:func:`cuegap.ingest.ingest_path`), and so does ``cuegap init``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.engine import Engine

from cuegap.ingest._summary import utcnow
from cuegap.schema import IngestBatch, is_alive, ledger

#: Tries, and seconds between them, before a batch whose lock is held counts as live:
#: a killed client's PostgreSQL session can outlive it by a moment.
TRIES, PAUSE_S = 3, 0.1
STATUS = "interrupted"
ERROR = (
    "interrupted: the ingest process stopped before it finished (killed?); the records it "
    "had committed were sealed by recovery; ingest the file again to store the rest"
)


@dataclass(frozen=True, slots=True)
class Interrupted:
    """An ingest batch that was left "running".

    Attributes
    ----------
    batch_id : int
    source_path : str
    lines_read, stored, duplicate, quarantined : int
        The counts it had committed.
    sealed : bool
        True when it was sealed now; False when a live pass still holds it (left alone),
        or when that could not be told (a SQLite store whose lock file cannot be opened).
    """

    batch_id: int
    source_path: str
    lines_read: int
    stored: int
    duplicate: int
    quarantined: int
    sealed: bool


def recover_interrupted(engine: Engine) -> list[Interrupted]:
    """Seal every ingest batch left "running" by a pass that is no longer alive.

    Parameters
    ----------
    engine : Engine
        An initialised store.

    Returns
    -------
    list of Interrupted
        Every batch that was "running", in id order, and whether it was sealed.
    """
    with engine.connect() as conn:
        ids = list(
            conn.execute(
                select(IngestBatch.id)
                .where(IngestBatch.status == "running")
                .order_by(IngestBatch.id)
            ).scalars()
        )
    out = []
    for batch_id in ids:
        if (found := _recover(engine, batch_id)) is not None:
            out.append(found)
    return out


def _reseal_taken_over(conn: Any, batch_id: int, run_id: int | None) -> None:
    """Re-seal the earlier batches of the same file whose quarantined lines the dead pass
    stored or took over, as a pass that finishes does: right after its own seal, and only
    when nothing but their quarantine parts changed (anything else is left for verify)."""
    b = IngestBatch.__table__
    earlier = conn.execute(
        select(b.c.id).where(b.c.run_id == run_id, b.c.id < batch_id).order_by(b.c.id)
    ).scalars()
    for other in list(earlier):
        last = ledger.latest_entry(conn, "batch", other)
        parts = ledger.PARTS["batch"](conn, other)
        if last is None or parts is None:
            continue
        now = ledger.as_recorded(parts, last.parts)
        if ledger.combine(now) == last.digest:
            continue
        was = last.parts
        changed = {p for p in set(now) | set(was) if now.get(p) != was.get(p)}
        if changed <= ledger.QUARANTINE_PARTS:
            ledger.record(conn, "batch", other, parts=parts)


def _recover(engine: Engine, batch_id: int) -> Interrupted | None:
    """Seal one batch if its pass is dead; None when it finished meanwhile."""
    b = IngestBatch.__table__
    for attempt in range(TRIES):
        with engine.begin() as conn:
            # The ledger's lock first: on SQLite it is the store's write lock, so the pass
            # cannot commit its own end between the checks below and the seal.
            ledger.lock_ledger(conn)
            row = conn.execute(select(b).where(b.c.id == batch_id, b.c.status == "running")).first()
            if row is None:
                return None
            alive = is_alive(conn, batch_id)
            if alive is False:
                conn.execute(
                    update(b)
                    .where(b.c.id == batch_id)
                    .values(status=STATUS, error=ERROR, finished_at=utcnow())
                )
                ledger.record(conn, "batch", batch_id)
                _reseal_taken_over(conn, batch_id, row.run_id)
        pg = engine.dialect.name == "postgresql"  # SQLite: the kernel drops it at death
        if alive is not True or not pg or attempt == TRIES - 1:
            return Interrupted(
                batch_id,
                row.source_path,
                row.lines_read,
                row.stored,
                row.duplicate,
                row.quarantined,
                sealed=alive is False,
            )
        time.sleep(PAUSE_S)
    raise AssertionError("unreachable")  # pragma: no cover
