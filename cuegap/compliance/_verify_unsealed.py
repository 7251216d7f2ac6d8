"""Rows that no ledger entry covers: what an ingest pass wrote but never sealed.

Every response, QA answer (with its prompt factors), conversation (with its opinions)
and quarantined line belongs to an ingest batch, and is covered by the ledger through
that batch's entry. A pass killed before its end leaves its committed rows in a batch
with no entry: they can be edited without :func:`cuegap.compliance.verify` noticing,
so each such batch is named, with its rows per table and a few of their ids, until
``cuegap init`` (or ingesting the file again) seals them (:mod:`cuegap.ingest._recover`).
Rows of batches written before the store's ledger began are left to the ``legacy``
limit of :func:`cuegap.compliance._verify_ledger._check_objects`.
"""

from __future__ import annotations

from collections import defaultdict

from sqlalchemy import text
from sqlalchemy.engine import Connection

from cuegap.schema import is_alive

# table -> (what its rows are, the FROM clause naming its batch as ``b``)
ROW_TABLES = {
    "response": ("responses", "response t JOIN ingest_batch b ON b.id = t.batch_id"),
    "qa_response": ("QA answers", "qa_response t JOIN ingest_batch b ON b.id = t.batch_id"),
    "qa_response_factor": (
        "QA answers' prompt factors",
        "qa_response_factor t JOIN qa_response r ON r.id = t.response_id "
        "JOIN ingest_batch b ON b.id = r.batch_id",
    ),
    "conversation": ("conversations", "conversation t JOIN ingest_batch b ON b.id = t.batch_id"),
    "conv_opinion": (
        "conversation opinions",
        "conv_opinion t JOIN conversation c ON c.id = t.conversation_id "
        "JOIN ingest_batch b ON b.id = c.batch_id",
    ),
    "quarantine": ("quarantined lines", "quarantine t JOIN ingest_batch b ON b.id = t.batch_id"),
}
_UNSEALED = (
    "b.id > :bound AND b.id NOT IN (SELECT ref_id FROM ledger WHERE kind = 'batch' "
    "AND ref_id IS NOT NULL)"
)
SHOWN_IDS = 5


def unsealed_rows(conn: Connection, bound: int = 0) -> dict[int, dict[str, tuple[int, list[int]]]]:
    """Rows of batches with no ledger entry: batch -> table -> (rows, their first ids).

    Parameters
    ----------
    conn : Connection
        A connection to the store.
    bound : int
        The genesis entry's bound for batches: those up to it predate the ledger.

    Returns
    -------
    dict
        Only batches and tables that hold such rows.
    """
    out: dict[int, dict[str, tuple[int, list[int]]]] = defaultdict(dict)
    for table, (_noun, source) in ROW_TABLES.items():
        counts = conn.execute(
            text(f"SELECT b.id, count(*) FROM {source} WHERE {_UNSEALED} GROUP BY b.id"),
            {"bound": bound},
        ).all()
        for batch_id, n in counts:
            ids = conn.execute(
                text(f"SELECT t.id FROM {source} WHERE b.id = :b ORDER BY t.id LIMIT {SHOWN_IDS}"),
                {"b": batch_id},
            ).scalars()
            out[int(batch_id)][table] = (int(n), [int(i) for i in ids])
    return dict(out)


def unsealed_problems(conn: Connection, bound: int = 0) -> list[str]:
    """One sentence per ingest batch whose rows are not sealed (see the module docstring)."""
    found = unsealed_rows(conn, bound)
    out = []
    for batch_id, tables in sorted(found.items()):
        row = conn.execute(
            text("SELECT status, source_path FROM ingest_batch WHERE id = :b"), {"b": batch_id}
        ).one()
        rows = "; ".join(
            f"{n:,} {ROW_TABLES[t][0]} ({t} ids {', '.join(map(str, ids))}"
            f"{', …' if n > len(ids) else ''})"
            for t, (n, ids) in tables.items()
        )
        out.append(
            f"ingest batch {batch_id} of {row.source_path}: rows not sealed in the ledger, "
            f"so an edit of them would go unnoticed: {rows}; {_why(conn, batch_id, row.status)}"
        )
    return out


def _why(conn: Connection, batch_id: int, status: str) -> str:
    if status != "running":
        return f"the batch ({status}) has no ledger entry: it was written outside cuegap"
    alive = is_alive(conn, batch_id)
    if alive:
        return "an ingest is still writing it: verify again when it has finished"
    if alive is None:
        return (
            "its ingest was interrupted, unless one is running now: run `cuegap init` (or "
            "ingest the file again) to seal them"
        )
    return "its ingest was interrupted: run `cuegap init` (or ingest the file again) to seal them"
