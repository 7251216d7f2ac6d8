"""Loading QA answers (:class:`~cuegap.ingest.bbq_results.QARecord`) into ``qa_response``.

The QA counterpart of the dilemma loader, on the same machinery
(:class:`cuegap.ingest._loader._ResponseLoader`): one run and ingest batch per pass, one
transaction per batch retried after a deadlock, every line stored, counted as a duplicate
or quarantined with its reason (``read == stored + duplicate + quarantined``), quarantined
lines resolved when a later pass stores them, the pass sealed in the ledger. Only the
per-batch write differs: records are joined to a QA item bank, their answer is parsed to
an option and its role, and their prompt factors are written beside them.

Join: ``item_id`` is the bank's item id; ``example_id`` + ``category`` is BBQ's id (the
item ``{category lower-cased}-{example_id}``); ``question_id`` a MAC-Fairness question
id (the item's ``source_id``). Without ``item_bank`` every QA bank in the store is
searched. A record that carries its ``context`` answers the item whose context it is
(whitespace aside): that decides between BBQ's explicit item and the ImplicitBBQ item of
the same ``example_id``, and a context that matches none of them is quarantined. An item
still found in several banks is quarantined as ambiguous.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

import orjson
from sqlalchemy import func, select, update
from sqlalchemy.engine import Connection

from cuegap.ingest._concurrent import in_key_order
from cuegap.ingest._loader import (
    _hash16,
    _insert_ignore,
    _resolve_quarantine,
    _ResponseLoader,
    _upsert_quarantine,
)
from cuegap.ingest._pass import _QA_SECONDARY
from cuegap.ingest._records import REST_OF_FILE, Rejected
from cuegap.ingest._sql import stored_by_key
from cuegap.ingest._validate import text_problem
from cuegap.ingest.bbq_results import QARecord
from cuegap.ingest.qa_agreement import runner_note
from cuegap.ingest.qa_parsing import Choice, QAParsed, parse_qa_answer
from cuegap.schema import (
    IngestBatch,
    ItemBank,
    QAItem,
    QAOption,
    QAResponse,
    QAResponseFactor,
    QATally,
    qa_tally_rows,
)

_LIMITS = {
    "system": 200,
    "item_bank": 200,
    "sample_id": 200,
}
_FACTOR_NAME, _FACTOR_VALUE = 50, 200
_PREDICTED = 100


@dataclass(slots=True)
class _QAItemInfo:
    id: int
    bank: str
    key: str
    gold: int
    choices: tuple[Choice, ...]
    context: str = ""
    cue: str = ""


def _same_text(a: str) -> str:
    return " ".join(a.split())


class _QABank:
    """Every item of the store's QA banks, indexed by item key and source id."""

    def __init__(self, conn: Connection) -> None:
        options: dict[int, list[Choice]] = {}
        for r in conn.execute(
            select(
                QAOption.item_id,
                QAOption.option_index,
                QAOption.label,
                QAOption.text,
                QAOption.role,
            ).order_by(QAOption.item_id, QAOption.option_index)
        ):
            options.setdefault(r.item_id, []).append(
                Choice(r.option_index, r.label, r.text, r.role)
            )
        self.by_key: dict[str, list[_QAItemInfo]] = {}
        self.by_source: dict[str, list[_QAItemInfo]] = {}
        self.banks: set[str] = set()
        for r in conn.execute(
            select(
                QAItem.id,
                QAItem.item_key,
                QAItem.source_id,
                QAItem.gold_index,
                QAItem.context,
                QAItem.cue,
                ItemBank.name,
            ).join(ItemBank, ItemBank.id == QAItem.bank_id)
        ):
            info = _QAItemInfo(
                r.id,
                r.name,
                r.item_key,
                r.gold_index,
                tuple(options.get(r.id, ())),
                _same_text(r.context),
                r.cue,
            )
            self.banks.add(r.name)
            self.by_key.setdefault(r.item_key, []).append(info)
            if r.source_id:
                self.by_source.setdefault(r.source_id, []).append(info)

    def find(self, rec: QARecord) -> _QAItemInfo | tuple[str, str]:
        """The item a record answers, or (field, reason) when it cannot be joined."""
        if rec.item_bank is not None and rec.item_bank not in self.banks:
            known = ", ".join(sorted(self.banks)) or "none"
            return "item_bank", (
                f"unknown QA item bank {rec.item_bank!r}; the store has: {known} "
                "(ingest the item bank first)"
            )
        if rec.item_id is not None:
            fld, ref, found = "item_id", rec.item_id, self.by_key.get(rec.item_id, [])
        elif rec.example_id is not None:
            key = f"{(rec.category or '').strip().lower()}-{rec.example_id}"
            fld, ref, found = "example_id", key, self.by_key.get(key, [])
        else:
            fld, ref = "question_id", rec.question_id or ""
            found = self.by_source.get(ref, [])
        if rec.item_bank is not None:
            found = [f for f in found if f.bank == rec.item_bank]
        if found and rec.context is not None:
            same = [f for f in found if f.context == _same_text(rec.context)]
            if not same:
                cues = ", ".join(sorted({f.cue for f in found}))
                banks = ", ".join(sorted({f.bank for f in found}))
                return "context", (
                    f"field 'context': not the context of the stored item(s) for {fld} {ref!r} "
                    f"(cue {cues}; banks {banks}): ingest the item bank it was asked from"
                )
            found = same
        if not found:
            where = (
                f"QA item bank {rec.item_bank!r}" if rec.item_bank else "the store's QA item banks"
            )
            what = (
                f"BBQ example {rec.example_id!r} of category {rec.category!r}"
                if fld == "example_id"
                else f"{fld} {ref!r}"
            )
            return fld, f"no item for {what} in {where} (ingest its item bank first)"
        if len(found) > 1:
            banks = ", ".join(sorted(f.bank for f in found))
            return (
                "item_bank",
                f"{fld} {ref!r} is in several QA item banks ({banks}): name 'item_bank'",
            )
        return found[0]


def _answer(rec: QARecord, item: _QAItemInfo) -> QAParsed | tuple[str, str]:
    """The chosen option: the runner's prediction when given (its reason then says whether
    cuegap's reading of the text agrees, :func:`runner_note`), else the parsed text."""
    choices = item.choices
    if rec.predicted_index is not None:
        if not any(c.index == rec.predicted_index for c in choices):
            return "predicted_index", (
                f"predicted_index {rec.predicted_index} is not an option of item {item.key!r} "
                f"(0 to {len(choices) - 1})"
            )
        note = runner_note(rec.response, choices, rec.predicted_index)
        return QAParsed(rec.predicted_index, "ok", note)
    if rec.predicted_label is not None:
        want = rec.predicted_label.strip().upper()
        hit = next((c for c in choices if c.label.upper() == want), None)
        if hit is None:
            labels = ", ".join(c.label for c in choices)
            return "predicted_label", (
                f"predicted_label {rec.predicted_label!r} is not an option of item "
                f"{item.key!r} ({labels})"
            )
        return QAParsed(hit.index, "ok", runner_note(rec.response, choices, hit.index))
    return parse_qa_answer(rec.response, choices)


def _gold_problem(rec: QARecord, item: _QAItemInfo) -> str | None:
    if rec.gold is None:
        return None
    gold = next(c for c in item.choices if c.index == item.gold)
    if isinstance(rec.gold, int):
        ok = rec.gold == item.gold
    else:
        text = rec.gold.strip()
        ok = text.upper() == gold.label.upper() or (text.isdigit() and int(text) == item.gold)
    if ok:
        return None
    return (
        f"label {rec.gold!r} disagrees with the item bank's gold answer for item {item.key!r} "
        f"(option {gold.label}, index {item.gold}): the results and the bank do not match"
    )


def _check(rec: QARecord) -> tuple[str, str] | None:
    """Whether a record's values fit the store on every backend (see _validate)."""
    for name in ("system", "response", *_LIMITS):
        value = getattr(rec, name)
        if value is None and name != "response" and name != "system":
            continue
        if not isinstance(value, str):
            return name, f"field {name!r} must be a string, not {type(value).__name__}"
    gold = rec.gold
    if gold is not None and (isinstance(gold, bool) or not isinstance(gold, int | str)):
        return "label", f"field 'label' must be an option index or letter, not {gold!r:.40}"
    index = rec.predicted_index
    if index is not None and (isinstance(index, bool) or not isinstance(index, int)):
        return "predicted_index", "field 'predicted_index' must be an integer"
    if rec.predicted_label is not None and not isinstance(rec.predicted_label, str):
        return "predicted_label", "field 'predicted_label' must be a string"
    if isinstance(rec.repeat, bool) or not isinstance(rec.repeat, int) or rec.repeat < 0:
        return "repeat", "field 'repeat' must be a non-negative integer"
    for name, value in rec.factors.items():
        if not isinstance(name, str) or not isinstance(value, str) or not value.strip():
            return "factors", f"factor {str(name)[:60]!r} must be a non-empty string"
    for name, limit in _LIMITS.items():
        value = getattr(rec, name)
        if value is None:
            continue
        why = text_problem(value)
        if why is not None:
            return name, f"field {name!r} {why}"
        if len(value) > limit:
            return name, f"field {name!r}: {len(value):,} characters, longer than {limit}"
    why = text_problem(rec.response)
    if why is not None:
        return "model_output", f"field 'model_output' {why}"
    for name, value in rec.factors.items():
        if len(name) > _FACTOR_NAME or len(value) > _FACTOR_VALUE:
            return "factors", f"factor {name[:60]!r}: name or value too long"
        if text_problem(name) or text_problem(value):
            return "factors", f"factor {name[:60]!r} holds characters the store cannot hold"
    if rec.repeat > 2**31 - 1:
        return "repeat", "field 'repeat' is too large"
    return None


@dataclass(slots=True)
class QAJudged:
    """A QA answer that fits the store: its natural key, content hash, item, parsed answer,
    the runner's prediction and the role of the chosen option (or ``unparsable``)."""

    key: str
    content: str
    item: _QAItemInfo
    parsed: QAParsed
    predicted: int | str | None
    role: str


def judge(rec: QARecord, bank: _QABank) -> QAJudged | tuple[str, str]:
    """Check a record, join it to its item and parse its answer, or say why it cannot be
    stored (``(field, reason)``): the part of the loader that reads no stored answer, run
    as it is by ``cuegap ingest`` and by ``cuegap count``'s partition parser."""
    problem = _check(rec)
    item = bank.find(rec) if problem is None else None
    if problem is None and isinstance(item, tuple):
        problem = item
    if problem is None:
        gold = _gold_problem(rec, item)  # type: ignore[arg-type]
        problem = None if gold is None else ("label", gold)
    parsed = _answer(rec, item) if problem is None else None  # type: ignore[arg-type]
    if problem is None and isinstance(parsed, tuple):
        problem = parsed
    if problem is not None:
        return problem
    assert isinstance(item, _QAItemInfo) and isinstance(parsed, QAParsed)
    fkey = orjson.dumps(rec.factors, option=orjson.OPT_SORT_KEYS).decode()
    natural = f"{rec.system}\x1f{item.id}\x1f{fkey}\x1f{rec.repeat}"
    key = hashlib.blake2b(natural.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()
    predicted = rec.predicted_label if rec.predicted_index is None else rec.predicted_index
    content = _hash16(f"{rec.response}\x1f{'' if predicted is None else predicted}")
    role = (
        "unparsable"
        if parsed.index is None
        else next(c.role for c in item.choices if c.index == parsed.index)
    )
    return QAJudged(key, content, item, parsed, predicted, role)


class QAResponseLoader(_ResponseLoader):
    """Streams one file of QA answers into the store (see the module docstring)."""

    qa_bank: _QABank | None = None
    DIGESTS_RESPONSES = False  # its rows are in qa_response: the ledger reads them back
    # A large load builds qa_response's secondary indexes once at the end: kept up to date,
    # inserts in key order touch pages all over them, so each batch cost more as the store
    # grew (bench_pv: 8.5k answers/s at a tenth of seed 003's scale, 2.1k/s at full scale).
    DEFERRED_TABLE = "qa_response"
    DEFERRED = _QA_SECONDARY

    def _flush(self, buf: list[Any]) -> None:
        if not buf:
            return
        s = self.summary
        s.read += len(buf)
        quarantine: list[dict[str, Any]] = []
        rows: dict[str, dict[str, Any]] = {}
        factors: dict[str, dict[str, str]] = {}
        recs: dict[str, QARecord] = {}
        accounted: list[int] = []
        batch_id = self.batch_id
        with self.engine.begin() as conn:
            if self.qa_bank is None:
                self.qa_bank = _QABank(conn)
            for rec in buf:
                if isinstance(rec, Rejected):
                    if rec.field == REST_OF_FILE:
                        s.incomplete = rec.reason
                    self._quarantine(quarantine, rec.line, rec.raw, rec.reason, rec.field)
                    continue
                judged = judge(rec, self.qa_bank)
                if isinstance(judged, tuple):
                    self._quarantine(quarantine, rec.line, rec.raw, judged[1], judged[0])
                    continue
                key, content, item, parsed = judged.key, judged.content, judged.item, judged.parsed
                predicted, role = judged.predicted, judged.role
                row = {
                    "response_key": key,
                    "content_hash": content,
                    "run_id": self.run_id,
                    "batch_id": batch_id,
                    "system_id": self._system(conn, rec.system),
                    "item_id": item.id,
                    "repeat": rec.repeat,
                    "raw_text": rec.response,
                    "predicted": None if predicted is None else str(predicted)[:_PREDICTED],
                    "parsed_index": parsed.index,
                    "answer": role,
                    "parse_status": parsed.status,
                    "parse_reason": parsed.reason,
                    "sample_id": rec.sample_id,
                    "source_line": rec.line,
                }
                prev = rows.get(key)
                if prev is None:
                    rows[key], factors[key], recs[key] = row, rec.factors, rec
                elif prev["content_hash"] == content:
                    s.duplicate += 1
                    accounted.append(rec.line)
                else:
                    self._quarantine(
                        quarantine,
                        rec.line,
                        rec.raw,
                        _conflict(f"line {prev['source_line']} of the same file"),
                        "model_output",
                    )
            stored = _insert(conn, rows, batch_id)
            new_factors: list[dict[str, Any]] = []
            new_keys: list[str] = []
            for key, row in rows.items():
                old = stored[key]
                if old["batch_id"] == batch_id and old["source_line"] == row["source_line"]:
                    s.stored += 1
                    new_keys.append(key)
                    accounted.append(row["source_line"])
                    new_factors += [
                        {"response_id": old["id"], "name": n, "value": v}
                        for n, v in sorted(factors[key].items())
                    ]
                elif old["content_hash"] == row["content_hash"]:
                    s.duplicate += 1
                    accounted.append(row["source_line"])
                else:
                    where = (
                        f"line {old['source_line']} of the same file"
                        if old["batch_id"] == batch_id
                        else f"the stored response from {old['source_path']} line "
                        f"{old['source_line']}"
                    )
                    self._quarantine(
                        quarantine,
                        row["source_line"],
                        recs[key].raw,
                        _conflict(where),
                        "model_output",
                    )
            if new_factors:
                conn.execute(QAResponseFactor.__table__.insert(), new_factors)
            if new_keys:  # counted in the same transaction: the tally never lags the answers
                conn.execute(
                    QATally.__table__.insert(),
                    qa_tally_rows(
                        batch_id, [rows[k] for k in new_keys], [factors[k] for k in new_keys]
                    ),
                )
            if quarantine:
                conn.execute(
                    _upsert_quarantine(conn), in_key_order(quarantine, "source_sha256", "line_no")
                )
            if self.open_quarantine and accounted:
                _resolve_quarantine(conn, self.sha, accounted, batch_id)
            conn.execute(
                update(IngestBatch)
                .where(IngestBatch.id == batch_id)
                .values(
                    lines_read=s.read,
                    stored=s.stored,
                    duplicate=s.duplicate,
                    quarantined=s.quarantined,
                )
            )


def _conflict(where: str) -> str:
    return (
        f"conflicts with {where}: same system, item, prompt factors and repeat but a "
        "different answer (give one a different 'repeat')"
    )


def _insert(
    conn: Connection, rows: dict[str, dict[str, Any]], batch_id: int
) -> dict[str, dict[str, Any]]:
    """Insert new answers; the stored row (id, batch, line, content hash) of every key.

    On SQLite, when every row was inserted and the ids are one range after the previous
    largest, row i of the insert has that id + 1 + i: no look-up. Otherwise (a re-ingest,
    an overlap, PostgreSQL) the keys are looked up, which touches the unique index at random.
    """
    if not rows:
        return {}
    ordered = in_key_order(rows.values(), "response_key")
    sqlite = conn.dialect.name == "sqlite"
    top = select(func.coalesce(func.max(QAResponse.__table__.c.id), 0))
    after = conn.execute(top).scalar_one() if sqlite else 0
    res = conn.execute(_insert_ignore(conn, QAResponse.__table__, ["response_key"]), ordered)
    if (
        sqlite
        and res.rowcount == len(ordered)
        and conn.execute(top).scalar_one() == after + len(ordered)
    ):
        return {
            row["response_key"]: {
                "id": after + 1 + i,
                "batch_id": batch_id,
                "source_line": row["source_line"],
                "content_hash": row["content_hash"],
            }
            for i, row in enumerate(ordered)
        }
    return _stored(conn, list(rows))


def _stored(conn: Connection, keys: list[str]) -> dict[str, dict[str, Any]]:
    """The stored rows (id, content hash, batch, line, source path) of response keys."""
    cols = ("id", "content_hash", "batch_id", "source_line")
    return stored_by_key(conn, QAResponse.__table__, "response_key", cols, keys)
