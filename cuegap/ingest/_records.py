"""What readers yield: normalised response records, rejected lines and run metadata."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

PROBES = ("main", "could_be", "what_if")
# The ``field`` of a :class:`Rejected` that stands for the unreadable rest of a file (a JSON
# error before its end): the loader reports the file as incomplete.
REST_OF_FILE = "(rest of file)"
MAX_TEXT = 500
"""Longest quarantine reason or error line kept, before the length note."""


def clip(text: str, limit: int = MAX_TEXT) -> str:
    """``text`` on one line, cut to ``limit`` characters with an ellipsis and its length.

    Parameters
    ----------
    text : str
        A reason or message, possibly quoting a huge field.
    limit : int
        Characters kept before the note.

    Returns
    -------
    str
        E.g. ``"field 'x': 'xxxx… (10,000,012 characters in all)"``.
    """
    one = " ".join(text.splitlines()) if "\n" in text or "\r" in text else text
    if len(one) <= limit:
        return one
    return f"{one[:limit]}… ({len(one):,} characters in all)"


class IngestError(Exception):
    """A whole file cannot be read (unknown format, bad version, invalid item bank).

    Line-level problems never raise: the line is quarantined with its reason instead.
    The message is kept to one line of at most :data:`MAX_TEXT` characters (:func:`clip`).
    """

    def __init__(self, message: object = "") -> None:
        super().__init__(clip(str(message)))


@dataclass(slots=True)
class SystemInfo:
    """Metadata of an audited system as a runner reports it."""

    provider: str | None = None
    version: str | None = None
    metadata: dict[str, Any] | None = None


@dataclass(slots=True)
class RunInfo:
    """What a file says about the run that produced it."""

    runner: str | None = None
    runner_version: str | None = None
    item_bank: str | None = None
    started_at: str | None = None
    settings: dict[str, Any] | None = None
    systems: dict[str, SystemInfo] = field(default_factory=dict)


@dataclass(slots=True)
class ResponseRecord:
    """One system output to one probe, in cuegap's terms."""

    line: int
    raw: str
    system: str
    item_id: str
    probe: str
    response: str
    individual: str | None = None
    consequences: bool = True
    prompt_variant: str = "v0"
    repeat: int = 0
    prompt: str | None = None
    sample_id: str | None = None
    item_bank: str | None = None
    runner_result: dict[str, Any] | None = None
    # Set by a reader that has already checked, as ``cuegap.ingest._validate.check`` does,
    # that every value fits the store; the loader then skips that check.
    fits: bool = False


@dataclass(slots=True)
class Rejected:
    """An input line that cannot become a response, and why."""

    line: int
    raw: str
    reason: str
    field: str | None = None


Record = ResponseRecord | Rejected


@dataclass(slots=True)
class ResponseStream:
    """A reader's output for one file of responses.

    Attributes
    ----------
    run : RunInfo
        Run metadata from the file header, if any.
    records : Iterator[Record]
        Streamed records, in file order.
    position : Callable[[], int]
        Bytes consumed so far, for progress display.
    total : int
        Size of the file in bytes.
    """

    run: RunInfo
    records: Iterator[Record]
    position: Callable[[], int]
    total: int
