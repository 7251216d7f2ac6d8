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
from dataclasses import dataclass, field
from typing import Any

import orjson
from sqlalchemy import select, update
from sqlalchemy.engine import Connection

from cuegap.ingest._batch_tx import batch_transaction, check_parents
from cuegap.ingest._concurrent import in_key_order
from cuegap.ingest._loader import (
    _hash16,
    _resolve_quarantine,
    _ResponseLoader,
    _upsert_quarantine,
)
from cuegap.ingest._pass import _QA_SECONDARY
from cuegap.ingest._qa_rows import (
    ANSWER,
    CONTENT,
    ITEM,
    LINE,
    SYSTEM,
    write_answers,
    write_factors,
    write_tally,
)
from cuegap.ingest._records import REST_OF_FILE, Rejected
from cuegap.ingest._validate import text_problem
from cuegap.ingest.bbq_results import QARecord
from cuegap.ingest.qa_agreement import runner_note
from cuegap.ingest.qa_parsing import Choice, QAParsed, parse_qa_answer
from cuegap.schema import (
    IngestBatch,
    ItemBank,
    QAItem,
    QAOption,
    qa_tally_rows,
)

_LIMITS = {
    "system": 200,
    "item_bank": 200,
    "sample_id": 200,
}
_FACTOR_NAME, _FACTOR_VALUE = 50, 200
_PREDICTED = 100
# Readings are remembered for texts up to this length, in a memo emptied at this size.
_MEMO_TEXT, _MEMO_SIZE = 2_048, 65_536


@dataclass(slots=True)
class _QAItemInfo:
    id: int
    bank: str
    key: str
    gold: int
    choices: tuple[Choice, ...]
    context: str = ""
    cue: str = ""
    roles: dict[int, str] = field(default_factory=dict)  # option index -> role

    def __post_init__(self) -> None:
        self.roles = {c.index: c.role for c in self.choices}


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


def _answer(
    rec: QARecord, item: _QAItemInfo, memo: dict[tuple[str, int], QAParsed]
) -> QAParsed | tuple[str, str]:
    """The chosen option: the runner's prediction when given (its reason then says whether
    cuegap's reading of the text agrees, :func:`runner_note`), else the parsed text.

    ``memo`` keeps the readings of short texts per (text, item): the same reading as
    :func:`parse_qa_answer`'s own memo, without hashing the item's options each time."""
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
    key = (rec.response, item.id)
    parsed = memo.get(key)
    if parsed is None:
        parsed = parse_qa_answer(rec.response, choices)
        if len(key[0]) <= _MEMO_TEXT:
            if len(memo) >= _MEMO_SIZE:
                memo.clear()
            memo[key] = parsed
    return parsed


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


def _plain(text: str) -> bool:
    return text.isascii() and "\x00" not in text  # then text_problem(text) is None


def _fits(rec: QARecord) -> bool:
    """A quick sufficient condition for :func:`_check` to find nothing: plain ASCII strings
    within their limits, integers where integers go. The common record passes it at a few
    comparisons; any other is checked in full, so the reasons given do not change."""
    system, response, bank, sample = rec.system, rec.response, rec.item_bank, rec.sample_id
    index, label, gold, repeat = rec.predicted_index, rec.predicted_label, rec.gold, rec.repeat
    if not (
        type(system) is str
        and type(response) is str
        and (bank is None or (type(bank) is str and len(bank) <= _LIMITS["item_bank"]))
        and (sample is None or (type(sample) is str and len(sample) <= _LIMITS["sample_id"]))
        and len(system) <= _LIMITS["system"]
        and (index is None or type(index) is int)
        and (label is None or type(label) is str)
        and (gold is None or type(gold) is int or type(gold) is str)
        and type(repeat) is int
        and 0 <= repeat <= 2**31 - 1
        and _plain(system)
        and _plain(response)
        and (bank is None or _plain(bank))
        and (sample is None or _plain(sample))
    ):
        return False
    for name, value in rec.factors.items():
        if not (
            type(name) is str
            and type(value) is str
            and len(name) <= _FACTOR_NAME
            and len(value) <= _FACTOR_VALUE
            and value.strip()
            and _plain(name)
            and _plain(value)
        ):
            return False
    return True


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


def judge(
    rec: QARecord, bank: _QABank, memo: dict[tuple[str, int], QAParsed] | None = None
) -> QAJudged | tuple[str, str]:
    """Check a record, join it to its item and parse its answer, or say why it cannot be
    stored (``(field, reason)``): the part of the loader that reads no stored answer, run
    as it is by ``cuegap ingest`` and by ``cuegap count``'s partition parser.

    ``memo`` keeps the readings of texts per (text, item) across calls (:func:`_answer`);
    a fresh one is used when it is not given."""
    problem = None if _fits(rec) else _check(rec)
    item = bank.find(rec) if problem is None else None
    if problem is None and isinstance(item, tuple):
        problem = item
    if problem is None:
        gold = _gold_problem(rec, item)  # type: ignore[arg-type]
        problem = None if gold is None else ("label", gold)
    parsed = _answer(rec, item, {} if memo is None else memo) if problem is None else None  # type: ignore[arg-type]
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
    role = "unparsable" if parsed.index is None else item.roles[parsed.index]
    return QAJudged(key, content, item, parsed, predicted, role)


class QAResponseLoader(_ResponseLoader):
    """Streams one file of QA answers into the store (see the module docstring)."""

    qa_bank: _QABank | None = None
    readings: dict[tuple[str, int], QAParsed] | None = None  # see _answer
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
        rows: dict[str, tuple[Any, ...]] = {}  # key -> row tuple in QA_COLS order
        factors: dict[str, dict[str, str]] = {}
        recs: dict[str, QARecord] = {}
        accounted: list[int] = []
        run_id, batch_id, systems = self.run_id, self.batch_id, self.systems
        null, null_int = self.codec.null, self.codec.null_bool  # NULL markers (see _Codec)
        with batch_transaction(self.engine) as (conn, unchecked):
            if self.qa_bank is None or self.readings is None:
                self.qa_bank, self.readings = _QABank(conn), {}
            memo = self.readings
            for rec in buf:
                if isinstance(rec, Rejected):
                    if rec.field == REST_OF_FILE:
                        s.incomplete = rec.reason
                    self._quarantine(quarantine, rec.line, rec.raw, rec.reason, rec.field)
                    continue
                judged = judge(rec, self.qa_bank, memo)
                if isinstance(judged, tuple):
                    self._quarantine(quarantine, rec.line, rec.raw, judged[1], judged[0])
                    continue
                key, content, item, parsed = judged.key, judged.content, judged.item, judged.parsed
                predicted, role, index = judged.predicted, judged.role, judged.parsed.index
                system_id = systems.get(rec.system)
                if system_id is None:
                    system_id = self._system(conn, rec.system)
                reason, sample_id = parsed.reason, rec.sample_id
                row = (
                    key,
                    content,
                    run_id,
                    batch_id,
                    system_id,
                    item.id,
                    rec.repeat,
                    rec.response,
                    null if predicted is None else str(predicted)[:_PREDICTED],
                    null_int if index is None else index,
                    role,
                    parsed.status,
                    null if reason is None else reason,
                    null if sample_id is None else sample_id,
                    rec.line,
                )
                prev = rows.get(key)
                if prev is None:
                    rows[key], factors[key], recs[key] = row, rec.factors, rec
                elif prev[CONTENT] == content:
                    s.duplicate += 1
                    accounted.append(rec.line)
                else:
                    where = f"line {prev[LINE]} of the same file"
                    self._quarantine(
                        quarantine, rec.line, rec.raw, _conflict(where), "model_output"
                    )
            stored = write_answers(conn, rows)
            new_factors: list[tuple[int, str, str]] = []
            new_keys: list[str] = []
            for key, row in rows.items():
                rid, old_content, old_batch, old_line, old_path = stored[key]
                if old_batch == batch_id and old_line == row[LINE]:
                    s.stored += 1
                    new_keys.append(key)
                    accounted.append(row[LINE])
                    new_factors += [(rid, n, v) for n, v in sorted(factors[key].items())]
                elif old_content == row[CONTENT]:
                    s.duplicate += 1
                    accounted.append(row[LINE])
                else:
                    where = (
                        f"line {old_line} of the same file"
                        if old_batch == batch_id
                        else f"the stored response from {old_path} line {old_line}"
                    )
                    self._quarantine(
                        quarantine, row[LINE], recs[key].raw, _conflict(where), "model_output"
                    )
            write_factors(conn, new_factors)
            if new_keys:  # counted in the same transaction: the tally never lags the answers
                counted = [
                    {"system_id": r[SYSTEM], "item_id": r[ITEM], "answer": r[ANSWER]}
                    for r in map(rows.__getitem__, new_keys)
                ]
                write_tally(conn, qa_tally_rows(batch_id, counted, map(factors.get, new_keys)))
            if quarantine:
                conn.execute(
                    _upsert_quarantine(conn), in_key_order(quarantine, "source_sha256", "line_no")
                )
            if unchecked:  # every parent the batch's rows (factor and tally rows) refer to
                check_parents(
                    conn,
                    {
                        "run": (run_id,),
                        "ingest_batch": (batch_id,),
                        "system": {row[SYSTEM] for row in rows.values()},
                        "qa_item": {row[ITEM] for row in rows.values()},
                        "qa_response": {f[0] for f in new_factors},
                    },
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
