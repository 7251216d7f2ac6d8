"""MAC-Fairness transcripts of the older protocol 2025-11-27, in both readers.

Fixtures (generated, see tests/data/mac/README.md and tests/data/conv/README.md):
``tests/data/mac/v2025-11-27/`` and ``tests/data/conv/ws/v2025-11-27/`` hold 2025-11-27
twins of 2025-12-10 transcripts (same transcript id, snapshot, question and opinions;
the question id inside ``question``, the run's configuration copied in) and the cases
that differ by version. A twin must be stored exactly as its 2025-12-10 original, apart
from the raw text kept (the transcript as written).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import DATA, pg_database
from sqlalchemy import select
from sqlalchemy.engine import Engine
from sqlmodel import SQLModel

from cuegap.ingest import detect_reader, ingest_path
from cuegap.schema import make_engine, upgrade

MAC = DATA / "mac"
PV_NAME = "20260115T1200Z_qwen3-4b_letter_paren_answer_first_1agent_as-ai_v2025-12-10"
PV_NEW = MAC / "experiment" / "diffAware_d1_sampled" / PV_NAME / "transcript"
PV_OLD = MAC / "v2025-11-27" / "experiment" / "diffAware_d1_sampled" / PV_NAME / "transcript"
PV_BAD = MAC / "v2025-11-27" / "experiment" / "diffAware_d1_sampled" / "bad" / "transcript"
WS = DATA / "conv" / "ws"
CONV_NAME = "20260115T1200Z_hand-system_2agent_var-and-vanilla_v2025-12-10"
CONV_NEW = WS / "experiment" / "bbq_age_sampled" / CONV_NAME
CONV_OLD = WS / "v2025-11-27" / "experiment" / "bbq_age_sampled" / CONV_NAME
CONV_BAD = WS / "v2025-11-27" / "experiment" / "bbq_age_sampled" / "bad"
#: Per-input columns: the text kept as written, where it came from, when it was read.
PER_INPUT = {"raw", "source_path", "source_sha256", "created_at", "resolved_at"}


@pytest.fixture
def two_stores(db_url: str, tmp_path: Path) -> Iterator[tuple[Engine, Engine]]:
    """Two fresh stores on the same backend."""

    def store(url: str) -> Engine:
        eng = make_engine(url)
        upgrade(eng)
        return eng

    if db_url.startswith("sqlite"):
        a, b = store(db_url), store(f"sqlite:///{tmp_path / 'other.db'}")
        yield a, b
    else:
        with pg_database() as other:
            a, b = store(db_url), store(other)
            yield a, b
    a.dispose()
    b.dispose()


def _rows(engine: Engine, table: str) -> list[tuple]:
    """Every row of a table in id order, without its per-input columns."""
    t = SQLModel.metadata.tables[table]
    cols = [c for c in t.columns if c.name not in PER_INPUT]
    with engine.connect() as conn:
        return [tuple(r) for r in conn.execute(select(*cols).order_by(*t.primary_key))]


def _same_store(a: Engine, b: Engine, tables: list[str]) -> None:
    for table in tables:
        got_a, got_b = _rows(a, table), _rows(b, table)
        assert got_a, table  # a comparison of empty tables would prove nothing
        assert got_a == got_b, table


def test_twins_are_the_same_conversations_in_the_older_layout() -> None:
    """The fixtures are what the test says: same ids, different protocol and bytes."""
    import json

    for new_dir, old_dir in ((PV_NEW, PV_OLD), (CONV_NEW / "transcript", CONV_OLD / "transcript")):
        names = sorted(p.name for p in old_dir.glob("*.json"))
        assert names and names == sorted(p.name for p in new_dir.glob("*.json"))
        for name in names:
            new, old = (
                json.loads((new_dir / name).read_text()),
                json.loads((old_dir / name).read_text()),
            )
            assert (new["protocol_version"], old["protocol_version"]) == (
                "2025-12-10",
                "2025-11-27",
            )
            assert new["transcript_id"] == old["transcript_id"]
            assert old["question"]["question_id"] == new["experiment_metadata"]["question_id"]
            assert "question_id" not in old["experiment_metadata"]
            assert old["conversation_rounds"] == new["conversation_rounds"]


def test_detected_as_the_same_formats() -> None:
    assert detect_reader(next(PV_OLD.glob("*.json"))).name == "mac-fairness-transcript"
    assert detect_reader(CONV_OLD / "transcript" / "both_swap.json").name == (
        "mac-fairness-conversation"
    )
    assert detect_reader(WS / "v2025-11-27").name == "mac-fairness-conversation"


def test_conversation_twins_store_identical_rows(two_stores) -> None:
    new, old = two_stores
    s_new, s_old = ingest_path(new, CONV_NEW), ingest_path(old, CONV_OLD)
    for s in (s_new, s_old):  # 9 cases + notes.json: 5 stored, 5 quarantined
        assert (s.read, s.stored, s.duplicate, s.quarantined) == (10, 5, 0, 5)
    assert s_new.problems == s_old.problems
    tables = ["system", "conv_config", "conv_agent", "conversation", "conv_opinion",
              "conv_tally", "quarantine"]  # fmt: skip
    _same_store(new, old, tables)
    # the raw text kept is each transcript as written, not a translation of it
    for eng, folder in ((new, CONV_NEW), (old, CONV_OLD)):
        with eng.connect() as conn:
            kept = conn.execute(
                select(SQLModel.metadata.tables["conversation"].c["source_file", "raw"])
            )
            for source, raw in kept:
                assert raw == (folder / source).read_text()


def test_a_conversation_twin_after_its_original_is_a_duplicate(engine) -> None:
    ingest_path(engine, CONV_NEW)
    s = ingest_path(engine, CONV_OLD)
    assert (s.read, s.stored, s.duplicate, s.quarantined) == (10, 0, 5, 5)


CONV_BAD_CASES = {
    "agents_mismatch.json": "agent_definitions disagrees with the config snapshot's",
    "early_layout.json": "has MAC-Fairness's early layout (an 'experiment' section, no "
    "agent_definitions or model_definitions)",
    "no_question.json": "field 'question.question_id' is missing (protocol 2025-11-27 keeps "
    "the question id there)",
    "two_question_ids.json": "question.question_id 'bbq_age_2' disagrees with "
    "experiment_metadata.question_id 'bbq_age_7'",
    "unknown_protocol.json": "protocol_version '2025-10-01'; readable: 2025-11-27, 2025-12-10",
}


def test_conversation_version_cases_are_quarantined_with_their_reason(engine) -> None:
    s = ingest_path(engine, CONV_BAD)
    assert (s.read, s.stored, s.duplicate, s.quarantined) == (5, 0, 0, 5)
    reasons = [why for _line, why in s.problems]
    assert len(reasons) == 5
    for name, why in CONV_BAD_CASES.items():
        assert any(r.startswith(f"transcript/{name}: ") and why in r for r in reasons), name
    with engine.connect() as conn:
        fields = dict(
            conn.execute(select(SQLModel.metadata.tables["quarantine"].c["line_no", "field"])).all()
        )
    assert sorted(f for f in fields.values() if f) == [
        "agent_definitions",
        "experiment_metadata.config_snapshot_path",
        "protocol_version",
        "question.question_id",
        "question.question_id",
    ]


@pytest.fixture
def da_stores(two_stores) -> tuple[Engine, Engine]:
    for eng in two_stores:
        ingest_path(eng, DATA / "pv" / "da_bank.jsonl")
    return two_stores


@pytest.mark.parametrize("name", sorted(p.name for p in PV_OLD.glob("*.json")))
def test_single_agent_twins_store_identical_rows(da_stores, name: str) -> None:
    new, old = da_stores
    s_new, s_old = ingest_path(new, PV_NEW / name), ingest_path(old, PV_OLD / name)
    for s in (s_new, s_old):
        assert (s.read, s.stored, s.duplicate, s.quarantined) == (1, 1, 0, 0), s.problems
    _same_store(new, old, ["system", "qa_response", "qa_response_factor", "qa_tally"])
    again = ingest_path(new, PV_OLD / name)  # the twin after its original: a duplicate
    assert (again.read, again.stored, again.duplicate, again.quarantined) == (1, 0, 1, 0)


PV_BAD_CASES = {
    "no_question": ("question.question_id", "field 'question.question_id' is missing "
                    "(protocol 2025-11-27 keeps the question id there)"),
    "two_question_ids": ("question.question_id", "question.question_id 'diffAware_d1_1' "
                         "disagrees with experiment_metadata.question_id 'diffAware_d1_2'"),
    "rounds_mismatch": ("conversation_config",
                        "conversation_config disagrees with the config snapshot's"),
    "no_prompt_format": ("experiment_metadata.config_snapshot_path",
                         "prompt_template_config.for_participant.choice_display_format is "
                         "missing, so its prompt-variance factor is unknown; protocol "
                         "2025-11-27 transcripts record no prompt format either"),
    "early_layout": ("experiment_metadata.config_snapshot_path",
                     "has MAC-Fairness's early layout"),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(PV_BAD_CASES))
def test_single_agent_version_cases_are_quarantined_with_their_reason(engine, name) -> None:
    ingest_path(engine, DATA / "pv" / "da_bank.jsonl")
    path = PV_BAD / f"{name}.json"
    s = ingest_path(engine, path)
    assert (s.read, s.stored, s.duplicate, s.quarantined) == (1, 0, 0, 1)
    field, why = PV_BAD_CASES[name]
    assert len(s.problems) == 1 and why in s.problems[0][1]
    q = SQLModel.metadata.tables["quarantine"]
    with engine.connect() as conn:
        got = conn.execute(
            select(q.c.source_path, q.c.field).where(q.c.batch_id == s.batch_id)
        ).one()
    assert got == (str(path.resolve()), field)
