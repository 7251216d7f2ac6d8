"""Two-agent MAC-Fairness transcripts: reader, quarantine, idempotence, conv_counts.

Fixtures: tests/data/conv/ws (written by make_conversations.py; one transcript per edge).
Expected counts are worked out by hand from the opinions in make_conversations.CASES with
seed 003's Eqs. 1-2 (transitions r-1 -> r with prior disagreement; a move to a third
option counts in the denominator only):

* third_option  (A,B)(C,A)(C,C): identity 2 disagreements, 0 shifts; baseline 2, 2.
* no_disagreement (A,A)(A,A)(B,A): nothing counts.
* identity_shifts (A,B)(B,B)(B,B): identity 1, 1; baseline 1, 0.
  -> cell (black, teacher, human, revealed): 3, 1, 3, 2 over 3 conversations.
* both_swap (B,A)(A,B)(A,B): identity 2, 1; baseline 2, 1 -> cell (none, none, ai, anonymous).
* one_round (A,B): no transition -> cell (white, none, ai, anonymous): 0, 0, 0, 0, 1 conversation.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from sqlalchemy import func, select

from cuegap.compliance import verify
from cuegap.designs.conversation.stats import conv_transition_counts
from cuegap.ingest import detect_reader, ingest_path
from cuegap.schema import (
    ConvConfig,
    Conversation,
    ConvOpinion,
    IngestBatch,
    Quarantine,
    conv_counts,
)

WS = Path(__file__).parent / "data" / "conv" / "ws"
T = WS / "experiment" / "bbq_age_sampled"
T = T / "20260115T1200Z_hand-system_2agent_var-and-vanilla_v2025-12-10" / "transcript"
KEY = ["demographics", "persona", "instantiation", "reveal"]
EXPECTED = {  # (demographics, persona, instantiation, reveal) -> counts, conversations
    ("black", "teacher", "human", "revealed"): (3, 1, 3, 2, 3),
    ("none", "none", "ai", "anonymous"): (2, 1, 2, 1, 1),
    ("white", "none", "ai", "anonymous"): (0, 0, 0, 0, 1),
}
COLS = ["iden_disagree", "iden_shift", "base_disagree", "base_shift", "conversations"]


def test_detects_the_folder_and_two_agent_files_not_single_agent_ones() -> None:
    assert detect_reader(WS).name == "mac-fairness-conversation"
    # a notes.json met before the first transcript does not hide it
    assert detect_reader(WS / "experiment").name == "mac-fairness-conversation"
    assert detect_reader(T / "third_option.json").name == "mac-fairness-conversation"
    assert detect_reader(WS / "bulk" / "again.jsonl").name == "mac-fairness-conversation"
    mac = Path(__file__).parent / "data" / "mac" / "experiment"
    first = next(mac.rglob("transcript/*.json"))
    assert detect_reader(first).name == "mac-fairness-transcript"
    from cuegap.ingest import mac_conversation

    assert not mac_conversation.detect(mac)  # a folder of single-agent transcripts


def test_folder_ingest_counts_every_transcript_and_the_hand_counted_shifts(engine) -> None:
    s = ingest_path(engine, WS)
    # 9 cases + notes.json + the bulk copy: 5 stored, the copy a duplicate, 5 quarantined;
    # then v2025-11-27/: the same 10 again in protocol 2025-11-27 (5 duplicates, 5
    # quarantined again) and its 5 version-specific bad cases (tests/test_mac_protocols.py)
    assert (s.read, s.stored, s.duplicate, s.quarantined) == (26, 5, 6, 15)
    got = conv_counts(engine)
    assert list(got.columns) == ["system", "benchmark", "category", *KEY, *COLS]
    assert set(got["system"]) == {"sim/hand-system"} and set(got["category"]) == {"age"}
    assert set(got["benchmark"]) == {"BBQ"}
    table = {tuple(r[KEY]): tuple(int(r[c]) for c in COLS) for _, r in got.iterrows()}
    assert table == EXPECTED
    assert list(got[KEY].itertuples(index=False, name=None)) == sorted(EXPECTED)


def test_quarantine_reasons_and_counts_add_up(engine) -> None:
    s = ingest_path(engine, WS)
    reasons = dict(s.problems)
    text = " | ".join(reasons.values())
    for why in (
        "failed.json: conversation status 'failed', not 'succeeded'",
        "missing_round.json: missing rounds: 2 of the configuration's 3",
        "no_snapshot.json: config snapshot",
        "single_agent.json: config snapshot",
        "notes.json: not a MAC-Fairness transcript",
    ):
        assert why in text
    assert "a single-agent transcript; ingest it with --format mac-fairness-transcript" in text
    with engine.connect() as conn:
        batch = conn.execute(select(IngestBatch).where(IngestBatch.id == s.batch_id)).one()
        q = conn.execute(select(func.count()).select_from(Quarantine)).scalar()
        n_conv = conn.execute(select(func.count()).select_from(Conversation)).scalar()
        n_op = conn.execute(select(func.count()).select_from(ConvOpinion)).scalar()
        n_cfg = conn.execute(select(func.count()).select_from(ConvConfig)).scalar()
    assert batch.lines_read == batch.stored + batch.duplicate + batch.quarantined == 26
    assert q == 15 and n_conv == 5 and n_cfg == 3
    assert n_op == 2 * (3 + 3 + 3 + 3 + 1)  # two agents x rounds of each stored transcript


def test_reingest_is_idempotent_and_the_ledger_verifies(engine) -> None:
    ingest_path(engine, WS)
    before = conv_counts(engine)
    again = ingest_path(engine, WS)
    assert (again.read, again.stored, again.duplicate, again.quarantined) == (26, 0, 11, 15)
    one = ingest_path(engine, T / "third_option.json")  # the same transcript, alone
    assert (one.stored, one.duplicate) == (0, 1)
    pd.testing.assert_frame_equal(conv_counts(engine), before)
    with engine.connect() as conn:
        assert conn.execute(select(func.count()).select_from(Quarantine)).scalar() == 15
    assert verify(engine).ok


def test_conflicting_transcript_id_is_quarantined(engine, tmp_path: Path) -> None:
    ingest_path(engine, WS)
    doc = (T / "identity_shifts.json").read_text().replace('"opinion": "B"', '"opinion": "C"')
    ws = tmp_path / "ws"
    (ws / "t").mkdir(parents=True)
    (ws / "t" / "x.json").write_text(doc)
    snaps = WS / "bookkeeping"
    import shutil

    shutil.copytree(snaps, ws / "bookkeeping")
    s = ingest_path(engine, ws)
    assert (s.read, s.stored, s.quarantined) == (1, 0, 1)
    assert "conflicts with the stored transcript" in s.problems[0][1]


def _opinions(engine) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The stored opinions and configurations, read back as conv_transition_counts wants."""
    with engine.connect() as conn:
        ops = pd.read_sql(
            "SELECT conversation_id AS conversation, round, role, opinion FROM conv_opinion", conn
        )
        convs = pd.read_sql(
            "SELECT c.id AS conversation, s.name AS system, g.benchmark, g.category, "
            "g.demographics, g.persona, g.instantiation, g.reveal, c.question_id AS question "
            "FROM conversation c JOIN conv_config g ON g.id = c.config_id "
            "JOIN system s ON s.id = g.system_id",
            conn,
        )
    return ops, convs


@pytest.mark.parametrize("unit", [None, "question"])
def test_sql_counts_agree_with_the_models_reference(engine, unit) -> None:
    ingest_path(engine, WS)
    ops, convs = _opinions(engine)
    ref = conv_transition_counts(ops, convs, unit=unit)
    got = conv_counts(engine, unit=unit)
    pd.testing.assert_frame_equal(got, ref[got.columns].astype(got.dtypes.to_dict()))


def test_simulated_workspace_round_trips_exactly(engine, tmp_path: Path) -> None:
    """Planted data: counts.csv is conv_transition_counts of the simulator's own opinions;
    ingest + conv_counts must give it back, failed transcripts quarantined."""
    from cuegap.designs.conversation._simulate import simulate_conv

    sim = simulate_conv(tmp_path / "sim", systems=1, questions=1, fail_rate=0.05, seed=3)
    s = ingest_path(engine, tmp_path / "sim")
    assert s.read == sim.n_transcripts and s.quarantined == sim.n_failed > 0
    assert s.stored == sim.n_transcripts - sim.n_failed
    want = pd.read_csv(sim.counts_path, keep_default_na=False)
    got = conv_counts(engine)
    pd.testing.assert_frame_equal(got, want[got.columns].astype(got.dtypes.to_dict()))
    ops, convs = _opinions(engine)
    ref = conv_transition_counts(ops, convs, unit="question")
    got_q = conv_counts(engine, unit="question")
    pd.testing.assert_frame_equal(got_q, ref[got_q.columns].astype(got_q.dtypes.to_dict()))


def test_bad_unit_is_refused(engine) -> None:
    with pytest.raises(ValueError, match="unit should be one of question, persona, category"):
        conv_counts(engine, unit="round")
    assert conv_counts(engine).empty


def test_tally_matches_the_opinions_and_verify_names_an_edit(engine) -> None:
    """Without a unit conv_counts reads the tally the loader keeps; summed over questions
    the per-question self-join must give the same cells, and an edited tally is named."""
    from sqlalchemy import update

    from cuegap.schema import ConvTally, compact_conv_tally, conv_tally_mismatches

    ingest_path(engine, WS)
    ingest_path(engine, T / "both_swap.json")  # a second pass: a duplicate, no new row
    per_q = conv_counts(engine, unit="question").drop(columns="question")
    keys = [c for c in per_q.columns if c not in COLS]
    summed = per_q.groupby(keys, as_index=False)[COLS].sum()
    pd.testing.assert_frame_equal(conv_counts(engine), summed, check_dtype=False)
    with engine.connect() as conn:
        assert compact_conv_tally(conn, min_rows=1)  # merged: one row per configuration
        assert conn.execute(select(func.count()).select_from(ConvTally)).scalar() == 3
        assert conv_tally_mismatches(conn) == 0
    pd.testing.assert_frame_equal(conv_counts(engine), summed, check_dtype=False)
    with engine.begin() as conn:
        conn.execute(update(ConvTally).values(iden_shift=ConvTally.iden_shift + 1))
    result = verify(engine)
    assert not result.ok
    assert any("conversation tally: 3 configuration(s)" in p for p in result.problems)


@pytest.mark.parametrize(
    ("edit", "reason"),
    [
        (lambda c: c["agent_definitions"][1].update(demographics="female"),
             "cannot tell the identity agent from the baseline"),
        (lambda c: c["agent_definitions"].append({"agent_id": "spkr_002"}),
         "the conversation design reads two-agent runs"),
        (lambda c: c["agent_definitions"][1].update(model="llm_1"), "different models"),
        (lambda c: c.pop("identity_reveal_config"), "identity_reveal_config needs"),
    ],
)  # fmt: skip
def test_snapshots_outside_the_design_are_refused(edit, reason) -> None:
    from cuegap.designs.conversation._simulate import snapshot
    from cuegap.ingest._conv_snapshot import conv_settings

    cell = {"demographics": "older", "persona": "farmer", "instantiation": "human",
            "reveal": "anonymous"}  # fmt: skip
    cfg = snapshot("sys", "exp", "discrimEval_explicit_sampled", "DiscrimEval", cell)
    ok = conv_settings(cfg, "x.yaml")
    assert not isinstance(ok, str)
    assert (ok.benchmark, ok.category, ok.demographics, ok.instantiation, ok.reveal) == (
        "DiscrimEval", "explicit", "older", "human", "anonymous",
    )  # fmt: skip
    edit(cfg)
    got = conv_settings(cfg, "x.yaml")
    assert isinstance(got, str) and reason in got


def test_editing_a_stored_opinion_is_caught_by_verify(engine) -> None:
    from sqlalchemy import update

    ingest_path(engine, WS)
    assert verify(engine).ok
    with engine.begin() as conn:
        first = conn.execute(select(func.min(ConvOpinion.id))).scalar()
        conn.execute(update(ConvOpinion).where(ConvOpinion.id == first).values(opinion="Z"))
    result = verify(engine)
    assert not result.ok
    assert any("ingest batch" in p for p in result.problems)


def test_simulate_conv_in_parts_writes_the_full_run(tmp_path: Path) -> None:
    """Writing the systems one at a time (the paper-scale benchmark) gives the same files
    and the same expected counts as one call."""
    from cuegap.designs.conversation._simulate import simulate_conv

    whole = simulate_conv(tmp_path / "whole", systems=2, questions=1, seed=4)
    parts = [
        simulate_conv(tmp_path / f"part{k}", systems=2, questions=1, seed=4, only_systems=[k])
        for k in (0, 1)
    ]
    assert sum(p.n_transcripts for p in parts) == whole.n_transcripts
    assert sum(p.n_failed for p in parts) == whole.n_failed

    def files(root: Path) -> dict[str, bytes]:
        return {
            f.relative_to(root).as_posix(): f.read_bytes()
            for f in root.rglob("*")
            if f.is_file() and f.suffix in (".json", ".yaml")
        }

    merged = {**files(parts[0].out_dir), **files(parts[1].out_dir)}
    assert len(merged) == len(files(parts[0].out_dir)) + len(files(parts[1].out_dir))
    assert merged == files(whole.out_dir)
    counts = pd.concat([pd.read_csv(p.counts_path) for p in parts], ignore_index=True)
    expect = pd.read_csv(whole.counts_path)
    pd.testing.assert_frame_equal(
        counts.sort_values(list(expect.columns), ignore_index=True),
        expect.sort_values(list(expect.columns), ignore_index=True),
    )
    with pytest.raises(ValueError, match="only_systems"):
        simulate_conv(tmp_path / "bad", systems=2, questions=1, only_systems=[2])


def test_an_unreadable_file_is_quarantined_not_fatal(engine, tmp_path: Path) -> None:
    """A dangling link (or a file that cannot be opened) among the transcripts is counted
    and quarantined with its name and reason; the walk goes on."""
    from cuegap.designs.conversation._simulate import simulate_conv

    sim = simulate_conv(tmp_path / "sim", systems=1, questions=1, fail_rate=0.0, seed=2)
    folder = next((tmp_path / "sim" / "experiment").glob("*/*/transcript"))
    (folder / "0-dangling.json").symlink_to(tmp_path / "nowhere.json")
    s = ingest_path(engine, tmp_path / "sim")
    assert s.read == sim.n_transcripts + 1 and s.stored == sim.n_transcripts
    assert s.quarantined == 1 and s.read == s.stored + s.duplicate + s.quarantined
    with engine.connect() as conn:
        (reason,) = conn.execute(select(Quarantine.reason)).scalars().all()
    assert reason.endswith("0-dangling.json: cannot be read: No such file or directory")


def test_key_lookup_does_not_scan_earlier_runs(tmp_path: Path) -> None:
    """With the statistics an 8M-transcript store had (``analysis_limit`` sampling puts a
    run at a thousand rows), SQLite planned a join of conversation and run through
    ``run_id`` for 900 keys: every earlier run's rows read per lookup. The lookup the
    loaders use now searches the key's unique index whatever the statistics."""
    from sqlalchemy.dialects.sqlite import dialect as sqlite_dialect

    from cuegap.ingest._sql import key_lookup
    from cuegap.schema import make_engine, upgrade

    url = f"sqlite:///{tmp_path / 'plan.db'}"
    engine = make_engine(url)
    upgrade(engine)
    stats = [  # sqlite_stat1 of the benchmark's store after its first system
        ("conversation", "ix_conversation_run_id", "1043072 1001"),
        ("conversation", "ix_conversation_config", "2608738 167 1"),
        ("conversation", "ix_conversation_batch", "1043072 1001"),
        ("conversation", "sqlite_autoindex_conversation_1", "466032 1"),
        ("run", "ix_run_source_sha256", "1 1"),
    ]
    with engine.begin() as conn:
        conn.exec_driver_sql("ANALYZE")
        conn.exec_driver_sql("DELETE FROM sqlite_stat1 WHERE tbl IN ('conversation', 'run')")
        conn.exec_driver_sql("INSERT INTO sqlite_stat1 VALUES (?, ?, ?)", stats)
    engine.dispose()
    engine = make_engine(url)  # statistics are read when the schema loads
    keys = [f"t{i}" for i in range(900)]
    marks = ", ".join("?" * len(keys))
    joined = (
        "SELECT c.id, r.source_path FROM conversation c JOIN run r ON r.id = c.run_id "
        f"WHERE c.transcript_id IN ({marks})"
    )
    stmt = key_lookup(Conversation.__table__, "transcript_id", ("id",), keys)
    sql = str(stmt.compile(dialect=sqlite_dialect(), compile_kwargs={"render_postcompile": True}))
    with engine.connect() as conn:
        slow = [r[3] for r in conn.exec_driver_sql(f"EXPLAIN QUERY PLAN {joined}", tuple(keys))]
        plan = [r[3] for r in conn.exec_driver_sql(f"EXPLAIN QUERY PLAN {sql}", tuple(keys))]
    engine.dispose()
    assert slow[0] == "SCAN r", slow  # the statistics reproduce the slow plan (r: run)
    assert plan == [
        "SEARCH conversation USING INDEX sqlite_autoindex_conversation_1 (transcript_id=?)"
    ]
