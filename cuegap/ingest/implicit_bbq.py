"""Reader of ImplicitBBQ-style data files: BBQ items rewritten with implicit cues.

An ImplicitBBQ data file (``data/Gender_identity.jsonl``) holds, per line, only what the
system is shown and the answer::

    {"context": "...", "question": "...", "answers": ["...", "...", "..."], "label": 1,
     "example_id": 0}

(extra fields such as ``attribute_present_implicitly`` are kept out of the item). The
rest of an item, which its BBQ original gives, is joined inside cuegap when the bank is
stored (:mod:`cuegap.ingest._implicit_join`): BBQ's item with the same ``example_id`` and
category (``answer_info``, ``additional_metadata.stereotyped_groups``, context condition,
polarity, question index) must be in the store, so BBQ's ``data/`` is ingested first
(``cuegap ingest`` orders banks that join after the others). The options keep BBQ's order,
so option *i* takes the role and group of BBQ's ``ans{i}``.

The category is the line's ``category`` when it has one, else the file's name (BBQ's
category names, :mod:`cuegap.ingest._bbq_names`). The bank is named ``{file stem}-implicit``
so it sits beside BBQ's bank of the same category. A line that cannot be joined is
quarantined with its file, line, field and reason; the other lines are stored.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from cuegap.ingest._bbq_names import category_from_name
from cuegap.ingest._records import IngestError, Rejected
from cuegap.ingest._runner import first_json_lines, json_lines
from cuegap.ingest._validate import text_problem

NAME = "implicit-bbq"
_FIELDS = {"context", "question", "answers", "label", "example_id"}
_NOT = {"answer_info", "model_output", "predicted_index", "options", "format"}


def _looks(obj: Any) -> bool:
    return isinstance(obj, dict) and set(obj) >= _FIELDS and not _NOT & set(obj)


def detect(path: Path) -> bool:
    """True for a JSONL file whose first lines are ImplicitBBQ-style items."""
    if not path.is_file() or path.suffix.lower() not in (".jsonl", ".json"):
        return False
    heads = list(first_json_lines(path, 3))
    return bool(heads) and all(_looks(obj) for obj in heads)


def _line(obj: Any, line: int, category: str | None) -> dict[str, Any] | tuple[str, str]:
    """The fields of one line, or (field, reason) when it is not an ImplicitBBQ item."""
    if not isinstance(obj, dict):
        return "", f"expected a JSON object, got {type(obj).__name__}"
    for key in sorted(_FIELDS):
        if obj.get(key) is None:
            return key, f"field {key!r} is missing"
    for key in ("context", "question"):
        if not isinstance(obj[key], str):
            return key, f"field {key!r} must be a string"
    answers = obj["answers"]
    if not isinstance(answers, list) or not all(isinstance(a, str) for a in answers):
        return "answers", "field 'answers' must be a list of strings"
    texts = [("context", obj["context"]), ("question", obj["question"])]
    texts += [("answers", a) for a in answers]
    if isinstance(obj["example_id"], str):
        texts.append(("example_id", obj["example_id"]))
    for key, text in texts:
        why = text_problem(text)
        if why is not None:  # this line only: the file's other lines are still stored
            return key, f"field {key!r} {why}"
    label, example_id = obj["label"], obj["example_id"]
    if isinstance(label, bool) or not isinstance(label, int) or not 0 <= label < len(answers):
        return "label", f"field 'label': {label!r} is not an index of 'answers'"
    if isinstance(example_id, bool) or not isinstance(example_id, int | str):
        return "example_id", "field 'example_id' must be an integer or a string"
    cat = obj.get("category", category)
    if not isinstance(cat, str) or not cat.strip():
        return "category", (
            "no category: give 'category' on the line, or name the file after its BBQ "
            "category (e.g. Gender_identity.jsonl)"
        )
    return {
        "line": line,
        "category": cat.strip(),
        "example_id": str(example_id),
        "context": obj["context"],
        "question": obj["question"],
        "answers": list(answers),
        "label": label,
    }


def read(path: Path) -> dict[str, Any]:
    """Read an ImplicitBBQ-style data file as a QA bank still to be joined to BBQ.

    Returns
    -------
    dict
        ``design``, ``name``, ``description``, ``source``, ``join`` (``"bbq"``),
        ``lines`` (the readable lines' fields), ``rejected`` (line, raw, field, reason) and
        ``items`` (empty until joined).

    Raises
    ------
    IngestError
        When no line of the file is readable.
    """
    path = Path(path)
    category = category_from_name(path.name)
    lines: list[dict[str, Any]] = []
    rejected: list[tuple[int, str, str, str]] = []
    with path.open("rb") as fh:
        for entry in json_lines(fh):
            if isinstance(entry, Rejected):
                rejected.append((entry.line, entry.raw, entry.field or "", entry.reason))
                continue
            line_no, text, obj = entry
            got = _line(obj, line_no, category)
            if isinstance(got, tuple):
                rejected.append((line_no, text, got[0], got[1]))
            else:
                lines.append({**got, "raw": text})
    if not lines and not rejected:
        raise IngestError(f"{path}: no ImplicitBBQ items")
    return {
        "design": "qa",
        "name": f"{path.stem}-implicit",
        "description": f"ImplicitBBQ-style items read from {path.name}, joined to BBQ",
        "source": "ImplicitBBQ (seed 001), joined to BBQ (Parrish et al. 2022)",
        "join": "bbq",
        "lines": lines,
        "rejected": rejected,
        "items": [],
    }
