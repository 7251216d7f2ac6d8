"""Quarantining an item bank's bad lines in the store, with an ingest batch that counts them.

A bank read line by line (BBQ's ``data/*.jsonl``, ImplicitBBQ's) stores its good lines and
quarantines the others. Those lines are kept in the ``quarantine`` table like a response
file's (file, line, field, reason, raw text), under an ``ingest_batch`` row of the pass
(no run: a bank has no runner) whose counts add up, ``read = stored + duplicate +
quarantined``, so that ``cuegap status`` and the report's provenance tables count them. A
bank with no bad line gets no batch (as before). The batch is sealed in the ledger in the
bank's transaction; an earlier pass of the same file whose lines move to this one is
sealed anew, as for response files.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from sqlalchemy import insert
from sqlalchemy.engine import Connection

from cuegap.ingest._guard import clip
from cuegap.ingest._sql import _intact_batches_with_quarantine, _upsert_quarantine
from cuegap.ingest._summary import IngestSummary, file_sha256, utcnow
from cuegap.ingest._validate import storable
from cuegap.schema import IngestBatch, ledger

BadLine = tuple[int, str, str, str]  # line, raw text, field ("" when none), reason


def line_reason(field: str, why: str) -> str:
    """A bad line's reason, naming its field once: ``field 'label': label 2 disagrees``."""
    if not field or f"field {field!r}" in why:
        return clip(why)
    return clip(f"field {field!r}: {why}")


def count_bad_lines(summary: IngestSummary, bad: Sequence[BadLine]) -> None:
    """Add the bad lines to ``summary``'s ``read`` and ``quarantined`` and its problems."""
    summary.read += len(bad)
    summary.quarantined += len(bad)
    summary.problems += [(line, line_reason(fld, why)) for line, _raw, fld, why in bad[:20]]


def quarantine_bank_lines(
    conn: Connection, path: Path, reader: str, summary: IngestSummary, bad: Sequence[BadLine]
) -> int | None:
    """Store a bank pass's bad lines in ``quarantine`` under a new ingest batch.

    Parameters
    ----------
    conn : Connection
        Inside the bank's transaction.
    path : Path
        The bank's file.
    reader : str
        The reader's name (the batch's format).
    summary : IngestSummary
        The pass's counts, final (``read``, ``stored``, ``duplicate``, ``quarantined``);
        its ``batch_id`` is set.
    bad : sequence of (line, raw, field, reason)
        The quarantined lines.

    Returns
    -------
    int or None
        The batch's id; None when there was no bad line (no batch is written).
    """
    if not bad:
        return None
    sha = file_sha256(path)
    source = storable(str(Path(path).resolve()))
    earlier = _intact_batches_with_quarantine(conn, sha)
    now = utcnow()
    batch_id = conn.execute(
        insert(IngestBatch).returning(IngestBatch.id),
        {
            "run_id": None,
            "source_path": source,
            "source_sha256": sha,
            "format": reader,
            "status": "completed",
            "lines_read": summary.read,
            "stored": summary.stored,
            "duplicate": summary.duplicate,
            "quarantined": summary.quarantined,
            "started_at": now,
            "finished_at": now,
        },
    ).scalar_one()
    rows = [
        {
            "batch_id": batch_id,
            "source_path": source,
            "source_sha256": sha,
            "line_no": line,
            "field": storable(fld)[:100] or None,
            "reason": storable(line_reason(fld, why)),
            "raw": storable(raw),
            "created_at": now,
            "resolved_at": None,
            "resolved_batch_id": None,
        }
        for line, raw, fld, why in bad
    ]
    conn.execute(_upsert_quarantine(conn), rows)
    ledger.record(conn, "batch", batch_id)
    for b in earlier:  # its lines moved to this batch: sealed anew
        ledger.record(conn, "batch", b, only_if_changed=True)
    summary.batch_id = batch_id
    return batch_id
