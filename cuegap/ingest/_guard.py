"""Guards every reader shares, so that one damaged record never costs a file (issue 30).

* :func:`depth_problem`: a parsed value nested deeper than :data:`MAX_DEPTH` is refused by
  its record with a reason naming the field, before any recursive code (``orjson.dumps``
  stops at 255 levels, Python at about 1,000) meets it.
* :func:`clip`: quarantine reasons and file-level error messages are one line of at most
  :data:`MAX_TEXT` characters, with the original length, however large the field quoted.
* :func:`guard_record`: the last line of defence around one record's mapping: a value of a
  type the reader did not foresee quarantines that record, naming its line and the field
  when it can be told, instead of ending the file with a traceback.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from cuegap.ingest._records import MAX_TEXT, IngestError, Rejected, clip

MAX_DEPTH = 100
"""Deepest nesting of a record's JSON value that readers accept (objects and arrays)."""
__all__ = [
    "MAX_DEPTH",
    "MAX_TEXT",
    "clip",
    "depth_problem",
    "depth_rejected",
    "guard_all",
    "guard_record",
    "refuse_foreign",
]
_UNEXPECTED = (
    TypeError, ValueError, AttributeError, KeyError, IndexError, OverflowError, RecursionError
)  # fmt: skip


def depth_problem(obj: Any, limit: int = MAX_DEPTH) -> tuple[str | None, str] | None:
    """Whether ``obj`` nests objects or arrays deeper than ``limit`` levels.

    Iterative, so it cannot itself exhaust the stack.

    Returns
    -------
    (str or None, str) or None
        The top-level key holding the deep value (None for an array or a scalar) and a
        reason, or None when ``obj`` is shallow enough.
    """
    if not isinstance(obj, dict | list):
        return None
    stack: list[tuple[Any, int, str | None]] = [(obj, 1, None)]
    while stack:
        node, depth, top = stack.pop()
        if depth > limit:
            where = f"field {top!r}" if top is not None else "a value"
            return top, f"{where} is nested deeper than {limit} levels"
        if isinstance(node, dict):
            for k, v in node.items():
                if isinstance(v, dict | list):
                    stack.append((v, depth + 1, k if top is None and depth == 1 else top))
        else:
            for v in node:
                if isinstance(v, dict | list):
                    stack.append((v, depth + 1, top))
    return None


def depth_rejected(obj: Any, line: int, raw: str, what: str = "line") -> Rejected | None:
    """A :class:`Rejected` for a record nested too deeply, else None."""
    problem = depth_problem(obj)
    if problem is None:
        return None
    return Rejected(line, raw, f"{what} {line}: {problem[1]}", problem[0])


def guard_record(
    line: int,
    raw: str,
    build: Callable[..., Any],
    *args: Any,
    what: str = "line",
    field: str | None = None,
) -> Any:
    """``build(*args)``, or a :class:`Rejected` naming the line when a value of an unexpected
    type or size makes it fail.

    Parameters
    ----------
    line : int
        The record's line (or member, or sample) number.
    raw : str
        Its text, kept with the quarantine row.
    build : callable
        Maps one record, called with ``args``.
    what : str
        What a record is called in the reason (``line``, ``sample``, ``transcript``).
    field : str, optional
        The field to name when the failure does not say.
    """
    try:
        return build(*args)
    except _UNEXPECTED as exc:
        detail = clip(str(exc), 120) if not isinstance(exc, RecursionError) else "nested"
        return Rejected(
            line,
            raw,
            f"{what} {line}: a value of an unexpected type or size ({detail})",
            field,
        )


def guard_all(
    line: int, raw: str, build: Callable[..., Iterable[Any]], *args: Any, what: str = "line"
) -> list[Any]:
    """The records ``build(*args)`` gives for one input record (a list), or one
    :class:`Rejected` as :func:`guard_record` when it fails part-way: none of its records
    is kept then, so a record is stored whole or quarantined."""
    out = guard_record(line, raw, lambda: list(build(*args)), what=what)
    return [out] if isinstance(out, Rejected) else out


FOREIGN_PEEK = 20
"""Records a forced format's reader must fail in a row, from the start, for the file to be
refused as another format (see :func:`refuse_foreign`)."""


def refuse_foreign(records: Iterator[Any], reader: Any, path: Path) -> Iterator[Any]:
    """``records`` unchanged, unless the format was forced onto a file of another format.

    The first :data:`FOREIGN_PEEK` records are read ahead: when there are that many and
    every one of them was
    refused by the reader itself (a :class:`Rejected`) and the reader's ``detect`` does not
    recognise the file, the file is refused in one line before anything is written, rather
    than quarantining each of its lines. A shorter file is read as usual (at most
    ``FOREIGN_PEEK - 1`` quarantine rows).

    Raises
    ------
    IngestError
        Naming the file, the format and the first refusal.
    """
    ahead = list(itertools.islice(records, FOREIGN_PEEK))
    foreign = len(ahead) == FOREIGN_PEEK and all(isinstance(r, Rejected) for r in ahead)
    if foreign and not reader.detect(path):
        first = ahead[0]
        raise IngestError(
            f"{path}: does not look like format {reader.name!r}: its first {len(ahead)} "
            f"records all fail that reader's checks (line {first.line}: {first.reason}); "
            "nothing was written"
        )
    return itertools.chain(ahead, records)
