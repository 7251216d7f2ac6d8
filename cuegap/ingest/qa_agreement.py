"""Whether cuegap's reading of an answer agrees with the runner's own reading.

Some runners store their own reading of the system's text beside it (ImplicitBBQ's
``predicted_index``, an inspect scorer's letter). That reading decides the answer; the
text is still read by :func:`cuegap.ingest.qa_parsing.parse_qa_answer`, and the answer's
``parse_reason`` says whether the two agree, so that the QA data-quality table can count
agreements (:func:`cuegap.schema.qa_runner_agreement` counts the prefixes below).

Answers stored before ingest noted agreement have a runner reading and no note; their raw
text is kept, so :func:`agreement_from_stored_text` reads it again at analysis time
(nothing stored is rewritten: the ledger seals it).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from sqlalchemy import func, select
from sqlalchemy.engine import Connection

from cuegap.ingest.qa_parsing import Choice, parse_qa_answer
from cuegap.schema import RUNNER_AGREES, RUNNER_DIFFERS, RUNNER_UNREAD, QAOption, QAResponse, System

__all__ = [
    "RUNNER_AGREES",
    "RUNNER_DIFFERS",
    "RUNNER_UNREAD",
    "agreement_from_stored_text",
    "runner_note",
]

_CHUNK = 500


def runner_note(text: str | None, choices: Sequence[Choice], runner_index: int) -> str | None:
    """Whether cuegap's reading of an answer's text agrees with the runner's own reading.

    Stored as the ``parse_reason`` of an answer that the runner's reading decided, so that
    the QA data-quality table can count agreements (prefixes :data:`RUNNER_AGREES`,
    :data:`RUNNER_DIFFERS`, :data:`RUNNER_UNREAD`).

    Parameters
    ----------
    text : str or None
        The system's raw answer, as the runner stored it.
    choices : sequence of Choice
        The item's options.
    runner_index : int
        The option the runner read (its predicted index or label).

    Returns
    -------
    str or None
        The note; None when there is no text to read.
    """
    if text is None or not text.strip():
        return None
    got = parse_qa_answer(text, choices)
    if got.index is None:
        return RUNNER_UNREAD + (got.reason or "unparsable")
    if got.index == runner_index:
        return RUNNER_AGREES
    label = next(c.label for c in choices if c.index == got.index)
    return RUNNER_DIFFERS + f"option {label} (index {got.index})"


def _kind(note: str) -> str:
    if note == RUNNER_AGREES:
        return "agree"
    return "differ" if note.startswith(RUNNER_DIFFERS) else "unreadable"


def agreement_from_stored_text(conn: Connection) -> dict[str, Counter[str]]:
    """Agreement of answers the runner read but ingest left without a note, from their text.

    Answers stored before cuegap noted agreement at ingest have the runner's reading
    (``predicted``, and ``parsed_index`` the option it chose), no ``parse_reason`` and
    their raw text; :func:`runner_note` reads that text now. Nothing is written.

    Parameters
    ----------
    conn : Connection
        The store (inside the analysis's snapshot).

    Returns
    -------
    dict of str to Counter
        Per system: ``agree``, ``differ``, ``unreadable`` (as the stored notes count them)
        and ``from_text`` (all three together: the answers read again now). Answers with
        no text have nothing to compare and are not counted.
    """
    r = QAResponse.__table__
    rows = conn.execute(
        select(System.name, r.c.item_id, r.c.parsed_index, r.c.raw_text)
        .join(System, System.id == r.c.system_id)
        .where(
            r.c.predicted.is_not(None),
            r.c.parse_reason.is_(None),
            r.c.parsed_index.is_not(None),
            func.length(r.c.raw_text) > 0,
        )
        .order_by(r.c.id)
    ).all()
    item_ids = sorted({row.item_id for row in rows})
    choices: dict[int, list[Choice]] = {}
    o = QAOption.__table__
    for start in range(0, len(item_ids), _CHUNK):
        chunk = item_ids[start : start + _CHUNK]
        for opt in conn.execute(
            select(o.c.item_id, o.c.option_index, o.c.label, o.c.text, o.c.role)
            .where(o.c.item_id.in_(chunk))
            .order_by(o.c.item_id, o.c.option_index)
        ):
            choices.setdefault(opt.item_id, []).append(
                Choice(opt.option_index, opt.label, opt.text, opt.role)
            )
    out: dict[str, Counter[str]] = {}
    for row in rows:
        note = runner_note(row.raw_text, choices.get(row.item_id, []), row.parsed_index)
        if note is None:  # blank text: nothing to compare
            continue
        counts = out.setdefault(row.name, Counter())
        counts[_kind(note)] += 1
        counts["from_text"] += 1
    return out
