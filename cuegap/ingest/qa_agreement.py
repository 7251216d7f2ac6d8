"""Whether cuegap's reading of an answer agrees with the runner's own reading.

Some runners store their own reading of the system's text beside it (ImplicitBBQ's
``predicted_index``, an inspect scorer's letter). That reading decides the answer; the
text is still read by :func:`cuegap.ingest.qa_parsing.parse_qa_answer`, and the answer's
``parse_reason`` says whether the two agree, so that the QA data-quality table can count
agreements (:func:`cuegap.schema.qa_runner_agreement` counts the prefixes below).
"""

from __future__ import annotations

from collections.abc import Sequence

from cuegap.ingest.qa_parsing import Choice, parse_qa_answer
from cuegap.schema import RUNNER_AGREES, RUNNER_DIFFERS, RUNNER_UNREAD

__all__ = ["RUNNER_AGREES", "RUNNER_DIFFERS", "RUNNER_UNREAD", "runner_note"]


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
