"""Reader of Difference-Awareness item banks in the MAC-Fairness question schema.

Difference-Awareness (Wang et al. 2025) asks which of two groups something applies to,
with a third option saying the groups do not differ. MAC-Fairness (schema ``2025-12-10``)
wraps each question as ``question_id`` (``diffAware_{subset}_{id}``), ``choices`` (A, B,
C), ``correct_answer_id`` and ``source_metadata.additional_metadata.split``
(``different`` / ``equal``). A file is one item bank, named by the file's stem.

How an item sits in the QA tables (a documented extension of the QA item bank)
--------------------------------------------------------------------------------
=============================  =========================================================
Difference-Awareness           cuegap ``qa_item`` / ``qa_option``
=============================  =========================================================
subset D1-D4, N1-N4            ``dimension`` ``d1`` ... ``n4``; ``subgroup``
                               ``descriptive`` (D) or ``normative`` (N)
split ``different``/``equal``  ``context_condition`` ``different`` / ``equal``
the two group options          role ``unresolved``: they name no stereotype target, so
                               the QA design's counts leave these items out
the equal-treatment option     role ``unknown`` (the third choice, as in Wang et al.'s
                               data: ``=`` questions are always answered by option 2)
``correct_answer_id``          the gold option; an ``equal`` question's gold must be the
                               equal-treatment option, a ``different`` one's a group
=============================  =========================================================

``polarity`` is ``nonneg`` and ``cue`` ``explicit`` (Difference-Awareness has neither);
``source_id`` is the ``question_id``, which MAC-Fairness transcripts join on. A line
that is not a valid question makes the whole bank invalid (:class:`IngestError` naming
the file, line and field).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from cuegap.ingest._guard import unstorable_text
from cuegap.ingest._records import IngestError, Rejected
from cuegap.ingest._runner import first_json_lines, json_lines

NAME = "diffaware"
SPLITS = ("different", "equal")
_QID = re.compile(r"^diffaware_([dn][1-4])_", re.IGNORECASE)
EQUAL_INDEX = 2


def _split(obj: Any) -> str | None:
    if not isinstance(obj, dict) or "question_id" not in obj:
        return None
    meta = obj.get("source_metadata")
    extra = meta.get("additional_metadata") if isinstance(meta, dict) else None
    split = extra.get("split") if isinstance(extra, dict) else None
    return split if isinstance(split, str) else None


def detect(path: Path) -> bool:
    """True for a JSONL file whose first lines are MAC-Fairness Difference-Awareness
    questions (a ``question_id`` and a ``split`` in the source metadata)."""
    if not path.is_file() or path.suffix.lower() not in (".jsonl", ".json"):
        return False
    return any(_split(obj) is not None for obj in first_json_lines(path, 3))


def item_from_line(obj: Any, where: str) -> dict[str, Any]:
    """One QA item (the dict :func:`cuegap.ingest._qa_bank.ingest_qa_bank` writes).

    Raises
    ------
    IngestError
        Naming ``where`` (file and line) and the field that is missing or wrong.
    """
    if not isinstance(obj, dict):
        raise IngestError(f"{where}: expected a JSON object")
    qid = obj.get("question_id")
    if not isinstance(qid, str) or not qid:
        raise IngestError(f"{where}: field 'question_id' is missing")
    m = _QID.match(qid)
    if m is None:
        raise IngestError(
            f"{where}: field 'question_id': {qid!r} does not name a subset "
            "(expected diffAware_<d1..d4|n1..n4>_<id>)"
        )
    subset = m.group(1).lower()
    split = _split(obj)
    if split not in SPLITS:
        raise IngestError(
            f"{where}: field 'source_metadata.additional_metadata.split': got {split!r}; "
            f"allowed: {', '.join(SPLITS)}"
        )
    choices = obj.get("choices")
    if not isinstance(choices, list) or len(choices) != 3:
        raise IngestError(f"{where}: field 'choices': expected 3 choices (two groups, equal)")
    if not all(isinstance(c, dict) and isinstance(c.get("text"), str) for c in choices):
        raise IngestError(f"{where}: field 'choices': each needs an 'id' and a 'text'")
    labels = [str(c.get("id")) for c in choices]
    if len(set(labels)) != 3:
        raise IngestError(f"{where}: field 'choices': duplicate ids {labels}")
    gold_label = obj.get("correct_answer_id")
    if gold_label not in labels:
        raise IngestError(f"{where}: field 'correct_answer_id': {gold_label!r} is not a choice")
    gold = labels.index(gold_label)
    if (split == "equal") != (gold == EQUAL_INDEX):
        want = "the equal-treatment (third) choice" if split == "equal" else "a group choice"
        raise IngestError(
            f"{where}: field 'correct_answer_id': {gold_label!r}, but a {split!r} question's "
            f"gold answer is {want}"
        )
    meta = obj.get("source_metadata") or {}
    return {
        "item_key": qid,
        "dimension": subset,
        "subgroup": "descriptive" if subset.startswith("d") else "normative",
        "context_condition": split,
        "polarity": "nonneg",
        "cue": "explicit",
        "cue_texts": None,
        "template_id": None,
        "source_id": qid,
        "context": str(obj.get("context") or ""),
        "question": str(obj.get("question") or ""),
        "gold_index": gold,
        "meta": {"source_dataset": obj.get("source_dataset"), "example_id": meta.get("example_id")},
        "options": [
            {
                "index": i,
                "label": labels[i],
                "text": str(choices[i]["text"]),
                "role": "unknown" if i == EQUAL_INDEX else "unresolved",
                "axes": {},
            }
            for i in range(3)
        ],
    }


def read(path: Path) -> dict[str, Any]:
    """Read a Difference-Awareness question file as one QA item bank.

    Raises
    ------
    IngestError
        For a line that is not JSON or not a valid question, or a repeated question.
    """
    path = Path(path)
    items: list[dict[str, Any]] = []
    seen: dict[str, int] = {}
    with path.open("rb") as fh:
        for entry in json_lines(fh):
            if isinstance(entry, Rejected):
                raise IngestError(f"{path}: line {entry.line}: {entry.reason}")
            line_no, _text, obj = entry
            bad = unstorable_text(obj)
            if bad is not None:  # PostgreSQL stores no NUL in text
                raise IngestError(f"{path}: line {line_no}: {bad[1]}")
            item = item_from_line(obj, f"{path}: line {line_no}")
            key = item["item_key"]
            if key in seen:
                raise IngestError(
                    f"{path}: line {line_no}: question {key!r} repeats line {seen[key]}"
                )
            seen[key] = line_no
            items.append(item)
    if not items:
        raise IngestError(f"{path}: no Difference-Awareness questions")
    return {
        "design": "qa",
        "name": path.stem,
        "description": f"Difference-Awareness questions read from {path.name}",
        "source": "Difference-Awareness (Wang et al. 2025) in the MAC-Fairness question schema",
        "items": items,
    }
