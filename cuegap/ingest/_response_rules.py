"""The dilemma loader's rules for one record, as pure functions.

What a response's natural key is, why a record that does not fit its item bank is
quarantined, and the columns that follow from a response's text. The bulk loader
(:mod:`cuegap.ingest._responses`) and the partition parser that counts on Spark
(:mod:`cuegap.ingest._count_parse`) both call these, so the two cannot drift apart.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

import orjson
from sqlalchemy import select
from sqlalchemy.engine import Connection

from cuegap.ingest import itembank as itembank_mod
from cuegap.ingest._records import ResponseRecord
from cuegap.ingest._summary import _hash16
from cuegap.ingest.parsing import check_assignment, parse_response
from cuegap.schema import Item, ItemBank, ItemIndividual


@dataclass(slots=True)
class _ItemInfo:
    id: int
    condition: str
    difficulty: str | None
    labels: frozenset[str]
    solution: dict[str, dict[str, str]] | None
    all_labels: str = ""  # the sorted labels joined: what a fully correct puzzle recovers
    main_key: str = ""  # what, besides the text, a main-probe answer's columns depend on

    def __post_init__(self) -> None:
        self.all_labels = "".join(sorted(self.labels))
        self.main_key = self.condition
        if self.solution is not None:
            solution = orjson.dumps(self.solution, option=orjson.OPT_SORT_KEYS).decode()
            self.main_key = f"{self.condition}\x1f{solution}"


def natural_key(rec: ResponseRecord, bank_id: int) -> str:
    """The response key: a hash of system, bank, item, probe, individual, consequences,
    prompt variant and repeat. Two records with one key are one response (a duplicate when
    their texts agree, a conflict when not)."""
    natural = (
        f"{rec.system}\x1f{bank_id}\x1f{rec.item_id}\x1f{rec.probe}\x1f"
        f"{rec.individual or ''}\x1f{'1' if rec.consequences else '0'}\x1f"
        f"{rec.prompt_variant}\x1f{rec.repeat}"
    )
    return hashlib.blake2b(natural.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


def conflict_reason(where: str) -> str:
    """Why a record whose key is already taken by a different response is quarantined."""
    return (
        f"conflicts with {where}: same system, item, probe, individual, consequences, "
        "prompt_variant and repeat but a different response (give one a different 'repeat')"
    )


def unknown_bank_reason(name: str | None, known: list[str]) -> str:
    """Why a record naming ``name`` (or none, with ``known`` banks stored) cannot be used."""
    if name:
        return (
            f"unknown item bank {name!r}; the store has: {', '.join(known) or 'none'} "
            "(ingest the item bank first)"
        )
    return (
        'no item bank named (add "item_bank" to the header or the line) and the '
        f"store holds {len(known)} banks: {', '.join(known) or 'none'}"
    )


def load_bank(conn: Connection, name: str | None) -> tuple[int, dict[str, _ItemInfo]] | str:
    """The bank's id and items by item key, or why records naming it cannot be used."""
    if name:
        bank_id = conn.execute(select(ItemBank.id).where(ItemBank.name == name)).scalar()
        if bank_id is None:
            return unknown_bank_reason(name, list(conn.execute(select(ItemBank.name)).scalars()))
    else:
        rows = conn.execute(select(ItemBank.id, ItemBank.name)).all()
        if len(rows) != 1:
            return unknown_bank_reason(None, [r.name for r in rows])
        bank_id = rows[0].id
    items: dict[str, _ItemInfo] = {}
    indiv: dict[int, dict[str, dict[str, str]]] = {}
    for r in conn.execute(
        select(
            ItemIndividual.item_id,
            ItemIndividual.label,
            ItemIndividual.gender,
            ItemIndividual.race,
            ItemIndividual.solution,
        )
        .join(Item, Item.id == ItemIndividual.item_id)
        .where(Item.bank_id == bank_id)
    ):
        indiv.setdefault(r.item_id, {})[r.label] = r.solution or {
            "gender": r.gender,
            "race": r.race,
        }
    for r in conn.execute(
        select(Item.id, Item.item_key, Item.condition, Item.difficulty).where(
            Item.bank_id == bank_id
        )
    ):
        people = indiv.get(r.id, {})
        solution = people if r.condition in itembank_mod.PUZZLE_CONDITIONS else None
        items[r.item_key] = _ItemInfo(r.id, r.condition, r.difficulty, frozenset(people), solution)
    return bank_id, items


def misfit(rec: ResponseRecord, item: _ItemInfo | None) -> bool:
    """Whether a record's item is unknown, or its probe or individual does not fit it."""
    return (
        item is None
        or (item.condition == "neutral" and rec.probe != "main")
        or (rec.individual is not None and rec.individual not in item.labels)
    )


def reject_reason(rec: ResponseRecord, item: _ItemInfo | None, bank: str | int) -> tuple[str, str]:
    """The reason and field of a record that does not fit the bank (see :func:`misfit`)."""
    if item is None:
        return f"unknown item_id {rec.item_id!r} in item bank {bank!r}", "item_id"
    if item.condition == "neutral" and rec.probe != "main":
        reason = (
            f"probe {rec.probe!r} does not apply to the neutral item {rec.item_id!r} (only 'main')"
        )
        return reason, "probe"
    reason = (
        f"individual {rec.individual!r} is not in item {rec.item_id!r} "
        f"(has {', '.join(sorted(item.labels))})"
    )
    return reason, "individual"


def derived_columns(response: str, probe: str, item: _ItemInfo, codec: Any) -> tuple[Any, ...]:
    """Content hash, parsed answer, chosen individual, parse status, abstained, assignment
    JSON, recovered labels and whether all were recovered, with NULLs and booleans as
    ``codec`` writes them."""
    parsed = parse_response(response, probe=probe, condition=item.condition)
    null = codec.null
    recovered = None
    if probe == "main" and item.solution is not None:
        recovered = check_assignment(parsed.assignment, item.solution)
    return (
        _hash16(response),
        null if parsed.answer is None else parsed.answer,
        null if parsed.individual is None else parsed.individual,
        parsed.status,
        codec.true if parsed.abstained else codec.false,
        null if parsed.assignment is None else orjson.dumps(parsed.assignment).decode(),
        null if recovered is None else recovered,
        codec.null_bool
        if recovered is None
        else (codec.true if recovered == item.all_labels else codec.false),
    )
