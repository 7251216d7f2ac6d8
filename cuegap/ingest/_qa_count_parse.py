"""The QA design's partition parser: one file's raw lines to tally keys and quarantine.

It runs the BBQ-style results reader (:func:`cuegap.ingest.bbq_results.read_lines`) and
the QA loader's checks, join to the item bank and answer parsing
(:func:`cuegap.ingest._qa_loader.judge`) exactly as ``cuegap ingest`` does, and yields the
rows an engine such as Spark aggregates (see :class:`cuegap.designs.Counting`). It never
touches the store: the QA item banks come in ``context``, read once on the driver.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.engine import Connection

from cuegap.ingest import bbq_results
from cuegap.ingest._guard import clean_run
from cuegap.ingest._qa_loader import _conflict, _QABank, judge
from cuegap.ingest._records import Rejected
from cuegap.schema import QAOption, QATally

#: The field a conflicting QA answer is quarantined under, as the QA loader names it.
QA_CONFLICT_FIELD = "model_output"


def qa_conflict_reason(where: str) -> str:
    """Why a QA answer whose key was counted before with another answer is quarantined
    (the QA loader's reason; ``where`` names the first line)."""
    return _conflict(where)


def qa_count_context(conn: Connection) -> _QABank:
    """Read every stored QA item bank once, for :func:`parse_qa_lines`.

    Parameters
    ----------
    conn : Connection
        A connection to the store the counts will be written to.

    Returns
    -------
    _QABank
        The items by key and source id, as the loader looks them up (picklable).
    """
    return _QABank(conn)


def parse_qa_lines(
    lines: Iterable[bytes], name: str, context: _QABank
) -> Iterator[tuple[Any, ...]]:
    """Turn one QA results file's raw lines into tally-key rows and quarantine rows.

    Parameters
    ----------
    lines : iterable of bytes
        The file's lines, in order, with their line endings.
    name : str
        The file's path or URL (its last part may name the BBQ category).
    context : _QABank
        The QA item banks (:func:`qa_count_context`).

    Yields
    ------
    tuple
        ``("run", RunInfo)`` first; then per record ``("quarantine", line, field, reason,
        raw)`` or ``("record", natural_key, content_hash, line, tally_key, raw)``, where
        ``tally_key`` is in :data:`cuegap.schema.QA_TALLY_KEYS` order (system's name,
        item id, ``strategy`` factor, answer role).
    """
    run, records = bbq_results.read_lines(lines, name)
    yield ("run", clean_run(run))
    for rec in records:
        if isinstance(rec, Rejected):
            yield ("quarantine", rec.line, rec.field, rec.reason, rec.raw)
            continue
        judged = judge(rec, context)
        if isinstance(judged, tuple):
            yield ("quarantine", rec.line, judged[0], judged[1], rec.raw)
            continue
        key = (rec.system, judged.item.id, rec.factors.get("strategy"), judged.role)
        yield ("record", judged.key, judged.content, rec.line, key, rec.raw)


def qa_count_notes(conn: Connection, batch_ids: list[int]) -> list[str]:
    """What a QA analysis of counted files cannot see: answers to BBQ items without a
    target, which :func:`cuegap.schema.qa_counts` counts from the stored answers (by which
    person was chosen), while the tally keeps only the chosen option's role.

    Parameters
    ----------
    conn : Connection
        A connection to the store the files were counted into.
    batch_ids : list of int
        The ingest batches of the counted files.

    Returns
    -------
    list of str
        One line per thing left out; empty when nothing is.
    """
    if not batch_ids:
        return []
    t, o = QATally.__table__.c, QAOption.__table__.c
    untargeted = select(o.item_id).where(o.role == "unresolved")
    n = conn.execute(
        select(func.coalesce(func.sum(t.n), 0)).where(
            t.batch_id.in_(batch_ids), t.item_id.in_(untargeted)
        )
    ).scalar_one()
    if not n:
        return []
    return [
        f"note: {int(n):,} counted answer(s) are to BBQ items without a target; a QA "
        "analysis counts those from stored answers, so it leaves them out: ingest these "
        "files to include them"
    ]
