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

from sqlalchemy.engine import Connection

from cuegap.ingest import bbq_results
from cuegap.ingest._guard import clean_run
from cuegap.ingest._qa_loader import _conflict, _QABank, judge
from cuegap.ingest._records import Rejected

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
