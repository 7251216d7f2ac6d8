"""The dilemma design's partition parser: one file's raw lines to tally keys and quarantine.

It runs the generic reader (:func:`cuegap.ingest.generic.read_lines`), the store check and
the loader's rules (:mod:`cuegap.ingest._response_rules`) exactly as ``cuegap ingest``
does, and yields rows an engine such as Spark aggregates (see
:class:`cuegap.designs.Counting` for their shape). It never touches the store: what it
needs from it (the item banks) comes in ``context``, built once on the driver.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.engine import Connection

from cuegap.ingest import generic
from cuegap.ingest._guard import clean_run
from cuegap.ingest._records import Rejected
from cuegap.ingest._response_rules import (
    _ItemInfo,
    derived_columns,
    load_bank,
    misfit,
    natural_key,
    reject_reason,
    unknown_bank_reason,
)
from cuegap.ingest._sql import _PLAIN_CODEC
from cuegap.ingest._validate import check
from cuegap.schema import ItemBank

_DERIVED_TEXT = 2_048
_DERIVED_SIZE = 16_384


@dataclass(frozen=True)
class DilemmaCountContext:
    """The stored item banks as the loader looks them up: by name, and ``""`` for a
    record naming none (the one bank stored, or why there is not exactly one)."""

    banks: dict[str, tuple[int, dict[str, _ItemInfo]] | str]
    known: list[str]


def dilemma_count_context(conn: Connection) -> DilemmaCountContext:
    """Read every stored item bank once, for :func:`parse_dilemma_lines`.

    Parameters
    ----------
    conn : Connection
        A connection to the store the counts will be written to.

    Returns
    -------
    DilemmaCountContext
        The banks by name (picklable, shipped to every partition).
    """
    known = list(conn.execute(select(ItemBank.name).order_by(ItemBank.id)).scalars())
    banks = {name: load_bank(conn, name) for name in known}
    banks[""] = load_bank(conn, None)
    return DilemmaCountContext(banks, known)


def parse_dilemma_lines(
    lines: Iterable[bytes], name: str, context: DilemmaCountContext
) -> Iterator[tuple[Any, ...]]:
    """Turn one file's raw lines into tally-key rows and quarantine rows.

    Parameters
    ----------
    lines : iterable of bytes
        The file's lines, in order, with their line endings.
    name : str
        What messages call the file.
    context : DilemmaCountContext
        The item banks (:func:`dilemma_count_context`).

    Yields
    ------
    tuple
        ``("run", RunInfo)`` first; then per record ``("quarantine", line, field, reason,
        raw)`` or ``("record", natural_key, content_hash, line, tally_key, raw)``, where
        ``tally_key`` is in :data:`cuegap.schema.TALLY_KEYS` order with the system's name
        in place of its id.
    """
    run, records = generic.read_lines(lines, name)
    info = clean_run(run)
    yield ("run", info)
    header_bank = info.item_bank
    banks, codec = context.banks, _PLAIN_CODEC
    derived: dict[tuple[str, str, str], tuple[Any, ...]] = {}
    for rec in records:
        if isinstance(rec, Rejected):
            yield ("quarantine", rec.line, rec.field, rec.reason, rec.raw)
            continue
        problem = None if rec.fits else check(rec)
        if problem is not None:
            yield ("quarantine", rec.line, problem[0], problem[1], rec.raw)
            continue
        bank_name = rec.item_bank or header_bank
        bank = banks.get(bank_name or "")
        if bank is None:
            bank = unknown_bank_reason(bank_name, context.known)
        if isinstance(bank, str):
            yield ("quarantine", rec.line, "item_bank", bank, rec.raw)
            continue
        bank_id, items = bank
        item = items.get(rec.item_id)
        if misfit(rec, item):
            reason, fld = reject_reason(rec, item, bank_name or bank_id)
            yield ("quarantine", rec.line, fld, reason, rec.raw)
            continue
        probe = rec.probe
        dkey = (rec.response, probe, item.main_key if probe == "main" else "")
        tail = derived.get(dkey)
        if tail is None:
            tail = derived_columns(rec.response, probe, item, codec)
            if len(rec.response) <= _DERIVED_TEXT:  # bounded, as the loader's cache is
                if len(derived) >= _DERIVED_SIZE:
                    derived.clear()
                derived[dkey] = tail
        key = (
            rec.system,
            item.id,
            item.condition,
            item.difficulty,
            probe,
            rec.individual,
            rec.consequences,
            rec.prompt_variant,
            rec.repeat == 0,
            tail[1],  # parsed answer
            tail[3],  # parse status
            tail[4],  # abstained
            tail[6],  # recovered
            tail[5] if probe == "main" else None,  # assignment
        )
        yield ("record", natural_key(rec, bank_id), tail[0], rec.line, key, rec.raw)
