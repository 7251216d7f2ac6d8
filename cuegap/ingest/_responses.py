"""The dilemma design's response loader: records joined to the item bank, answers parsed.

The per-record path is kept lean because it runs once per response (hundreds of thousands
per audit): insert tuples are built directly, and the columns that follow from the
response text (parse result, content hash) are computed once per distinct text, probe and
item.
"""

from __future__ import annotations

from typing import Any

import orjson
from sqlalchemy import update
from sqlalchemy.engine import Connection

from cuegap.ingest._batch_tx import batch_transaction, check_parents
from cuegap.ingest._concurrent import in_key_order
from cuegap.ingest._pass import _IngestPass
from cuegap.ingest._records import REST_OF_FILE, Rejected, ResponseRecord
from cuegap.ingest._response_rules import (
    _ItemInfo,
    conflict_reason,
    derived_columns,
    load_bank,
    misfit,
    natural_key,
    reject_reason,
)
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
from cuegap.ingest._validate import check
from cuegap.schema import IngestBatch

# Derived-column tuples are cached for texts up to this length, in a cache emptied at size.
_DERIVED_TEXT = 2_048
_DERIVED_SIZE = 16_384


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
        return load_bank(conn, name)

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
        dumps = orjson.dumps
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
                if misfit(rec, item):
                    self._reject(quarantine, rec, item, bank_name or bank_id)
                    continue
                response = rec.response
                # Other probes' columns depend on the text and probe alone.
                dkey = (response, probe, item.main_key if probe == "main" else "")
                tail = derived.get(dkey)
                if tail is None:  # parsed only when not known: the same text parses alike
                    tail = self._derive(dkey, item)
                consequences = rec.consequences
                key = natural_key(rec, bank_id)
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
                    where = f"line {prev[_LINE]} of the same file"
                    self._quarantine(
                        quarantine, rec.line, rec.raw, conflict_reason(where), "response"
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
                        quarantine, row[_LINE], recs[key].raw, conflict_reason(where), "response"
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
        reason, fld = reject_reason(rec, item, bank)
        self._quarantine(quarantine, rec.line, rec.raw, reason, fld)

    def _derive(self, dkey: tuple[str, str, str], item: _ItemInfo) -> tuple[Any, ...]:
        """The columns that follow from (response, probe, item), cached for short texts."""
        response = dkey[0]
        tail = derived_columns(response, dkey[1], item, self.codec)
        if len(response) <= _DERIVED_TEXT:
            if len(self.derived) >= _DERIVED_SIZE:
                self.derived.clear()
            self.derived[dkey] = tail
        return tail
