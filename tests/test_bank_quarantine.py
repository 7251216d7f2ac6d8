"""Item-bank lines that cannot be stored are quarantined in the store (issue 27).

Real files in BBQ's and ImplicitBBQ's published layouts (the fixtures in
``tests/fixtures/bbq_family/``, whose docstring in ``test_bbq_family_ingest.py`` gives
the fields), with bad lines added: malformed JSON, a missing field, a NUL character
(``\\u0000``, which PostgreSQL cannot store in text) and a repeated item. Each bad line
must end up in the ``quarantine`` table with its file, line, field, reason and raw text,
under an ingest batch whose counts add up (read = stored + duplicate + quarantined), on
SQLite and PostgreSQL; the good lines are stored.
"""

from __future__ import annotations

import json
from pathlib import Path

from sqlalchemy import text
from typer.testing import CliRunner

from cuegap.cli import app
from cuegap.compliance import verify
from cuegap.ingest import ingest_path
from cuegap.schema import provenance, store_status

FIX = Path(__file__).parent / "fixtures" / "bbq_family"


def _bbq_with_bad_lines(tmp_path: Path) -> Path:
    """BBQ's six Gender_identity items with four bad lines after them (lines 7 to 10)."""
    good = (FIX / "BBQ" / "data" / "Gender_identity.jsonl").read_text().splitlines()
    first = json.loads(good[0])
    missing = {k: v for k, v in first.items() if k != "answer_info"} | {"example_id": 90}
    nul = first | {"example_id": 91, "context": "Two travellers\u0000 at the stop."}
    lines = [
        *good,
        '{"example_id": 92, "context": "cut',  # 7: malformed JSON
        json.dumps(missing),  # 8: no answer_info
        json.dumps(nul),  # 9: a NUL character in the context
        good[0],  # 10: example 0 again
    ]
    folder = tmp_path / "BBQ" / "data"
    folder.mkdir(parents=True)
    path = folder / "Gender_identity.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _rows(engine, name: str) -> list[tuple]:
    with engine.connect() as conn:
        return conn.execute(
            text(
                "SELECT q.line_no, q.field, q.reason, q.raw, b.lines_read, b.stored, "
                "b.duplicate, b.quarantined, b.format FROM quarantine q JOIN ingest_batch b "
                "ON b.id = q.batch_id WHERE q.source_path LIKE :p AND q.resolved_at IS NULL "
                "ORDER BY q.line_no"
            ),
            {"p": f"%{name}"},
        ).all()


def test_bad_bbq_bank_lines_are_quarantined_and_counted(engine, tmp_path: Path) -> None:
    path = _bbq_with_bad_lines(tmp_path)
    s = ingest_path(engine, path)
    assert (s.read, s.stored, s.duplicate, s.quarantined) == (10, 6, 0, 4)
    rows = _rows(engine, "BBQ/data/Gender_identity.jsonl")
    assert [(r.line_no, r.field) for r in rows] == [
        (7, None), (8, "answer_info"), (9, "context"), (10, "example_id"),
    ]  # fmt: skip
    assert "JSON" in rows[0].reason and rows[0].raw.startswith('{"example_id": 92')
    assert "field 'answer_info' is missing" in rows[1].reason
    assert "NUL" in rows[2].reason and "\\u0000" in rows[2].raw  # kept, escaped
    assert "repeats line 1" in rows[3].reason
    # One batch for the pass, whose counts add up: 10 read = 6 stored + 4 quarantined.
    assert {(r.lines_read, r.stored, r.duplicate, r.quarantined, r.format) for r in rows} == {
        (10, 6, 0, 4, "bbq")
    }
    assert store_status(engine).quarantined == 4
    batches = provenance(engine).batches
    assert batches[["lines_read", "stored", "duplicate", "quarantined"]].values.tolist() == [
        [10, 6, 0, 4]
    ]
    with engine.connect() as conn:
        items = conn.execute(text("SELECT COUNT(*) FROM qa_item")).scalar_one()
    assert items == 6
    assert verify(engine).ok  # the batch and its quarantined lines are sealed

    again = ingest_path(engine, path)  # idempotent: the same lines, quarantined once
    assert (again.read, again.stored, again.duplicate, again.quarantined) == (10, 0, 6, 4)
    assert len(_rows(engine, "BBQ/data/Gender_identity.jsonl")) == 4
    assert store_status(engine).quarantined == 4
    assert verify(engine).ok  # the earlier batch, whose lines moved, is sealed anew


def test_bad_implicit_bank_lines_are_quarantined(engine, tmp_path: Path) -> None:
    ingest_path(engine, FIX / "BBQ" / "data" / "Gender_identity.jsonl")
    good = (FIX / "ImplicitBBQ" / "data" / "Gender_identity.jsonl").read_text().splitlines()
    first = json.loads(good[0])
    folder = tmp_path / "ImplicitBBQ" / "data"
    folder.mkdir(parents=True)
    path = folder / "Gender_identity.jsonl"
    lines = [
        *good[:5],
        "not json at all",  # 6
        json.dumps({k: v for k, v in first.items() if k != "question"}),  # 7: no question
        json.dumps(first | {"context": "a\u0000b"}),  # 8: a NUL character
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    s = ingest_path(engine, path)
    assert (s.read, s.stored, s.duplicate, s.quarantined) == (8, 5, 0, 3)
    rows = _rows(engine, "ImplicitBBQ/data/Gender_identity.jsonl")
    assert [(r.line_no, r.field) for r in rows] == [(6, None), (7, "question"), (8, "context")]
    assert rows[0].raw == "not json at all"
    assert "field 'question' is missing" in rows[1].reason
    assert all((r.lines_read, r.stored, r.quarantined) == (8, 5, 3) for r in rows)
    assert store_status(engine).quarantined == 3
    assert verify(engine).ok


def test_a_bank_whose_every_line_is_bad_is_kept_in_quarantine(tmp_path: Path) -> None:
    """Nothing to store: no empty bank, the lines quarantined, and the CLI exits 3."""
    folder = tmp_path / "data"
    folder.mkdir()
    path = folder / "Gender_identity.jsonl"
    implicit = FIX / "ImplicitBBQ" / "data" / "Gender_identity.jsonl"
    first = json.loads(implicit.read_text().splitlines()[0])
    path.write_text(json.dumps(first) + "\n" + json.dumps(first | {"example_id": 9}) + "\n")
    db = tmp_path / "store.db"
    res = CliRunner().invoke(app, ["--db", str(db), "ingest", str(path)], env={"COLUMNS": "250"})
    assert res.exit_code == 3, res.output
    assert "read 2 = stored 0 + duplicate 0 + quarantined 2" in res.output
    assert "nothing stored, all 2 records were quarantined" in res.output
    res = CliRunner().invoke(app, ["--db", str(db), "status"], env={"COLUMNS": "250"})
    assert "quarantined lines: 2" in res.output
