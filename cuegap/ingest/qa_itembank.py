"""Reader of cuegap's own QA item banks (``schemas/qa-itembank-v1.schema.json``).

JSONL: an optional header line ``{"format": "cuegap-qa-itembank", "version": 1, "name":
...}``, then one item per line: ``item_id``, ``template_id``, ``source_id``,
``dimension``, ``subgroup``, ``context_condition`` (ambiguous / disambiguated; or a
Difference-Awareness split, different / equal: :mod:`cuegap.ingest.diffaware`),
``polarity`` (negative / nonneg), ``cue`` (explicit / implicit / control_neutral /
control_none), ``cue_texts``, ``context``, ``question``, ``options`` (``label``, ``text``,
``role``: target / non_target / unknown, and ``axes``: {axis: value}) and ``gold`` (the
correct option's label). This is the shape of ImplicitBBQ (seed 001): the same item under
explicit, implicit and control cues.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator

from cuegap.ingest._guard import unstorable_text
from cuegap.ingest._records import IngestError, Rejected
from cuegap.ingest._runner import first_json_lines, json_lines
from cuegap.ingest.itembank import schema

NAME = "cuegap-qa-itembank"
FORMAT_ID = "cuegap-qa-itembank"
SCHEMA = "qa-itembank-v1.schema.json"


def detect(path: Path) -> bool:
    """True for a JSONL file with a cuegap QA header, or whose first line is a QA item."""
    if not path.is_file() or path.suffix.lower() not in (".jsonl", ".json"):
        return False
    for obj in first_json_lines(path, 2):
        if isinstance(obj, dict) and (
            obj.get("format") == FORMAT_ID or {"item_id", "options", "cue", "gold"} <= set(obj)
        ):
            return True
    return False


def _where(error_path: Any) -> str:
    out = ""
    for part in error_path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(top level)"


def _item(obj: dict[str, Any], where: str) -> dict[str, Any]:
    labels = [o["label"] for o in obj["options"]]
    if len(set(labels)) != len(labels):
        raise IngestError(f"{where}: field 'options': duplicate labels {labels}")
    if obj["gold"] not in labels:
        raise IngestError(f"{where}: field 'gold': {obj['gold']!r} is not one of {labels}")
    return {
        "item_key": obj["item_id"],
        "dimension": obj["dimension"],
        "subgroup": obj.get("subgroup") or "",
        "context_condition": obj["context_condition"],
        "polarity": obj["polarity"],
        "cue": obj["cue"],
        "cue_texts": obj.get("cue_texts"),
        "template_id": obj.get("template_id"),
        "source_id": obj.get("source_id"),
        "context": obj["context"],
        "question": obj["question"],
        "gold_index": labels.index(obj["gold"]),
        "meta": None,
        "options": [
            {
                "index": i,
                "label": o["label"],
                "text": o["text"],
                "role": o["role"],
                "axes": dict(o.get("axes") or {}),
            }
            for i, o in enumerate(obj["options"])
        ],
    }


def read(path: Path) -> dict[str, Any]:
    """Read and validate a QA item-bank JSONL file.

    Raises
    ------
    IngestError
        Naming the file, the line and the field of the first problem.
    """
    path = Path(path)
    defs = schema(SCHEMA)["$defs"]
    validators = {
        kind: Draft202012Validator({"$ref": f"#/$defs/{kind}", "$defs": defs})
        for kind in ("header", "item")
    }
    header: dict[str, Any] = {}
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
            where = f"{path}: line {line_no}"
            is_header = isinstance(obj, dict) and "format" in obj
            kind = "header" if is_header else "item"
            errors = sorted(validators[kind].iter_errors(obj), key=lambda e: list(e.absolute_path))
            if errors:
                err = errors[0]
                raise IngestError(f"{where}: {_where(err.absolute_path)}: {err.message}")
            if is_header:
                if items or header:
                    raise IngestError(f"{where}: a header must be on the first line")
                header = obj
                continue
            if obj["item_id"] in seen:
                raise IngestError(
                    f"{where}: item_id {obj['item_id']!r} repeats line {seen[obj['item_id']]}"
                )
            seen[obj["item_id"]] = line_no
            items.append(_item(obj, where))
    if not items:
        raise IngestError(f"{path}: no items")
    return {
        "design": "qa",
        "name": header.get("name") or path.stem,
        "description": header.get("description"),
        "source": header.get("source"),
        "items": items,
    }
