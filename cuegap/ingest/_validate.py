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


_LIMIT = {name: 2**63 if limit is None else limit for name, limit in _TEXT_LIMITS}
_MAX_SYSTEM, _MAX_BANK, _MAX_ITEM = _LIMIT["system"], _LIMIT["item_bank"], _LIMIT["item_id"]
_MAX_PROBE, _MAX_INDIVIDUAL = _LIMIT["probe"], _LIMIT["individual"]
_MAX_VARIANT, _MAX_SAMPLE = _LIMIT["prompt_variant"], _LIMIT["sample_id"]


def _fits(rec: ResponseRecord) -> bool:
    """True for the common record that :func:`check` accepts: a fast path, no reasons.

    Every text field a string (or None) and, joined, ASCII without NUL (so no field holds
    NUL, invalid UTF-8 or a lone surrogate), each within its limit, ``repeat`` in range and
    no runner result. False means "let the full check decide", never "invalid".
    """
    system, bank, item, probe = rec.system, rec.item_bank, rec.item_id, rec.probe
    individual, variant, sample = rec.individual, rec.prompt_variant, rec.sample_id
    texts = (system, bank, item, probe, individual, variant, sample, rec.response, rec.prompt)
    try:  # str.join refuses anything that is not a str, as the full check does
        joined = "".join([t for t in texts if t is not None])
    except TypeError:
        return False
    repeat = rec.repeat
    return (
        joined.isascii()
        and "\x00" not in joined
        and (system is None or len(system) <= _MAX_SYSTEM)
        and (bank is None or len(bank) <= _MAX_BANK)
        and (item is None or len(item) <= _MAX_ITEM)
        and (probe is None or len(probe) <= _MAX_PROBE)
        and (individual is None or len(individual) <= _MAX_INDIVIDUAL)
        and (variant is None or len(variant) <= _MAX_VARIANT)
        and (sample is None or len(sample) <= _MAX_SAMPLE)
        and type(repeat) is int
        and 0 <= repeat <= _REPEAT_MAX
        and rec.runner_result is None
    )


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
    if _fits(rec):  # most records: a fast path (tests/test_validate.py: the same answers)
        return None
    return _check_each(rec)


def _check_each(rec: ResponseRecord) -> tuple[str, str] | None:
    """:func:`check` field by field, naming the first problem."""
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
