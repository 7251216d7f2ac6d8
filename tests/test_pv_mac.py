"""Single-agent MAC-Fairness transcripts (prompt-variance design): read, joined to their
config snapshots for the factors, stored or quarantined with a reason.

Fixtures: tests/data/mac/, written by tests/data/mac/make_transcripts.py (our generator,
from the public schema; no real transcripts exist); the questions are those of
tests/data/pv/da_bank.jsonl. Expected counts are worked out by hand from the generator's
ANSWERS table (comments below).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import DATA

from cuegap.ingest import detect_reader, ingest_path
from cuegap.ingest.mac_transcript import read, replicate_of
from cuegap.schema import pv_counts

MAC = DATA / "mac"
EXP = MAC / "experiment" / "diffAware_d1_sampled"
GOOD = sorted(p for p in EXP.rglob("*.json") if p.parent.parent.name != "bad")
BAD = EXP / "bad" / "transcript"
R0, R1 = 3_177_360, 3_177_420  # 2026-01-15 12:00 and 13:00 UTC, minutes since 2020-01-01


def test_fixture_layout() -> None:
    assert len(GOOD) == 16  # 4 prompt combinations x 2 replicates x 2 questions


def test_detects_transcripts_and_their_bulk_form() -> None:
    assert detect_reader(GOOD[0]).name == "mac-fairness-transcript"
    assert detect_reader(MAC / "bulk" / "transcripts.jsonl").name == "mac-fairness-transcript"


def test_replicate_from_the_experiment_names_timestamp() -> None:
    """2020-01-01 to 2026-01-15 is 6 x 365 + 2 leap days + 14 = 2206 days; x 1440 + 12 h."""
    assert replicate_of("20260115T1200Z_qwen3-4b_1agent_as-ai_v2025-12-10") == 2206 * 1440 + 720
    assert replicate_of("20260115T1200Z_x") == R0
    assert replicate_of("debug_1agent_as-ai") == 0


def test_record_fields_from_transcript_and_snapshot() -> None:
    recs = list(read(GOOD[0]).records)
    assert len(recs) == 1
    rec = recs[0]
    assert rec.system == "Qwen/Qwen3-4B"
    assert set(rec.factors) == {"choice_format", "field_order"}
    assert rec.question_id.startswith("diffAware_d1_")
    assert rec.repeat in (R0, R1) and rec.predicted_label in ("A", "B", "C")
    assert rec.sample_id == GOOD[0].stem


@pytest.fixture
def da_store(engine):
    ingest_path(engine, DATA / "pv" / "da_bank.jsonl")
    return engine


def test_good_transcripts_give_the_run_counts(da_store) -> None:
    for path in GOOD:
        s = ingest_path(da_store, path)
        assert (s.stored, s.quarantined) == (1, 0), s.problems
    got = pv_counts(da_store, factors=["choice_format", "field_order"])
    assert set(got["category"]) == {"d1"} and set(got["replicate"]) == {R0, R1}
    cols = ["neq_correct", "neq_wrong", "neq_equal", "eq_group", "eq_equal"]
    table = {
        (r.choice_format, r.field_order, r.replicate): tuple(int(getattr(r, c)) for c in cols)
        for r in got.itertuples()
    }
    # d1_1 is a different question with gold A, d1_2 an equal one (gold C).
    assert table == {
        ("letter_paren", "answer_first", R0): (1, 0, 0, 0, 1),  # A correct; C equal
        ("letter_paren", "answer_first", R1): (0, 1, 0, 0, 1),  # B the wrong group; C
        ("letter_paren", "rationale_first", R0): (1, 0, 0, 1, 0),  # A; B a group
        ("letter_paren", "rationale_first", R1): (1, 0, 0, 1, 0),
        ("roman_dot", "answer_first", R0): (0, 0, 1, 0, 1),  # C equal on both
        ("roman_dot", "answer_first", R1): (0, 0, 1, 0, 1),
        ("roman_dot", "rationale_first", R0): (0, 0, 1, 1, 0),  # C; B a group
        ("roman_dot", "rationale_first", R1): (0, 0, 1, 1, 0),
    }
    assert got[["amb_biased", "dis_anti"]].isna().all().all()
    again = ingest_path(da_store, GOOD[0])
    assert (again.stored, again.duplicate) == (0, 1)


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("failed", "conversation status 'failed' with 0 messages in 0 rounds"),
        ("two_agents", "2 agents; the 1agent_as-ai configuration has 1"),
        ("no_snapshot", "not found in any folder above the transcript"),
        ("unknown_protocol", "protocol_version '2025-10-01'; readable: 2025-11-27, 2025-12-10"),
        ("config_mismatch", "prompt_template_config disagrees with the config snapshot"),
        ("unknown_question", "no item for question_id 'diffAware_d9_9'"),
    ],
)
def test_bad_transcripts_are_quarantined_with_their_reason(da_store, name, reason) -> None:
    s = ingest_path(da_store, BAD / f"{name}.json")
    assert (s.read, s.stored, s.quarantined) == (1, 0, 1)
    assert len(s.problems) == 1 and s.problems[0][0] == 1
    assert reason in s.problems[0][1]


def test_unmatched_opinion_is_stored_unparsable(da_store) -> None:
    s = ingest_path(da_store, BAD / "unmatched.json")
    assert (s.stored, s.quarantined) == (1, 0)
    got = pv_counts(da_store)  # one factor set: no factor varies, so none is a key
    assert got[["eq_unparsable", "eq_group", "eq_equal"]].to_numpy().tolist() == [[1, 0, 0]]


def test_bulk_jsonl_stores_each_line_or_quarantines_it(da_store) -> None:
    s = ingest_path(da_store, MAC / "bulk" / "transcripts.jsonl")
    # line 1: d1_1 answered A; line 2: n2_7 (a different question, gold B) answered B;
    # line 3 is cut short.
    assert (s.read, s.stored, s.quarantined) == (3, 2, 1)
    assert [line for line, _ in s.problems] == [3]
    got = pv_counts(da_store).set_index("category")
    assert got.loc["n2", "neq_correct"] == 1 and got.loc["d1", "neq_correct"] == 1


def test_not_json_is_one_quarantined_record(tmp_path: Path, da_store) -> None:
    path = tmp_path / "broken.json"
    path.write_text('{"transcript_id": "x", "conversation_rounds": [')
    s = ingest_path(da_store, path, format="mac-fairness-transcript")
    assert s.read == 1 and s.quarantined == 1 and s.stored == 0
