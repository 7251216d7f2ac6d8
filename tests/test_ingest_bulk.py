"""The bulk-load paths of ingest: deferred indexes, cached parse columns, NULL encoding.

These paths only switch on for large files; here they are forced on small ones and the
stores they produce are compared with the ordinary path's.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sqlalchemy import inspect, select, text

import cuegap.ingest._pass as ingest_pass
import cuegap.ingest._response_rules as responses  # where parse_response is read
from cuegap.ingest import ingest_path
from cuegap.schema import IngestBatch, Response, make_engine, upgrade
from tests.conftest import DATA

HEADER = {"format": "cuegap-responses", "version": 1, "item_bank": "tiny"}
SECONDARY = {"ix_response_agg", "ix_response_item", "ix_response_run_id"}


def _write(path: Path, lines: list[dict]) -> Path:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def _resp(**kw) -> dict:
    base = {"system": "s1", "item_id": "direct-d1", "probe": "what_if", "individual": "A"}
    return {**base, "response": "option1", **kw}


def _rows(engine) -> list[tuple]:
    cols = [c for c in Response.__table__.columns if c.name not in ("id", "run_id", "batch_id")]
    with engine.connect() as conn:
        return [tuple(r) for r in conn.execute(select(*cols).order_by(Response.source_line))]


def _indexes(engine) -> set[str]:
    return {ix["name"] for ix in inspect(engine).get_indexes("response")}


def test_deferred_indexes_store_the_same_rows(engine, tiny_bank, tmp_path, monkeypatch) -> None:
    """A load with secondary indexes dropped and rebuilt stores what the ordinary path does."""
    ingest_path(engine, tiny_bank)
    ordinary = make_engine(f"sqlite:///{tmp_path / 'ordinary.db'}")
    upgrade(ordinary)
    ingest_path(ordinary, tiny_bank)
    ingest_path(ordinary, DATA / "tiny_responses.jsonl")
    monkeypatch.setattr(ingest_pass, "DEFER_INDEXES_MIN", 0)
    s = ingest_path(engine, DATA / "tiny_responses.jsonl", batch_size=3)
    assert (s.read, s.stored) == (10, 10)
    assert _rows(engine) == _rows(ordinary)
    assert _indexes(engine) >= SECONDARY


def test_crash_with_deferred_indexes_rebuilds_them(
    engine, tiny_bank, tmp_path, monkeypatch
) -> None:
    ingest_path(engine, tiny_bank)
    # Texts differ per line: the loader parses a text once (then uses its cached
    # columns), and the crash must come from the ninth line's parse.
    lines = [HEADER] + [
        _resp(individual=lab, repeat=r, response=f"option1 ({r}{lab})")
        for r in range(5)
        for lab in "ABCD"
    ]
    path = _write(tmp_path / "big.jsonl", lines)
    monkeypatch.setattr(ingest_pass, "DEFER_INDEXES_MIN", 0)
    real = responses.parse_response
    calls = {"n": 0}

    def flaky(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 9:
            raise RuntimeError("disk on fire")
        return real(*args, **kwargs)

    monkeypatch.setattr(responses, "parse_response", flaky)
    with pytest.raises(RuntimeError, match="disk on fire"):
        ingest_path(engine, path, batch_size=4)
    assert _indexes(engine) >= SECONDARY
    with engine.connect() as conn:
        assert conn.execute(select(IngestBatch.status)).scalar_one() == "failed"
    monkeypatch.setattr(responses, "parse_response", real)
    s = ingest_path(engine, path, batch_size=4)
    assert (s.read, s.stored, s.duplicate) == (20, 12, 8)


def test_indexes_left_dropped_are_rebuilt_by_the_next_ingest(engine, tiny_bank) -> None:
    """A hard kill between drop and rebuild leaves them missing; any later ingest restores."""
    if engine.dialect.name != "sqlite":
        pytest.skip("indexes are only deferred on SQLite")
    ingest_path(engine, tiny_bank)
    with engine.begin() as conn:
        for name in SECONDARY:
            conn.execute(text(f"DROP INDEX {name}"))
    ingest_path(engine, DATA / "tiny_responses.jsonl")
    assert _indexes(engine) >= SECONDARY


def test_null_markers_never_swallow_real_values(engine, tiny_bank, tmp_path) -> None:
    """On SQLite NULL travels as 0 or '': text "0", "" and false must still come back."""
    ingest_path(engine, tiny_bank)
    path = _write(
        tmp_path / "r.jsonl",
        [
            HEADER,
            _resp(prompt="0", sample_id="", consequences=False),
            _resp(individual="B", prompt=None, sample_id="0"),
            {"system": "s1", "item_id": "puzzled-hard-d1", "probe": "main", "response": "{}"},
        ],
    )
    assert ingest_path(engine, path).stored == 3
    with engine.connect() as conn:
        rows = {r.source_line: r for r in conn.execute(select(Response))}
    assert (rows[2].prompt, rows[2].sample_id, rows[2].consequences) == ("0", "", False)
    assert (rows[3].prompt, rows[3].sample_id, rows[3].consequences) == (None, "0", True)
    assert rows[2].difficulty is None and rows[2].assignment is None
    assert rows[2].recovered is None and rows[2].puzzle_correct is None
    assert rows[2].abstained is False and rows[4].abstained is True
    assert rows[4].parsed_answer is None and rows[4].selected_individual is None


def test_repeated_answers_get_their_own_items_solution(engine, tiny_bank, tmp_path) -> None:
    """One puzzle answer given to two items: each item's own solution scores it.

    The answer is item 1's solution exactly (ABCD recovered); item 2's people differ in
    gender or race from every person in it, so none is recovered ("" and not NULL).
    """
    bank = json.loads(tiny_bank.read_text())
    first = next(it for it in bank["items"] if it["condition"] == "puzzled")
    other = next(it for it in bank["items"] if it["item_id"] == "direct-d2")
    second = {**first, "item_id": "puzzled-hard-d2", "dilemma_id": other["dilemma_id"]}
    second["individuals"] = other["individuals"]
    bank["items"].append(second)
    ingest_path(engine, _write_json(tmp_path / "bank.json", bank))
    people = {p["label"]: {"gender": p["gender"], "race": p["race"]} for p in first["individuals"]}
    answer = json.dumps({**people, "answer": "option1"})
    lines = [HEADER] + [
        {"system": f"s{n}", "item_id": it, "probe": "main", "response": answer}
        for n in range(3)
        for it in ("puzzled-hard-d1", "puzzled-hard-d2")
    ]
    assert ingest_path(engine, _write(tmp_path / "r.jsonl", lines)).stored == 6
    with engine.connect() as conn:
        got = conn.execute(
            text(
                "SELECT i.item_key, r.recovered, r.puzzle_correct FROM response r "
                "JOIN item i ON i.id = r.item_id"
            )
        ).all()
    scores = {(key, rec, bool(ok)) for key, rec, ok in got}
    assert scores == {("puzzled-hard-d1", "ABCD", True), ("puzzled-hard-d2", "", False)}


def _write_json(path: Path, obj: dict) -> Path:
    path.write_text(json.dumps(obj))
    return path
