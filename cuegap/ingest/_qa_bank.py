"""Writing a QA item bank (the dict the ``bbq`` and ``cuegap-qa-itembank`` readers return).

Like a dilemma bank: one transaction, idempotent by name and content hash, sealed in the
ledger; a bank already stored under the same name with other content is refused.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import orjson
from sqlalchemy import insert, select
from sqlalchemy.engine import Engine

from cuegap.ingest._bank_quarantine import BadLine, count_bad_lines, quarantine_bank_lines
from cuegap.ingest._bbq_targets import targets_note
from cuegap.ingest._implicit_join import join_bbq
from cuegap.ingest._loader import IngestSummary
from cuegap.ingest._records import IngestError
from cuegap.ingest._sql import insert_bank
from cuegap.ingest._validate import text_problem
from cuegap.schema import QAItem, QAOption, QAOptionAxis, ledger

# What a line reader returns besides the bank itself (left out of its content hash).
_READ_ONLY = ("join", "lines", "rejected", "item_lines", "target_loc")

_ITEM_COLS = (
    "item_key", "dimension", "subgroup", "context_condition", "polarity", "cue",
    "cue_texts", "template_id", "source_id", "context", "question", "gold_index",
)  # fmt: skip


def item_problem(item: dict[str, Any]) -> tuple[str, str] | None:
    """What is wrong with an item, as (field, reason); None when it is sane.

    Roles must make sense: at most one ``unknown`` option, the gold option ``unknown``
    exactly for ambiguous items and Difference-Awareness ``equal`` items, and every text
    storable.
    """
    roles = [o["role"] for o in item["options"]]
    if roles.count("unknown") > 1:
        return "options", f"{roles.count('unknown')} options have role 'unknown'"
    gold = roles[item["gold_index"]]
    context = item["context_condition"]
    if context == "equal" and gold != "unknown":
        return "label", "an 'equal' item's gold option must be the unknown one"
    if context == "different" and gold == "unknown":
        return "label", "a 'different' item's gold option cannot be unknown"
    if context == "ambiguous" and gold != "unknown":
        return "label", "an ambiguous item's gold option must be the unknown one"
    if context == "disambiguated" and gold == "unknown":
        return "label", "a disambiguated item's gold option cannot be unknown"
    texts = [item["context"], item["question"], *(o["text"] for o in item["options"])]
    for text in texts:
        why = text_problem(text)
        if why is not None:
            return "", f"a text {why}"
    return None


def check_items(items: list[dict[str, Any]], source: str) -> None:
    """Refuse a bank with an item that is not sane (:func:`item_problem`).

    Raises
    ------
    IngestError
        Naming the item and what is wrong.
    """
    for item in items:
        problem = item_problem(item)
        if problem is not None:
            raise IngestError(f"{source}: item {item['item_key']!r}: {problem[1]}")


def _sane_items(
    items: list[dict[str, Any]], lines: list[tuple[int, str]], bad: list[BadLine]
) -> list[dict[str, Any]]:
    """The sane items of a bank read line by line; the others join ``bad`` with their line."""
    kept = []
    for item, (line, raw) in zip(items, lines, strict=True):
        problem = item_problem(item)
        if problem is None:
            kept.append(item)
        else:
            bad.append((line, raw, problem[0], f"item {item['item_key']!r}: {problem[1]}"))
    return kept


def ingest_qa_bank(engine: Engine, path: Path, reader: str, bank: dict[str, Any]) -> IngestSummary:
    """Store a QA item bank read by a QA bank reader.

    Parameters
    ----------
    engine : Engine
    path : Path
        The file it was read from (recorded).
    reader : str
        The reader's name, for the summary.
    bank : dict
        ``name``, ``description``, ``source`` and ``items`` (each with its ``options``); a
        bank read line by line also gives ``rejected`` (its bad lines) and ``item_lines``
        (each item's line), and its items that are not sane are quarantined too.

    Returns
    -------
    IngestSummary
        ``read`` counts items and quarantined lines, ``read = stored (or duplicate) +
        quarantined``; the quarantined lines are in the store
        (:mod:`cuegap.ingest._bank_quarantine`).

    Raises
    ------
    IngestError
        When a bank of that name with other content is stored, or an item of a bank read
        whole is not sane.
    """
    bad: list[BadLine] = list(bank.get("rejected") or ())
    if bank.get("join") == "bbq":  # ImplicitBBQ lines: BBQ's metadata joined from the store
        with engine.connect() as conn:
            items, bad = join_bbq(conn, bank)
    elif "item_lines" in bank:  # read line by line: an item that is not sane is quarantined
        items = _sane_items(bank["items"], bank["item_lines"], bad)
    else:
        items = bank["items"]
        check_items(items, str(path))
    bad.sort()
    targets = bank.get("target_loc")
    # The content hash covers what is stored, not how the lines were read.
    kept = {k: v for k, v in bank.items() if k not in _READ_ONLY}
    bank = kept | {"items": items}
    sha = hashlib.sha256(orjson.dumps(bank, option=orjson.OPT_SORT_KEYS)).hexdigest()
    n = len(items)
    summary = IngestSummary(str(path), reader, "item_bank", read=n)
    count_bad_lines(summary, bad)
    if not items:  # every line quarantined: kept with their reasons, no empty bank
        with engine.begin() as conn:
            quarantine_bank_lines(conn, path, reader, summary, bad)
        summary.note = f"nothing stored, all {len(bad):,} lines were quarantined"
        return summary
    with engine.begin() as conn:
        bank_id = insert_bank(conn, path, bank, sha, summary, {})
        if bank_id is None:
            summary.duplicate = n
            quarantine_bank_lines(conn, path, reader, summary, bad)
            return summary
        conn.execute(
            insert(QAItem.__table__),
            [
                {"bank_id": bank_id, **{c: it[c] for c in _ITEM_COLS}, "metadata": it["meta"]}
                for it in items
            ],
        )
        item_ids = dict(
            conn.execute(select(QAItem.item_key, QAItem.id).where(QAItem.bank_id == bank_id)).all()
        )
        options = [
            {
                "item_id": item_ids[it["item_key"]],
                "option_index": o["index"],
                "label": o["label"],
                "text": o["text"],
                "role": o["role"],
            }
            for it in items
            for o in it["options"]
        ]
        conn.execute(insert(QAOption), options)
        option_ids = {
            (r.item_id, r.option_index): r.id
            for r in conn.execute(
                select(QAOption.item_id, QAOption.option_index, QAOption.id).where(
                    QAOption.item_id.in_(select(QAItem.id).where(QAItem.bank_id == bank_id))
                )
            )
        }
        axes = [
            {"option_id": option_ids[(item_ids[it["item_key"]], o["index"])], "axis": a, "value": v}
            for it in items
            for o in it["options"]
            for a, v in sorted(o["axes"].items())
        ]
        if axes:
            conn.execute(insert(QAOptionAxis), axes)
        ledger.record(conn, "bank", bank_id)
        summary.stored = n
        quarantine_bank_lines(conn, path, reader, summary, bad)
    unresolved = sum(any(o["role"] == "unresolved" for o in it["options"]) for it in items)
    summary.note = (
        f"QA item bank {bank['name']!r}: {n} items, {len(options)} options"
        + (
            f"; {unresolved} items without a target (counted in accuracy, not in bias scores)"
            if unresolved
            else ""
        )
        + (f"; {len(bad):,} lines quarantined" if bad else "")
        + (f"; {targets_note(targets)}" if targets else "")
    )
    return summary
