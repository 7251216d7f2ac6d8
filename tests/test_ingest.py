"""Ingest of cuegap's own format into real SQLite and PostgreSQL stores."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sqlalchemy import func, select

from cuegap.ingest import IngestError, ingest_path
from cuegap.schema import IngestBatch, Quarantine, Response, System
from tests.conftest import DATA

HEADER = {"format": "cuegap-responses", "version": 1, "item_bank": "tiny"}


def _count(engine, table) -> int:
    with engine.connect() as conn:
        return conn.execute(select(func.count()).select_from(table)).scalar_one()


def _write(path: Path, lines: list[str | bytes | dict], *, newline_at_end: bool = True) -> Path:
    out = bytearray()
    for i, line in enumerate(lines):
        if isinstance(line, dict):
            line = json.dumps(line)
        out += line if isinstance(line, bytes) else line.encode()
        if i < len(lines) - 1 or newline_at_end:
            out += b"\n"
    path.write_bytes(bytes(out))
    return path


def _resp(**kw) -> dict:
    base = {
        "system": "s1",
        "item_id": "direct-d1",
        "probe": "what_if",
        "individual": "A",
        "response": "option1",
    }
    base.update(kw)
    return base


def test_tiny_dataset_is_stored_and_parsed(engine, tiny_bank) -> None:
    """Every field of the hand-written file lands as worked out by hand.

    tiny_responses.jsonl has a header and 10 responses. The puzzle answer on line 9 gives C
    the race Hispanic where the solution says Asian, so A, B and D are recovered.
    """
    bank = ingest_path(engine, tiny_bank)
    assert (bank.stored, bank.read) == (7, 7)  # 2 dilemmas + 5 items
    s = ingest_path(engine, DATA / "tiny_responses.jsonl")
    assert (s.read, s.stored, s.duplicate, s.quarantined) == (10, 10, 0, 0)
    with engine.connect() as conn:
        rows = {r.source_line: r for r in conn.execute(select(Response))}
        systems = {r.name: r for r in conn.execute(select(System))}
    assert set(systems) == {"sys-a", "sys-b"}
    assert systems["sys-a"].provider == "acme"
    assert systems["sys-a"].metadata == {"alignment": 2, "capability": 0.9}
    assert rows[2].parsed_answer == "option1" and rows[2].condition == "neutral"
    assert rows[3].parsed_answer == "option1"
    assert (rows[4].selected_individual, rows[4].parsed_answer) == ("C", "option2")
    assert rows[7].parsed_answer == "yes" and rows[7].probe == "could_be"
    assert rows[8].abstained and rows[8].parse_status == "refusal"
    assert rows[8].raw_text == "I'm sorry, but I can't help with that."
    puzzle = rows[9]
    assert puzzle.recovered == "ABD" and puzzle.puzzle_correct is False
    assert puzzle.parsed_answer == "option1" and puzzle.difficulty == "hard"
    assert puzzle.assignment["C"] == {"gender": "woman", "race": "Hispanic"}
    assert rows[10].individual == "A" and rows[10].consequences is False
    assert rows[10].prompt_variant == "v1"
    assert (rows[11].repeat, rows[11].sample_id) == (1, "s-11")
    assert all(r.recovered is None for n, r in rows.items() if n != 9)


def test_reingest_stores_nothing_new(engine, tiny_bank) -> None:
    ingest_path(engine, tiny_bank)
    again = ingest_path(engine, tiny_bank)
    assert again.stored == 0 and "already" in again.note
    ingest_path(engine, DATA / "tiny_responses.jsonl")
    second = ingest_path(engine, DATA / "tiny_responses.jsonl")
    assert (second.read, second.stored, second.duplicate) == (10, 0, 10)
    assert second.note == "file already ingested: nothing new stored"
    assert _count(engine, Response) == 10


def test_bad_lines_are_quarantined_with_line_and_reason(engine, tiny_bank, tmp_path) -> None:
    """One line of each kind of damage; the good lines around them are stored."""
    ingest_path(engine, tiny_bank)
    path = _write(
        tmp_path / "bad.jsonl",
        [
            HEADER,  # header: not a record
            _resp(),  # 2 good
            "this is not json",  # 3
            b'{"system": "s1", "item_id": "direct-d1", "probe": "main", "response": "\xe9"}',  # 4
            _resp(item_id="nope-1"),  # 5 unknown item
            {"system": "s1", "item_id": "direct-d1", "probe": "main"},  # 6 missing response
            _resp(consequences="yes"),  # 7 mistyped
            _resp(individual="Q"),  # 8 individual not in item
            _resp(item_id="neutral-d1"),  # 9 what_if on a neutral item
            _resp(repsonse="typo"),  # 10 unknown field
            "[1, 2]",  # 11 not an object
            "",  # 12 blank: not a record
            _resp(individual="B"),  # 13 good
            '{"system": "s1", "item_id": "dir',  # 14 truncated, no newline at EOF
        ],
        newline_at_end=False,
    )
    s = ingest_path(engine, path)
    assert (s.read, s.stored, s.quarantined, s.duplicate) == (12, 2, 10, 0)
    assert s.balanced
    with engine.connect() as conn:
        q = {r.line_no: r for r in conn.execute(select(Quarantine))}
    assert sorted(q) == [3, 4, 5, 6, 7, 8, 9, 10, 11, 14]
    assert "not valid JSON" in q[3].reason and q[3].raw == "this is not json"
    assert "not valid UTF-8" in q[4].reason and "\\xe9" in q[4].raw
    assert "unknown item_id 'nope-1'" in q[5].reason and q[5].field == "item_id"
    assert "missing required field 'response'" in q[6].reason
    assert q[7].field == "consequences" and "expected true or false, got a string" in q[7].reason
    assert q[8].field == "individual" and "'Q'" in q[8].reason
    assert q[9].field == "probe" and "neutral" in q[9].reason
    assert q[10].field == "repsonse" and "unknown field" in q[10].reason
    assert "expected a JSON object" in q[11].reason
    assert "truncated line at end of file" in q[14].reason
    assert all(r.source_path == str(path) for r in q.values())
    # Quarantine is idempotent too: the same lines are not recorded twice.
    again = ingest_path(engine, path)
    assert (again.stored, again.duplicate, again.quarantined) == (0, 2, 10)
    assert _count(engine, Quarantine) == 10


def test_unknown_header_version_rejects_the_file(engine, tiny_bank, tmp_path) -> None:
    ingest_path(engine, tiny_bank)
    path = _write(tmp_path / "v9.jsonl", [{**HEADER, "version": 9}, _resp()])
    with pytest.raises(
        IngestError, match=r"v9.jsonl: line 1: field 'version': unknown .* version 9"
    ):
        ingest_path(engine, path)
    assert _count(engine, Response) == 0


def test_conflicting_response_is_quarantined(engine, tiny_bank, tmp_path) -> None:
    ingest_path(engine, tiny_bank)
    ingest_path(engine, _write(tmp_path / "a.jsonl", [HEADER, _resp(response="option1")]))
    s = ingest_path(
        engine,
        _write(
            tmp_path / "b.jsonl",
            [HEADER, _resp(response="option2"), _resp(response="option2", repeat=1)],
        ),
    )
    assert (s.stored, s.quarantined) == (1, 1)
    assert "conflicts with the stored response from" in s.problems[0][1]
    assert "a.jsonl line 2" in s.problems[0][1]


def test_failure_mid_file_is_consistent_and_resumable(
    engine, tiny_bank, tmp_path, monkeypatch
) -> None:
    """A crash in batch 3 keeps batches 1-2, marks the ingest failed; a re-run completes it."""
    import cuegap.ingest._response_rules as loader  # where parse_response is read

    ingest_path(engine, tiny_bank)
    # Texts differ per line: the loader parses a text once (then uses its cached
    # columns), and the crash must come from the ninth line's parse.
    lines = [HEADER] + [
        _resp(individual=lab, repeat=r, response=f"option1 ({r}{lab})")
        for r in range(5)
        for lab in "ABCD"
    ]
    path = _write(tmp_path / "big.jsonl", lines)  # 20 responses
    real = loader.parse_response
    calls = {"n": 0}

    def flaky(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 9:
            raise RuntimeError("disk on fire")
        return real(*args, **kwargs)

    monkeypatch.setattr(loader, "parse_response", flaky)
    with pytest.raises(RuntimeError, match="disk on fire"):
        ingest_path(engine, path, batch_size=4)
    assert _count(engine, Response) == 8
    with engine.connect() as conn:
        batch = conn.execute(
            select(IngestBatch.status, IngestBatch.error, IngestBatch.stored)
        ).one()
    assert batch.status == "failed" and "disk on fire" in batch.error and batch.stored == 8
    monkeypatch.setattr(loader, "parse_response", real)
    s = ingest_path(engine, path, batch_size=4)
    assert (s.read, s.stored, s.duplicate) == (20, 12, 8)
    assert _count(engine, Response) == 20


def test_item_bank_errors_name_file_and_path(engine, tmp_path) -> None:
    bank = json.loads((DATA / "tiny_bank.json").read_text())
    bank["items"][2]["condition"] = "puzled"
    path = tmp_path / "bank.json"
    path.write_text(json.dumps(bank))
    with pytest.raises(
        IngestError, match=r"bank.json: items\[2\]\.condition: 'puzled' is not one of"
    ):
        ingest_path(engine, path)
    bank["items"][2]["condition"] = "direct"
    bank["items"][2]["dilemma_id"] = "d9"
    path.write_text(json.dumps(bank))
    with pytest.raises(IngestError, match=r"items\[2\]\.dilemma_id: unknown dilemma 'd9'"):
        ingest_path(engine, path)


def test_changed_bank_under_same_name_is_refused(engine, tiny_bank, tmp_path) -> None:
    ingest_path(engine, tiny_bank)
    bank = json.loads(tiny_bank.read_text())
    bank["dilemmas"][0]["benefit_option"] = "option1"
    path = tmp_path / "bank.json"
    path.write_text(json.dumps(bank))
    with pytest.raises(IngestError, match="already in the store with different content"):
        ingest_path(engine, path)


def test_responses_without_bank_are_quarantined(engine, tmp_path) -> None:
    s = ingest_path(engine, _write(tmp_path / "r.jsonl", [_resp()]))
    assert s.quarantined == 1 and "store holds 0 banks" in s.problems[0][1]
