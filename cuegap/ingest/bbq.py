"""Reader of BBQ item banks: BBQ's own data JSONL, and the MAC-Fairness question schema
that wraps it (``question_id``, ``choices``, ``correct_answer_id``, ``source_metadata``).

Each line is one item of the QA design. BBQ's fields map as:

========================================  ================================================
BBQ                                       cuegap
========================================  ================================================
``category`` (lower-cased)                ``dimension``; the options' axis of that name
``example_id``                            item key ``{dimension}-{example_id}`` (the join key
                                          of result files: example_id + category)
``question_index``                        template id ``{dimension}-q{question_index}``
``context_condition`` ambig / disambig    ``ambiguous`` / ``disambiguated``
``question_polarity`` neg / nonneg        ``negative`` / ``nonneg``
``answer_info`` groups                    roles (:mod:`cuegap.ingest._bbq_roles`) and axes
``additional_metadata.stereotyped_...``   ``subgroup`` (joined with "/")
``target_loc`` (additional_metadata.csv)  roles instead, when BBQ's CSV is beside the data
                                          (:mod:`cuegap.ingest._bbq_targets`)
``label``                                 the gold option
========================================  ================================================

BBQ states every identity, so the cue is ``explicit``. A file is one item bank, named by
the file's stem. A line that is not a valid BBQ item is quarantined with its line, field
and reason, and the file's other items are stored (issue 27).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from cuegap.ingest import _bbq_roles
from cuegap.ingest._bbq_targets import apply_targets, find_metadata
from cuegap.ingest._guard import unstorable_text
from cuegap.ingest._records import IngestError, Rejected
from cuegap.ingest._runner import first_json_lines, json_lines

NAME = "bbq"
CONTEXTS = {"ambig": "ambiguous", "disambig": "disambiguated"}
POLARITIES = {"neg": "negative", "nonneg": "nonneg"}
LABELS = "ABCDEFGHIJ"


def _bbq_record(obj: Any) -> dict[str, Any] | None:
    """The BBQ record of a line (itself, or a MAC question's ``source_metadata``)."""
    if not isinstance(obj, dict):
        return None
    meta = obj.get("source_metadata") if "question_id" in obj else obj
    if isinstance(meta, dict) and {"example_id", "answer_info", "context_condition"} <= set(meta):
        return meta
    return None


def detect(path: Path) -> bool:
    """True for a JSONL file whose first lines are BBQ items (raw or MAC-Fairness)."""
    if not path.is_file() or path.suffix.lower() not in (".jsonl", ".json"):
        return False
    return any(_bbq_record(obj) is not None for obj in first_json_lines(path, 3))


def _need(d: dict[str, Any], key: str, where: str) -> Any:
    if key not in d or d[key] is None:
        raise IngestError(f"{where}: field {key!r} is missing")
    return d[key]


def item_from_line(obj: Any, where: str) -> dict[str, Any]:
    """One QA item (the dict :func:`cuegap.ingest._qa_bank.ingest_qa_bank` writes).

    Raises
    ------
    IngestError
        Naming ``where`` (file and line) and the field that is missing or wrong.
    """
    meta = _bbq_record(obj)
    if meta is None:
        src = obj.get("source_metadata") if isinstance(obj, dict) and "question_id" in obj else obj
        if isinstance(src, dict):  # name the first missing key
            for key in ("example_id", "answer_info", "context_condition"):
                if key not in src:
                    raise IngestError(f"{where}: field {key!r} is missing")
        raise IngestError(f"{where}: not a BBQ item (no example_id, answer_info, ...)")
    category = str(_need(meta, "category", where))
    dimension = category.strip().lower()
    infos = _need(meta, "answer_info", where)
    if not isinstance(infos, dict):
        raise IngestError(f"{where}: field 'answer_info': expected an object")
    n = len(infos)
    try:
        info = [(str(infos[f"ans{i}"][0]), str(infos[f"ans{i}"][1])) for i in range(n)]
    except (KeyError, IndexError, TypeError):
        raise IngestError(f"{where}: field 'answer_info': expected ans0..ans{n - 1}") from None
    mac = "question_id" in obj
    if mac:
        choices = _need(obj, "choices", where)
        if not isinstance(choices, list) or len(choices) != n:
            raise IngestError(f"{where}: field 'choices': expected {n} choices")
        if not all(isinstance(c, dict) for c in choices):
            raise IngestError(f"{where}: field 'choices': expected objects with id and text")
        labels = [str(c.get("id")) for c in choices]
        texts = [str(c.get("text")) for c in choices]
        gold_label = str(_need(obj, "correct_answer_id", where))
        if gold_label not in labels:
            raise IngestError(f"{where}: correct_answer_id {gold_label!r} is not a choice")
        if "label" in meta and labels.index(gold_label) != meta["label"]:
            raise IngestError(
                f"{where}: correct_answer_id {gold_label!r} disagrees with BBQ's label "
                f"{meta['label']!r}"
            )
        gold = labels.index(gold_label)
    else:
        labels = list(LABELS[:n])
        texts = [str(_need(meta, f"ans{i}", where)) for i in range(n)]
        gold = _need(meta, "label", where)
    if not isinstance(gold, int) or not 0 <= gold < n:
        raise IngestError(f"{where}: field 'label': {gold!r} is not an option index")
    context = CONTEXTS.get(str(meta.get("context_condition")))
    polarity = POLARITIES.get(str(meta.get("question_polarity")))
    if context is None:
        raise IngestError(f"{where}: field 'context_condition': expected ambig or disambig")
    if polarity is None:
        raise IngestError(f"{where}: field 'question_polarity': expected neg or nonneg")
    extra = meta.get("additional_metadata") or {}
    if not isinstance(extra, dict) or not isinstance(extra.get("stereotyped_groups") or [], list):
        raise IngestError(f"{where}: field 'additional_metadata': expected an object")
    stereotyped = [str(s) for s in extra.get("stereotyped_groups") or []]
    roles = _bbq_roles.roles(info, stereotyped, category)
    if roles.count("unknown") != 1:
        raise IngestError(f"{where}: field 'answer_info': expected one 'unknown' option")
    example_id = _need(meta, "example_id", where)
    return {
        "item_key": f"{dimension}-{example_id}",
        "dimension": dimension,
        "subgroup": "/".join(stereotyped),
        "context_condition": context,
        "polarity": polarity,
        "cue": "explicit",
        "cue_texts": None,
        "template_id": f"{dimension}-q{meta.get('question_index', '')}",
        "source_id": str(obj["question_id"]) if mac else str(example_id),
        "context": str(_need(obj if mac else meta, "context", where)),
        "question": str(_need(obj if mac else meta, "question", where)),
        "gold_index": gold,
        "meta": {
            "category": category,
            "example_id": example_id,
            "stereotyped_groups": stereotyped,
            "subcategory": extra.get("subcategory"),
        },
        "options": [
            {
                "index": i,
                "label": labels[i],
                "text": texts[i],
                "role": roles[i],
                "axes": {} if roles[i] == "unknown" else {dimension: info[i][1]},
            }
            for i in range(n)
        ],
    }


def _field(message: str) -> str:
    """The field an :func:`item_from_line` error names, or ""."""
    found = re.search(r"field '([^']+)'", message)
    return found.group(1) if found else ""


def read(path: Path) -> dict[str, Any]:
    """Read a BBQ JSONL file as one QA item bank, line by line.

    A line that is not JSON, not a valid BBQ item, not storable or a repeated item is
    quarantined with its line, field and reason (:mod:`cuegap.ingest._bank_quarantine`);
    the other lines are stored.

    Returns
    -------
    dict
        ``design``, ``name``, ``description``, ``source``, ``items``, ``item_lines``
        (each item's line and raw text), ``rejected`` (line, raw, field, reason) and
        ``target_loc`` (what BBQ's ``additional_metadata.csv`` changed, or None without
        one: :mod:`cuegap.ingest._bbq_targets`).

    Raises
    ------
    IngestError
        When the file holds no line at all.
    """
    path = Path(path)
    items: list[dict[str, Any]] = []
    item_lines: list[tuple[int, str]] = []
    rejected: list[tuple[int, str, str, str]] = []
    seen: dict[str, int] = {}
    with path.open("rb") as fh:
        for entry in json_lines(fh):
            if isinstance(entry, Rejected):
                rejected.append((entry.line, entry.raw, entry.field or "", entry.reason))
                continue
            line_no, text, obj = entry
            bad = unstorable_text(obj)
            if bad is not None:  # PostgreSQL stores no NUL in text
                rejected.append((line_no, text, bad[0] or "", bad[1]))
                continue
            where = f"{path}: line {line_no}"
            try:
                item = item_from_line(obj, where)
            except IngestError as exc:
                why = str(exc).removeprefix(f"{where}: ")
                rejected.append((line_no, text, _field(why), why))
                continue
            key = item["item_key"]
            if key in seen:
                why = f"item {key!r} repeats line {seen[key]}"
                rejected.append((line_no, text, "example_id", why))
                continue
            seen[key] = line_no
            items.append(item)
            item_lines.append((line_no, text))
    if not items and not rejected:
        raise IngestError(f"{path}: no BBQ items")
    metadata = find_metadata(path)  # BBQ's own target_loc, when the repository has it
    targets = apply_targets(items, metadata) if metadata is not None and items else None
    return {
        "design": "qa",
        "name": path.stem,
        "description": f"BBQ items read from {path.name}",
        "source": "BBQ (Parrish et al. 2022)",
        "items": items,
        "item_lines": item_lines,
        "rejected": rejected,
        "target_loc": targets,
    }
