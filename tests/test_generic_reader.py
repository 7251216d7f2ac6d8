"""The hand-written line validation of the generic reader agrees with the shipped JSON Schema."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from cuegap.ingest import generic
from cuegap.ingest.itembank import schema

VALIDATOR = Draft202012Validator(schema("responses-v1.schema.json"))
GOOD = {"system": "s", "item_id": "i", "probe": "what_if", "individual": "A", "response": "x"}

CASES = [
    GOOD,
    {**GOOD, "consequences": False, "prompt_variant": "v2", "repeat": 3, "sample_id": "q"},
    {**GOOD, "prompt": None, "sample_id": None},
    {"system": "s", "item_id": "i", "probe": "main", "response": ""},
    {**GOOD, "consequences": "yes"},
    {**GOOD, "repeat": -1},
    {**GOOD, "repeat": 1.5},
    {**GOOD, "probe": "why"},
    {**GOOD, "individual": "AB"},
    {**GOOD, "response": None},
    {**GOOD, "system": 7},
    {**GOOD, "extra": 1},
    {k: v for k, v in GOOD.items() if k != "item_id"},
]


def _reader_accepts(obj: dict, tmp_path: Path) -> bool:
    path = tmp_path / "one.jsonl"
    path.write_text(json.dumps(obj) + "\n")
    records = list(generic.read(path).records)
    return type(records[0]).__name__ == "ResponseRecord"


@pytest.mark.parametrize("obj", CASES, ids=lambda o: json.dumps(o)[:60])
def test_reader_and_schema_agree(obj: dict, tmp_path: Path) -> None:
    assert _reader_accepts(obj, tmp_path) == VALIDATOR.is_valid(obj)


@pytest.mark.parametrize(
    "obj",
    [
        {k: v for k, v in GOOD.items() if k != "individual"},
        {**GOOD, "probe": "main"},
        {**GOOD, "individual": None},
    ],
)
def test_cross_field_rules_agree(obj: dict, tmp_path: Path) -> None:
    """what_if/could_be need an individual and main must not have one, in both."""
    assert not _reader_accepts(obj, tmp_path)
    assert not VALIDATOR.is_valid(obj)


def test_header_validates_against_schema() -> None:
    header = {
        "format": "cuegap-responses",
        "version": 1,
        "item_bank": "b",
        "runner": "r",
        "systems": {"s": {"provider": "p", "metadata": {"alignment": 2}}},
    }
    assert VALIDATOR.is_valid(header)
