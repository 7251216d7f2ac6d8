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

from cuegap.ingest._implicit_join import join_bbq
from cuegap.ingest._loader import IngestSummary
from cuegap.ingest._records import IngestError
from cuegap.ingest._sql import insert_bank
from cuegap.ingest._validate import text_problem
from cuegap.schema import QAItem, QAOption, QAOptionAxis, ledger

_ITEM_COLS = (
    "item_key", "dimension", "subgroup", "context_condition", "polarity", "cue",
    "cue_texts", "template_id", "source_id", "context", "question", "gold_index",
)  # fmt: skip


def check_items(items: list[dict[str, Any]], source: str) -> None:
    """Roles must make sense: at most one ``unknown`` option, the gold option ``unknown``
    exactly for ambiguous items and Difference-Awareness ``equal`` items, and every text
    storable.

    Raises
    ------
    IngestError
        Naming the item and what is wrong.
    """
    for item in items:
        where = f"{source}: item {item['item_key']!r}"
        roles = [o["role"] for o in item["options"]]
        if roles.count("unknown") > 1:
            raise IngestError(f"{where}: {roles.count('unknown')} options have role 'unknown'")
        gold = roles[item["gold_index"]]
        if item["context_condition"] == "equal" and gold != "unknown":
            raise IngestError(f"{where}: an 'equal' item's gold option must be the unknown one")
        if item["context_condition"] == "different" and gold == "unknown":
            raise IngestError(f"{where}: a 'different' item's gold option cannot be unknown")
        if item["context_condition"] == "ambiguous" and gold != "unknown":
            raise IngestError(f"{where}: an ambiguous item's gold option must be the unknown one")
        if item["context_condition"] == "disambiguated" and gold == "unknown":
            raise IngestError(f"{where}: a disambiguated item's gold option cannot be unknown")
        texts = [item["context"], item["question"], *(o["text"] for o in item["options"])]
        for text in texts:
            why = text_problem(text)
            if why is not None:
                raise IngestError(f"{where}: a text {why}")


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
        ``name``, ``description``, ``source`` and ``items`` (each with its ``options``).

    Returns
    -------
    IngestSummary
        ``read`` and ``stored`` (or ``duplicate``) count items.

    Raises
    ------
    IngestError
        When a bank of that name with other content is stored, or an item is not sane.
    """
    bad: list[tuple[int, str, str, str]] = []
    if bank.get("join") == "bbq":  # ImplicitBBQ lines: BBQ's metadata joined from the store
        with engine.connect() as conn:
            items, bad = join_bbq(conn, bank)
        if not items:
            line, _raw, fld, why = bad[0]
            raise IngestError(
                f"{path}: nothing stored, all {len(bad):,} lines were quarantined (first: "
                f"line {line}, field {fld!r}: {why})"
            )
        bank = {k: bank[k] for k in ("design", "name", "description", "source")} | {"items": items}
    items = bank["items"]
    check_items(items, str(path))
    sha = hashlib.sha256(orjson.dumps(bank, option=orjson.OPT_SORT_KEYS)).hexdigest()
    n = len(items)
    summary = IngestSummary(str(path), reader, "item_bank", read=n + len(bad))
    summary.quarantined = len(bad)
    summary.problems = [(line, f"field {fld!r}: {why}") for line, _raw, fld, why in bad]
    with engine.begin() as conn:
        bank_id = insert_bank(conn, path, bank, sha, summary, {})
        if bank_id is None:
            summary.duplicate = n
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
    unresolved = sum(any(o["role"] == "unresolved" for o in it["options"]) for it in items)
    summary.note = (
        f"QA item bank {bank['name']!r}: {n} items, {len(options)} options"
        + (
            f"; {unresolved} items without a target (counted in accuracy, not in bias scores)"
            if unresolved
            else ""
        )
        + (f"; {len(bad):,} lines quarantined" if bad else "")
    )
    return summary
