"""Published BBQ-family repositories, ingested as cloned (issue 27).

The fixtures in ``tests/fixtures/bbq_family/`` follow the public layouts, with sentences
written for these tests:

* ``BBQ/``: nyu-mll/BBQ's ``data/Gender_identity.jsonl`` (example_id, question_index,
  question_polarity, context_condition, category, answer_info, additional_metadata,
  context, question, ans0..ans2, label), its ``results/UnifiedQA/`` (items with a model's
  predictions, not a bank) and ``analysis_scripts/additional_metadata.csv``. Examples 4
  and 5 name a girl and a woman: both people share the stereotyped group, so the item has
  no target.
* ``ImplicitBBQ/``: ``data/Gender_identity.jsonl`` (context, question, answers, label,
  example_id, attribute_present_implicitly) and result folders ``bbq_evaluation/`` and
  ``bbq_implicit_evaluation/`` of ``Gender_identity_gpt4o_results.jsonl`` (example_id,
  context, question, ans0..ans2, label, model_output, predicted_index, correct; no system,
  no category). Line 6 of the data file gives label 2 where BBQ's is 0, line 7 an example
  BBQ lacks. The implicit result folder also holds two explicit answers (lines 6 and 7:
  BBQ's contexts), a line whose context no item has (8) and an answer to the implicit
  example 5, whose item was quarantined (9).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sqlalchemy import text
from typer.testing import CliRunner

from cuegap.cli import app
from cuegap.ingest import expand_path, ingest_path
from cuegap.ingest._bbq_names import category_from_name
from cuegap.ingest._plan import ingest_order

FIX = Path(__file__).parent / "fixtures" / "bbq_family"
BBQ, IMPLICIT = FIX / "BBQ", FIX / "ImplicitBBQ"
RESULTS = "Gender_identity_gpt4o_results.jsonl"


def _ingest_all(engine, *paths: Path, system: str | None = "gpt-4o") -> dict[str, object]:
    files = [f for p in paths for f in expand_path(p)[0]]
    return {
        str(f.relative_to(FIX)): ingest_path(engine, f, system=system) for f in ingest_order(files)
    }


def _quarantine(engine) -> list[tuple[str, int, str]]:
    with engine.connect() as conn:
        rows = conn.execute(
            text(
                "SELECT source_path, line_no, field FROM quarantine WHERE resolved_at IS NULL "
                "ORDER BY source_path, line_no"
            )
        ).all()
    return [(Path(p).parent.name, n, f) for p, n, f in rows]


@pytest.mark.parametrize(
    ("name", "category"),
    [
        ("Gender_identity.jsonl", "Gender_identity"),
        ("Race_ethnicity.jsonl", "Race_ethnicity"),
        ("SES.jsonl", "SES"),
        ("Race_x_SES_gpt4o_results.jsonl", "Race_x_SES"),
        ("race_x_gender.jsonl", "Race_x_gender"),
        ("Religion_gpt4o_results.jsonl", "Religion"),
        ("SESAME.jsonl", None),
        ("answers.jsonl", None),
    ],
)
def test_category_from_bbq_file_names(name: str, category: str | None) -> None:
    assert category_from_name(name) == category


def test_repository_folders_expand_to_banks_then_results() -> None:
    files, skipped = expand_path(BBQ)
    assert [f.relative_to(BBQ).as_posix() for f in files] == ["data/Gender_identity.jsonl"]
    # BBQ's own UnifiedQA results are its items with predictions: not a second bank.
    assert [f.relative_to(BBQ).as_posix() for f in skipped] == [
        "results/UnifiedQA/Gender_identity.jsonl"
    ]
    files, skipped = expand_path(IMPLICIT)
    assert [f.relative_to(IMPLICIT).as_posix() for f in files] == [
        "data/Gender_identity.jsonl",
        f"bbq_evaluation/{RESULTS}",
        f"bbq_implicit_evaluation/{RESULTS}",
    ]
    assert skipped == []
    # Banks of every path first, BBQ's before the ImplicitBBQ bank that joins to it.
    order = ingest_order(expand_path(IMPLICIT)[0] + expand_path(BBQ)[0])
    assert [f.relative_to(FIX).as_posix() for f in order] == [
        "BBQ/data/Gender_identity.jsonl",
        "ImplicitBBQ/data/Gender_identity.jsonl",
        f"ImplicitBBQ/bbq_evaluation/{RESULTS}",
        f"ImplicitBBQ/bbq_implicit_evaluation/{RESULTS}",
    ]


def test_both_repositories_store_both_cues_and_every_answer(engine) -> None:
    s = _ingest_all(engine, IMPLICIT, BBQ)
    counts = {k: (v.format, v.read, v.stored, v.quarantined) for k, v in s.items()}
    assert counts == {
        "BBQ/data/Gender_identity.jsonl": ("bbq", 6, 6, 0),
        "ImplicitBBQ/data/Gender_identity.jsonl": ("implicit-bbq", 7, 5, 2),
        f"ImplicitBBQ/bbq_evaluation/{RESULTS}": ("bbq-results", 4, 4, 0),
        f"ImplicitBBQ/bbq_implicit_evaluation/{RESULTS}": ("bbq-results", 9, 7, 2),
    }
    assert all(v.balanced for v in s.values())
    implicit = s["ImplicitBBQ/data/Gender_identity.jsonl"]
    assert [line for line, _ in implicit.problems] == [6, 7]
    assert implicit.problems[0][1].startswith("field 'label': label 2 disagrees")
    assert implicit.problems[1][1].startswith("field 'example_id': no BBQ item")
    # The bank's two rejected lines are quarantined in the store too, not only counted.
    assert _quarantine(engine) == [
        ("bbq_implicit_evaluation", 8, "context"),
        ("bbq_implicit_evaluation", 9, "context"),
        ("data", 6, "label"),
        ("data", 7, "example_id"),
    ]
    with engine.connect() as conn:
        by_cue = dict(
            conn.execute(
                text(
                    "SELECT i.cue, COUNT(*) FROM qa_response r JOIN qa_item i "
                    "ON i.id = r.item_id GROUP BY i.cue"
                )
            ).all()
        )
        # The explicit answers filed under bbq_implicit_evaluation/ (its lines 6 and 7)
        # are explicit: their contexts are BBQ's.
        misplaced = conn.execute(
            text(
                "SELECT i.cue FROM qa_response r JOIN qa_item i ON i.id = r.item_id "
                "JOIN ingest_batch b ON b.id = r.batch_id WHERE r.source_line IN (6, 7) "
                "AND b.source_path LIKE '%bbq_implicit_evaluation%'"
            )
        ).all()
        systems = conn.execute(text("SELECT name FROM system")).scalars().all()
        roles = conn.execute(
            text(
                "SELECT i.cue, o.option_index, o.role, o.text FROM qa_option o "
                "JOIN qa_item i ON i.id = o.item_id WHERE i.item_key = 'gender_identity-1' "
                "ORDER BY i.cue, o.option_index"
            )
        ).all()
    assert by_cue == {"explicit": 6, "implicit": 5}
    assert [c for (c,) in misplaced] == ["explicit", "explicit"]
    assert systems == ["gpt-4o"]
    # The implicit item takes BBQ's roles by position (stereotyped group F: the woman is
    # the target) and keeps its own texts.
    assert [(c, i, r) for c, i, r, _ in roles] == [
        ("explicit", 0, "target"), ("explicit", 1, "unknown"), ("explicit", 2, "non_target"),
        ("implicit", 0, "target"), ("implicit", 1, "unknown"), ("implicit", 2, "non_target"),
    ]  # fmt: skip
    assert [t for c, _, _, t in roles if c == "implicit"] == ["Person A", "Can't tell", "Person B"]

    again = _ingest_all(engine, BBQ, IMPLICIT)  # idempotent: nothing new
    assert sum(v.stored for v in again.values()) == 0
    assert all(v.balanced for v in again.values())


def test_category_and_system_from_header_line_or_option(engine, tmp_path: Path) -> None:
    _ingest_all(engine, BBQ)
    item = json.loads((BBQ / "data" / "Gender_identity.jsonl").read_text().splitlines()[0])
    line = {"example_id": 0, "context": item["context"], "predicted_index": 1}
    header = {"format": "bbq-results", "system": "from-header", "category": "Gender_identity"}
    path = tmp_path / "answers.jsonl"  # a name that gives no category
    path.write_text(
        json.dumps(header)
        + "\n"
        + json.dumps(line)
        + "\n"
        + json.dumps({**line, "system": "from-line", "category": "Age"})
        + "\n"
    )
    s = ingest_path(engine, path, system="from-option")
    assert (s.read, s.stored, s.quarantined) == (2, 1, 1)  # Age has no example 0 here
    assert "category 'Age'" in s.problems[0][1]
    with engine.connect() as conn:
        names = conn.execute(text("SELECT name FROM system")).scalars().all()
    assert names == ["from-header"]  # the header's system wins over --system

    bare = tmp_path / "bare.jsonl"
    bare.write_text(json.dumps(line) + "\n")
    s = ingest_path(engine, bare)
    assert (s.read, s.quarantined) == (1, 1)
    assert s.problems[0][1].startswith("no system")
    with engine.connect() as conn:
        field = conn.execute(
            text("SELECT field FROM quarantine WHERE source_path LIKE '%bare.jsonl'")
        ).scalar_one()
    assert field == "system"
    s = ingest_path(engine, bare, system="from-option")
    assert (s.read, s.quarantined) == (1, 1)  # now the category is what is missing
    assert "'example_id' needs its 'category'" in s.problems[0][1]


def test_cli_ingests_both_repositories_with_system(tmp_path: Path) -> None:
    db = tmp_path / "store.db"
    runner = CliRunner()
    args = ["--db", str(db), "ingest", str(IMPLICIT), str(BBQ), "--system", "gpt-4o"]
    res = runner.invoke(app, args, env={"COLUMNS": "250"})
    assert res.exit_code == 0, res.output
    assert "read 7 = stored 5 + duplicate 0 + quarantined 2" in res.output
    assert "read 9 = stored 7 + duplicate 0 + quarantined 2" in res.output
    assert "Gender_identity.jsonl:6: field 'label'" in res.output
    generic = tmp_path / "g.jsonl"
    generic.write_text('{"format": "cuegap-responses", "version": 1}\n')
    fresh = tmp_path / "fresh.db"
    res = runner.invoke(app, ["--db", str(fresh), "ingest", str(generic), "--system", "x"])
    assert res.exit_code != 0
    assert "--system applies to formats" in res.output
    assert not fresh.exists()  # refused before the store was created
