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

from collections.abc import Callable
from typing import Any

from cuegap.ingest._records import MAX_TEXT, Rejected, clip

MAX_DEPTH = 100
"""Deepest nesting of a record's JSON value that readers accept (objects and arrays)."""
__all__ = ["MAX_DEPTH", "MAX_TEXT", "clip", "depth_problem", "depth_rejected", "guard_record"]
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
    build: Callable[[], Any], line: int, raw: str, *, what: str = "line", field: str | None = None
) -> Any:
    """``build()``, or a :class:`Rejected` naming the line when a value of an unexpected
    type or size makes it fail.

    Parameters
    ----------
    build : callable
        Maps one record (a closure over it).
    line : int
        The record's line (or member, or sample) number.
    raw : str
        Its text, kept with the quarantine row.
    what : str
        What a record is called in the reason (``line``, ``sample``, ``transcript``).
    field : str, optional
        The field to name when the failure does not say.
    """
    try:
        return build()
    except _UNEXPECTED as exc:
        detail = clip(str(exc), 120) if not isinstance(exc, RecursionError) else "nested"
        return Rejected(
            line,
            raw,
            f"{what} {line}: a value of an unexpected type or size ({detail})",
            field,
        )
