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
import math
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from cuegap.ingest._records import MAX_TEXT, IngestError, Rejected, RunInfo, SystemInfo, clip
from cuegap.ingest._validate import storable, text_problem

MAX_DEPTH = 100
"""Deepest nesting of a record's JSON value that readers accept (objects and arrays)."""
__all__ = [
    "MAX_DEPTH",
    "MAX_TEXT",
    "clean_run",
    "clip",
    "depth_problem",
    "depth_rejected",
    "guard_all",
    "guard_record",
    "json_safe",
    "refuse_foreign",
    "unstorable_text",
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


# ------------------------------------------------------------------------- run metadata

_INT_RANGE = (-(2**63), 2**64)  # what orjson (the ledger's hash) writes


def json_safe(value: Any, depth: int = 1) -> Any:
    """``value`` as every backend's JSON column and the ledger's hash can hold it.

    NaN and infinities become None, an integer beyond 64 bits its decimal text, a string
    :func:`~cuegap.ingest._validate.storable` (NUL, lone surrogates escaped), and a value
    nested deeper than :data:`MAX_DEPTH` levels a short note in its place. Recursive, but
    never deeper than :data:`MAX_DEPTH`.
    """
    if isinstance(value, str):
        return storable(value)
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int):
        return value if _INT_RANGE[0] <= value < _INT_RANGE[1] else str(value)
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict | list) and depth > MAX_DEPTH:
        return f"(not kept: nested deeper than {MAX_DEPTH} levels)"
    if isinstance(value, dict):
        return {storable(str(k)): json_safe(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(v, depth + 1) for v in value]
    return storable(str(value))


def _text(value: Any, limit: int) -> str | None:
    """A string column's value: None for a non-string, cut to ``limit`` characters."""
    if not isinstance(value, str) or not value:
        return None
    value = storable(value)
    return value if len(value) <= limit else value[: limit - 1] + "…"


def clean_run(info: RunInfo) -> RunInfo:
    """A reader's run metadata, made safe to store, however odd the header it came from.

    Run metadata only describes the run: a header value of the wrong type is dropped (a
    string field that is not a string, settings that are not an object), one too long is
    cut to its column, and settings and system metadata are made :func:`json_safe`.
    """
    systems = {}
    for name, s in info.systems.items():
        if isinstance(name, str) and isinstance(s, SystemInfo):
            meta = json_safe(s.metadata) if isinstance(s.metadata, dict) else None
            systems[name] = SystemInfo(_text(s.provider, 200), _text(s.version, 200), meta)
    return RunInfo(
        runner=_text(info.runner, 200),
        runner_version=_text(info.runner_version, 100),
        item_bank=_text(info.item_bank, 10_000),
        started_at=_text(info.started_at, 50),
        settings=json_safe(info.settings) if isinstance(info.settings, dict) else None,
        systems=systems,
    )


def unstorable_text(obj: Any) -> tuple[str | None, str] | None:
    """The first string in ``obj`` (a key or a value, at any depth) that no backend can
    store as text (a NUL character, bytes that were not UTF-8), as (the top-level key
    holding it or None, reason); None when every string can be stored.

    For item banks, which are stored whole or refused: PostgreSQL refuses a NUL in text.
    Iterative; call it after :func:`depth_problem`.
    """
    stack: list[tuple[Any, str | None]] = [(obj, None)]
    while stack:
        node, top = stack.pop()
        if isinstance(node, str):
            problem = text_problem(node)
            if problem is not None:
                return top, f"{f'field {top!r}' if top is not None else 'a value'} {problem}"
        elif isinstance(node, dict):
            for k, v in node.items():
                key = k if top is None and node is obj else top
                stack += [(k, key), (v, key)]
        elif isinstance(node, list):
            stack += [(v, top) for v in node]
    return None
