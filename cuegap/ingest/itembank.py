"""Reader and validator for cuegap item-bank files (``schemas/itembank-v1.schema.json``)."""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import orjson
from jsonschema import Draft202012Validator

from cuegap.ingest._guard import depth_problem, unstorable_text
from cuegap.ingest._records import IngestError

NAME = "itembank"
FORMAT_ID = "cuegap-itembank"
# Conditions whose individuals carry a demographic assignment a puzzle answer is checked against.
PUZZLE_CONDITIONS = frozenset(("puzzled", "formal_named"))
# Conditions that need a difficulty.
DIFFICULTY_CONDITIONS = PUZZLE_CONDITIONS


@cache
def schema(name: str) -> dict[str, Any]:
    """Load a packaged JSON Schema by file name (e.g. ``itembank-v1.schema.json``)."""
    text = resources.files("cuegap.ingest").joinpath("schemas", name).read_text("utf-8")
    return json.loads(text)


def detect(path: Path) -> bool:
    """True for a ``.json`` file whose top-level ``format`` is ``cuegap-itembank``."""
    if not path.is_file() or path.suffix.lower() != ".json":
        return False
    with path.open("rb") as fh:
        head = fh.read(4096)
    return b'"format"' in head and FORMAT_ID.encode() in head


def _where(error_path: Any) -> str:
    out = ""
    for part in error_path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(top level)"


def validate(bank: dict[str, Any], *, source: str = "item bank") -> dict[str, Any]:
    """Check an item bank against the schema and for referential integrity.

    Parameters
    ----------
    bank : dict
        The parsed item-bank document.
    source : str
        Name used in error messages (usually the file path).

    Returns
    -------
    dict
        The same bank, for chaining.

    Raises
    ------
    IngestError
        Naming the file, the JSON path of the first problem and what was wrong.
    """
    validator = Draft202012Validator(schema("itembank-v1.schema.json"))
    errors = sorted(validator.iter_errors(bank), key=lambda e: list(e.absolute_path))
    if errors:
        err = errors[0]
        more = f" (and {len(errors) - 1} more problems)" if len(errors) > 1 else ""
        raise IngestError(f"{source}: {_where(err.absolute_path)}: {err.message}{more}")
    dilemma_ids: set[str] = set()
    for i, dilemma in enumerate(bank["dilemmas"]):
        if dilemma["dilemma_id"] in dilemma_ids:
            raise IngestError(
                f"{source}: dilemmas[{i}].dilemma_id: duplicate id {dilemma['dilemma_id']!r}"
            )
        dilemma_ids.add(dilemma["dilemma_id"])
    item_ids: set[str] = set()
    for i, item in enumerate(bank["items"]):
        where = f"{source}: items[{i}]"
        if item["item_id"] in item_ids:
            raise IngestError(f"{where}.item_id: duplicate id {item['item_id']!r}")
        item_ids.add(item["item_id"])
        if item["dilemma_id"] not in dilemma_ids:
            raise IngestError(f"{where}.dilemma_id: unknown dilemma {item['dilemma_id']!r}")
        individuals = item.get("individuals") or []
        labels = [p["label"] for p in individuals]
        if len(set(labels)) != len(labels):
            raise IngestError(f"{where}.individuals: duplicate labels {labels}")
        if item["condition"] == "neutral" and individuals:
            raise IngestError(f"{where}.individuals: a neutral item carries no individuals")
        if item["condition"] != "neutral" and not individuals:
            raise IngestError(f"{where}.individuals: a {item['condition']} item needs individuals")
        if item["condition"] in DIFFICULTY_CONDITIONS and not item.get("difficulty"):
            raise IngestError(f"{where}.difficulty: required for the {item['condition']} condition")
    return bank


def read(path: Path) -> dict[str, Any]:
    """Read and validate an item-bank JSON file.

    Raises
    ------
    IngestError
        When the file is not JSON or fails validation (the message names the file and path).
    """
    try:
        bank = orjson.loads(Path(path).read_bytes().removeprefix(b"\xef\xbb\xbf"))
    except orjson.JSONDecodeError as exc:
        raise IngestError(f"{path}: not valid JSON: {exc}") from exc
    if not isinstance(bank, dict):
        raise IngestError(f"{path}: expected a JSON object at the top level")
    deep = depth_problem(bank)
    if deep is not None:  # before the schema's recursive checks meet it
        raise IngestError(f"{path}: {deep[1]}")
    bad = unstorable_text(bank)
    if bad is not None:
        raise IngestError(f"{path}: {bad[1]}")
    return validate(bank, source=str(path))


def solution_of(item: dict[str, Any]) -> dict[str, dict[str, str]] | None:
    """What a puzzle answer must give for each individual, or None for non-puzzle items."""
    if item["condition"] not in PUZZLE_CONDITIONS:
        return None
    return {
        p["label"]: p.get("solution") or {"gender": p["gender"], "race": p["race"]}
        for p in item["individuals"]
    }
