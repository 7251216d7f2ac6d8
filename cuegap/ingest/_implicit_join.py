"""Joining ImplicitBBQ-style lines to their BBQ originals in the store.

An ImplicitBBQ line (:mod:`cuegap.ingest.implicit_bbq`) has its own context, question and
answers; everything else comes from the stored BBQ item with the same category and
``example_id`` (item key ``{category lower-cased}-{example_id}``, cue ``explicit``): the
dimension, stereotyped groups, context condition, polarity, template, and each option's
role and group, by position. A line joins only when its answers are as many as BBQ's
options and its label is BBQ's gold option; otherwise it is quarantined with the reason.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.engine import Connection

from cuegap.schema import ItemBank, QAItem, QAOption, QAOptionAxis

_CHUNK = 500


def _explicit_items(conn: Connection, keys: list[str]) -> dict[str, dict[str, Any]]:
    """The stored explicit items of these keys (the first stored when several banks hold
    one), with their options' labels, roles and axes."""
    found: dict[str, dict[str, Any]] = {}
    for start in range(0, len(keys), _CHUNK):
        chunk = keys[start : start + _CHUNK]
        i = QAItem.__table__
        rows = conn.execute(
            select(i, ItemBank.name.label("bank"))
            .join(ItemBank, ItemBank.id == i.c.bank_id)
            .where(i.c.item_key.in_(chunk), i.c.cue == "explicit")
            .order_by(i.c.id)
        ).all()
        for item in rows:
            found.setdefault(item.item_key, {"item": item, "bank": item.bank, "options": []})
    ids = {v["item"].id: v for v in found.values()}
    id_list = list(ids)
    for start in range(0, len(id_list), _CHUNK):
        chunk = id_list[start : start + _CHUNK]
        o_t = QAOption.__table__
        opts = conn.execute(
            select(o_t).where(o_t.c.item_id.in_(chunk)).order_by(o_t.c.option_index)
        ).all()
        by_id: dict[int, dict[str, Any]] = {}
        for o in opts:
            entry = {"index": o.option_index, "label": o.label, "role": o.role, "axes": {}}
            ids[o.item_id]["options"].append(entry)
            by_id[o.id] = entry
        a_t = QAOptionAxis.__table__
        for axis in conn.execute(select(a_t).where(a_t.c.option_id.in_(list(by_id)))).all():
            by_id[axis.option_id]["axes"][axis.axis] = axis.value
    return found


def join_bbq(
    conn: Connection, bank: dict[str, Any]
) -> tuple[list[dict[str, Any]], list[tuple[int, str, str, str]]]:
    """Build the implicit items of an ImplicitBBQ bank from the stored BBQ items.

    Parameters
    ----------
    conn : Connection
    bank : dict
        As :func:`cuegap.ingest.implicit_bbq.read` returns it.

    Returns
    -------
    (list of dict, list of (int, str, str, str))
        The items (the dicts :func:`cuegap.ingest._qa_bank.ingest_qa_bank` stores) and the
        quarantined lines: (line, raw JSON, field, reason), the reader's own included.
    """
    lines = bank["lines"]
    keys = sorted({f"{ln['category'].lower()}-{ln['example_id']}" for ln in lines})
    explicit = _explicit_items(conn, keys)
    items: list[dict[str, Any]] = []
    bad: list[tuple[int, str, str, str]] = list(bank["rejected"])
    seen: dict[str, int] = {}
    for ln in lines:
        key = f"{ln['category'].lower()}-{ln['example_id']}"
        raw = ln.get("raw", "")
        what = f"BBQ example {ln['example_id']} of category {ln['category']!r}"
        if key in seen:
            bad.append((ln["line"], raw, "example_id", f"{what} repeats line {seen[key]}"))
            continue
        found = explicit.get(key)
        if found is None:
            bad.append((ln["line"], raw, "example_id", (
                f"no BBQ item for {what} in the store: ingest BBQ's data/ first (its "
                "answer_info and stereotyped_groups give this item's roles)"
            )))  # fmt: skip
            continue
        item, options = found["item"], found["options"]
        if len(ln["answers"]) != len(options):
            bad.append((ln["line"], raw, "answers", (
                f"{len(ln['answers'])} answers, but {what} has {len(options)} options"
            )))  # fmt: skip
            continue
        if ln["label"] != item.gold_index:
            bad.append((ln["line"], raw, "label", (
                f"label {ln['label']} disagrees with BBQ's label {item.gold_index} for {what} "
                "(options are joined by position)"
            )))  # fmt: skip
            continue
        seen[key] = ln["line"]
        meta = dict(item._mapping["metadata"] or {})
        meta["joined_to"] = f"{found['bank']}:{key}"
        items.append(
            {
                "item_key": key,
                "dimension": item.dimension,
                "subgroup": item.subgroup,
                "context_condition": item.context_condition,
                "polarity": item.polarity,
                "cue": "implicit",
                "cue_texts": None,
                "template_id": item.template_id,
                "source_id": ln["example_id"],
                "context": ln["context"],
                "question": ln["question"],
                "gold_index": ln["label"],
                "meta": meta,
                "options": [
                    {**o, "text": ln["answers"][o["index"]], "axes": dict(o["axes"])}
                    for o in options
                ],
            }
        )
    bad.sort()
    return items, bad
