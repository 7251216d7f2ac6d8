"""What the store can hold: one check per record, identical for SQLite and PostgreSQL.

SQLite stores almost anything (text of any length, 64-bit integers, NUL characters),
PostgreSQL refuses more (``varchar(n)`` limits, 32-bit ``integer``, no NUL in text, no
lone surrogates). A record must not store on one backend and abort the file on the other,
so every record is checked here against the stricter of the two before it is written: a
value that does not fit is quarantined with its file, line and field, never a traceback.

Depends only on the schema's table definitions and orjson; no database access.
"""

from __future__ import annotations

from typing import Any

import orjson
from sqlalchemy import Integer

from cuegap.ingest._records import ResponseRecord
from cuegap.schema import Item, ItemBank, Response, System

# Readers replace bytes that are not UTF-8 (and lone surrogate escapes) in streamed JSON
# with this Unicode noncharacter (reserved for a program's internal use, so never valid
# in interchanged text); a record holding it is quarantined, naming the field.
INVALID_MARK = "\ufdd0"
_MARK_BYTES = INVALID_MARK.encode()


def _limit(column: Any) -> int | None:
    """A column's ``varchar(n)`` length (SQLModel's AutoString or a String), else None."""
    length = getattr(column.type, "length", None)
    return length if isinstance(length, int) else None


# (record attribute, column it is stored in): the varchar limits PostgreSQL enforces.
_TEXT_LIMITS: tuple[tuple[str, int | None], ...] = (
    ("system", _limit(System.__table__.c.name)),
    ("item_bank", _limit(ItemBank.__table__.c.name)),
    ("item_id", _limit(Item.__table__.c.item_key)),
    ("probe", _limit(Response.__table__.c.probe)),
    ("individual", _limit(Response.__table__.c.individual)),
    ("prompt_variant", _limit(Response.__table__.c.prompt_variant)),
    ("sample_id", _limit(Response.__table__.c.sample_id)),
    ("response", None),
    ("prompt", None),
)
# Integer columns are 32-bit on PostgreSQL; BigInteger would be 64-bit everywhere.
_REPEAT_MAX = 2**31 - 1 if type(Response.__table__.c.repeat.type) is Integer else 2**63 - 1


def text_problem(value: str) -> str | None:
    """Why a text value cannot be stored (NUL, invalid UTF-8, lone surrogate), else None."""
    if "\x00" in value:
        return "holds a NUL character (\\u0000), which the store cannot hold"
    if value.isascii():
        return None
    if INVALID_MARK in value:
        return "holds bytes that are not valid UTF-8 (or a lone surrogate escape)"
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return "holds a lone surrogate (an invalid \\udXXX escape), which is not text"
    return None


def check(rec: ResponseRecord) -> tuple[str, str] | None:
    """Whether ``rec`` fits the store on every backend.

    Parameters
    ----------
    rec : ResponseRecord
        A record as a reader built it.

    Returns
    -------
    tuple of (str, str) or None
        ``(field, reason)`` for the first value that does not fit, else None.
    """
    for name, limit in _TEXT_LIMITS:
        value = getattr(rec, name)
        if value is None:
            continue
        if not isinstance(value, str):
            return name, f"field {name!r}: must be a string, got {type(value).__name__}"
        why = text_problem(value)
        if why is not None:
            return name, f"field {name!r} {why}"
        if limit is not None and len(value) > limit:
            return name, (
                f"field {name!r}: {len(value):,} characters, longer than the {limit} the "
                "store holds"
            )
    repeat = rec.repeat
    if type(repeat) is not int or not 0 <= repeat <= _REPEAT_MAX:
        return "repeat", f"field 'repeat': {repeat!r} is not an integer from 0 to {_REPEAT_MAX:,}"
    if rec.runner_result is not None:
        try:
            encoded = orjson.dumps(rec.runner_result)
        except (TypeError, orjson.JSONEncodeError) as exc:
            return "runner_result", f"the runner's result cannot be stored as JSON: {exc}"
        if b"\\u0000" in encoded or _MARK_BYTES in encoded:
            return "runner_result", (
                "the runner's result holds a NUL character or bytes that are not valid UTF-8"
            )
    return None


def storable(value: str) -> str:
    """``value`` made safe to keep in a text column: NUL and lone surrogates escaped.

    For what the store keeps *about* a bad line (its raw text in quarantine, a file name),
    which must never fail to be written.
    """
    if "\x00" in value:
        value = value.replace("\x00", "\\u0000")
    if value.isascii():
        return value
    return value.encode("utf-8", "backslashreplace").decode("utf-8")
