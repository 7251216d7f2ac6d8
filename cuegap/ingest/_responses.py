"""The dilemma design's response loader: records joined to the item bank, answers parsed.

The per-record path is kept lean because it runs once per response (hundreds of thousands
per audit): insert tuples are built directly, and the columns that follow from the
response text (parse result, content hash) are computed once per distinct text, probe and
item.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

import orjson
from sqlalchemy import select, update
from sqlalchemy.engine import Connection

from cuegap.ingest import itembank as itembank_mod
from cuegap.ingest._batch_tx import batch_transaction, check_parents
from cuegap.ingest._concurrent import in_key_order
from cuegap.ingest._pass import _IngestPass
from cuegap.ingest._records import REST_OF_FILE, Rejected, ResponseRecord
from cuegap.ingest._sql import (
    _CONTENT,
    _ITEM,
    _LINE,
    _SYSTEM,
    _existing,
    _resolve_quarantine,
    _upsert_quarantine,
    _write_responses,
)
from cuegap.ingest._summary import _hash16
from cuegap.ingest._validate import check
from cuegap.ingest.parsing import check_assignment, parse_response
from cuegap.schema import IngestBatch, Item, ItemBank, ItemIndividual

# Derived-column tuples are cached for texts up to this length, in a cache emptied at size.
_DERIVED_TEXT = 2_048
_DERIVED_SIZE = 16_384


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


class _ResponseLoader(_IngestPass):
    """Streams one response file into the store, batch by batch."""

    DIGESTS_RESPONSES = True

    # -- look-ups -------------------------------------------------------------------
    def _bank(self, conn: Connection, name: str | None) -> tuple[int, dict[str, _ItemInfo]] | str:
        """The bank's id and items, or why it cannot be used (cached either way)."""
        key = name or ""
        if key not in self.banks:
            self.banks[key] = self._load_bank(conn, name)
        return self.banks[key]

    def _load_bank(
        self, conn: Connection, name: str | None
    ) -> tuple[int, dict[str, _ItemInfo]] | str:
        if name:
            bank_id = conn.execute(select(ItemBank.id).where(ItemBank.name == name)).scalar()
            if bank_id is None:
                known = conn.execute(select(ItemBank.name)).scalars().all()
                return (
                    f"unknown item bank {name!r}; the store has: {', '.join(known) or 'none'} "
                    "(ingest the item bank first)"
                )
        else:
            rows = conn.execute(select(ItemBank.id, ItemBank.name)).all()
            if len(rows) != 1:
                names = ", ".join(r.name for r in rows) or "none"
                return (
                    'no item bank named (add "item_bank" to the header or the line) and the '
                    f"store holds {len(rows)} banks: {names}"
                )
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
            items[r.item_key] = _ItemInfo(
                r.id, r.condition, r.difficulty, frozenset(people), solution
            )
        return bank_id, items

    def _flush(self, buf: list[ResponseRecord | Rejected]) -> None:
        if not buf:
            return
        s = self.summary
        s.read += len(buf)
        quarantine: list[dict[str, Any]] = []
        rows: dict[str, tuple[Any, ...]] = {}
        recs: dict[str, ResponseRecord] = {}
        banks, systems, derived = self.banks, self.systems, self.derived
        header_bank = self.info.item_bank
        run_id, batch_id = self.run_id, self.batch_id
        null, true, false = self.codec.null, self.codec.true, self.codec.false
        blake2b, dumps = hashlib.blake2b, orjson.dumps
        accounted: list[int] = []  # lines stored or counted as duplicates: resolve quarantine
        with batch_transaction(self.engine) as (conn, unchecked):
            for rec in buf:
                if isinstance(rec, Rejected):
                    if rec.field == REST_OF_FILE:
                        s.incomplete = rec.reason
                    self._quarantine(quarantine, rec.line, rec.raw, rec.reason, rec.field)
                    continue
                problem = None if rec.fits else check(rec)  # fits: the reader checked
                if problem is not None:  # the same rule on every backend (see _validate)
                    self._quarantine(quarantine, rec.line, rec.raw, problem[1], problem[0])
                    continue
                bank_name = rec.item_bank or header_bank
                bank = banks.get(bank_name or "")
                if bank is None:
                    bank = self._bank(conn, bank_name)
                if isinstance(bank, str):
                    self._quarantine(quarantine, rec.line, rec.raw, bank, "item_bank")
                    continue
                bank_id, items = bank
                item = items.get(rec.item_id)
                probe, individual = rec.probe, rec.individual
                if (
                    item is None
                    or (item.condition == "neutral" and probe != "main")
                    or (individual is not None and individual not in item.labels)
                ):
                    self._reject(quarantine, rec, item, bank_name or bank_id)
                    continue
                response = rec.response
                # Other probes' columns depend on the text and probe alone.
                dkey = (response, probe, item.main_key if probe == "main" else "")
                tail = derived.get(dkey)
                if tail is None:  # parsed only when not known: the same text parses alike
                    tail = self._derive(dkey, item)
                consequences = rec.consequences
                natural = (
                    f"{rec.system}\x1f{bank_id}\x1f{rec.item_id}\x1f{probe}\x1f"
                    f"{individual or ''}\x1f{'1' if consequences else '0'}\x1f"
                    f"{rec.prompt_variant}\x1f{rec.repeat}"
                )
                key = blake2b(natural.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()
                system_id = systems.get(rec.system)
                if system_id is None:
                    system_id = self._system(conn, rec.system)
                prompt, sample_id, runner = rec.prompt, rec.sample_id, rec.runner_result
                row = (
                    key,
                    run_id,
                    batch_id,
                    system_id,
                    item.id,
                    item.condition,
                    null if item.difficulty is None else item.difficulty,
                    probe,
                    null if individual is None else individual,
                    true if consequences else false,
                    rec.prompt_variant,
                    rec.repeat,
                    response,
                    null if prompt is None else prompt,
                    null if sample_id is None else sample_id,
                    null if runner is None else dumps(runner).decode(),
                    rec.line,
                    *tail,
                )
                prev = rows.get(key)
                if prev is None:
                    rows[key] = row
                    recs[key] = rec
                elif prev[_CONTENT] == tail[0]:
                    s.duplicate += 1
                    accounted.append(rec.line)
                else:
                    self._quarantine(
                        quarantine,
                        rec.line,
                        rec.raw,
                        f"conflicts with line {prev[_LINE]} of the same file: same system, "
                        "item, probe, individual, consequences, prompt_variant and repeat but a "
                        "different response (give one a different 'repeat')",
                        "response",
                    )
            # Insert first; only when some keys were already stored (a re-ingest, an overlap)
            # look them up to tell duplicates from conflicts. A fresh file pays no lookups.
            inserted, stored = _write_responses(conn, rows.values())
            s.stored += inserted
            if inserted < len(rows):
                existing = _existing(conn, list(rows))
                for key, row in rows.items():
                    old = existing.get(key)
                    if old is None or (old[3] == batch_id and old[1] == row[_LINE]):
                        accounted.append(row[_LINE])
                        continue  # stored by this transaction
                    if old[0] == row[_CONTENT]:
                        s.duplicate += 1
                        accounted.append(row[_LINE])
                        continue
                    where = (
                        f"line {old[1]} of the same file"
                        if old[3] == batch_id
                        else f"the stored response from {old[2]} line {old[1]}"
                    )
                    self._quarantine(
                        quarantine,
                        row[_LINE],
                        recs[key].raw,
                        f"conflicts with {where}: same system, item, probe, individual, "
                        "consequences, prompt_variant and repeat but a different response "
                        "(give one a different 'repeat')",
                        "response",
                    )
            else:
                accounted.extend(row[_LINE] for row in rows.values())
            if quarantine:
                conn.execute(
                    _upsert_quarantine(conn), in_key_order(quarantine, "source_sha256", "line_no")
                )
            if unchecked:  # every parent the batch's rows (and tally rows) refer to
                check_parents(
                    conn,
                    {
                        "run": (run_id,),
                        "ingest_batch": (batch_id,),
                        "system": {row[_SYSTEM] for row in rows.values()},
                        "item": {row[_ITEM] for row in rows.values()},
                    },
                )
            if self.open_quarantine and accounted:
                _resolve_quarantine(conn, self.sha, accounted, batch_id)
            conn.execute(
                update(IngestBatch)
                .where(IngestBatch.id == self.batch_id)
                .values(
                    lines_read=s.read,
                    stored=s.stored,
                    duplicate=s.duplicate,
                    quarantined=s.quarantined,
                )
            )
        if self.digest is not None:  # committed: what the ledger will hash (see _digest)
            self.digest.add(*(stored or (None,)))

    def _reject(
        self,
        quarantine: list[dict[str, Any]],
        rec: ResponseRecord,
        item: _ItemInfo | None,
        bank: str | int,
    ) -> None:
        """Quarantine a record whose item, probe or individual does not fit the bank."""
        if item is None:
            reason = f"unknown item_id {rec.item_id!r} in item bank {bank!r}"
            fld = "item_id"
        elif item.condition == "neutral" and rec.probe != "main":
            reason = (
                f"probe {rec.probe!r} does not apply to the neutral item {rec.item_id!r} "
                "(only 'main')"
            )
            fld = "probe"
        else:
            reason = (
                f"individual {rec.individual!r} is not in item {rec.item_id!r} "
                f"(has {', '.join(sorted(item.labels))})"
            )
            fld = "individual"
        self._quarantine(quarantine, rec.line, rec.raw, reason, fld)

    def _derive(self, dkey: tuple[str, str, str], item: _ItemInfo) -> tuple[Any, ...]:
        """The columns that follow from (response, probe, item), cached for short texts."""
        response, probe, _ = dkey
        parsed = parse_response(response, probe=probe, condition=item.condition)
        null, codec = self.codec.null, self.codec
        recovered = None
        if probe == "main" and item.solution is not None:
            recovered = check_assignment(parsed.assignment, item.solution)
        tail = (
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
        if len(response) <= _DERIVED_TEXT:
            if len(self.derived) >= _DERIVED_SIZE:
                self.derived.clear()
            self.derived[dkey] = tail
        return tail
