"""Write the two-agent MAC-Fairness fixtures of tests/test_conv_ingest.py (run from anywhere).

Our own generator: the transcripts and config snapshots are built by
:func:`cuegap.designs.conversation._simulate.transcript` and
:func:`~cuegap.designs.conversation._simulate.snapshot`, which
follow the public schema (stair-lab/mac-fairness ``schema/2025-12-10/schemas.ts``,
``ConversationSchema``) and the resolved two-agent config of
``config/colm_exp_configs/*2agent*.yaml``. No real transcripts are published; the opinions
below are chosen by hand, one case per edge, and are not system outputs.

``ws/v2025-11-27/`` holds the same conversations in the older protocol
(``schema/2025-11-27/schemas.ts``, written by
:func:`cuegap.designs.conversation._simulate.as_2025_11_27`),
laid out exactly as ``ws/experiment/``, and the cases that differ by version (``bad/``).
"""

from __future__ import annotations

import json
import shutil
import uuid
from pathlib import Path

import yaml

from cuegap.designs.conversation._simulate import as_2025_11_27, snapshot, transcript

HERE = Path(__file__).resolve().parent / "ws"
SUB, BENCH, SYSTEM = "bbq_age_sampled", "BBQ", "sim/hand-system"
NAME = "20260115T1200Z_hand-system_2agent_var-and-vanilla_v2025-12-10"
NS = uuid.UUID("6d094801-c330-4e1a-85a0-000000000016")
CELLS = {
    "black": {"demographics": "black", "persona": "teacher", "instantiation": "human",
              "reveal": "revealed"},
    "null": {"demographics": "none", "persona": "none", "instantiation": "ai",
             "reveal": "anonymous"},
    "one_round": {"demographics": "white", "persona": "none", "instantiation": "ai",
                  "reveal": "anonymous"},
}  # fmt: skip
#: case -> (snapshot, rounds as (identity, baseline) opinions, status)
CASES = {
    "third_option": ("black", [("A", "B"), ("C", "A"), ("C", "C")], "succeeded"),
    "no_disagreement": ("black", [("A", "A"), ("A", "A"), ("B", "A")], "succeeded"),
    "identity_shifts": ("black", [("A", "B"), ("B", "B"), ("B", "B")], "succeeded"),
    "both_swap": ("null", [("B", "A"), ("A", "B"), ("A", "B")], "succeeded"),
    "one_round": ("one_round", [("A", "B")], "succeeded"),
    "failed": ("black", [("A", "B")], "failed"),
    "missing_round": ("black", [("A", "B"), ("B", "B")], "succeeded"),
    "no_snapshot": ("absent", [("A", "B"), ("B", "B"), ("B", "B")], "succeeded"),
    "single_agent": ("single", [], "succeeded"),
}


def question(qid: str) -> dict:
    """A question object of MAC-Fairness's question schema (invented text)."""
    return {
        "question_id": qid, "source_dataset": BENCH, "source_id": qid.rsplit("_", 1)[1],
        "question_type": "multiple_choice", "question": f"Invented question {qid}?",
        "choices": [{"id": "A", "text": "The first person"},
                    {"id": "B", "text": "The second person"},
                    {"id": "C", "text": "Cannot be determined"}],
        "correct_answer_id": "C", "schema_version": "2025-11-27",
    }  # fmt: skip


def old_protocol(docs: dict, cfgs: dict, snaps: Path) -> None:
    """Every case again in protocol 2025-11-27, under ``v2025-11-27/`` with the same
    layout, and the version-specific bad cases under ``v2025-11-27/.../bad/``."""
    old = HERE / "v2025-11-27" / "experiment" / SUB
    tdir = old / NAME / "transcript"
    tdir.mkdir(parents=True)
    for case, doc in docs.items():
        snap = CASES[case][0]
        cfg = cfgs.get(snap, cfgs["black"])  # no_snapshot: its copies come from any run
        twin = as_2025_11_27(doc, cfg, question(doc["experiment_metadata"]["question_id"]))
        (tdir / f"{case}.json").write_text(json.dumps(twin, indent=2))
    (tdir.parent / "notes.json").write_text(json.dumps({"note": "not a transcript"}))
    bad = old / "bad" / "transcript"
    bad.mkdir(parents=True)
    base = docs["identity_shifts"]
    twin = as_2025_11_27(base, cfgs["black"], question("bbq_age_2"))

    def case(name: str, doc: dict) -> None:
        doc = dict(doc, transcript_id=str(uuid.uuid5(NS, f"2025-11-27/{name}")))
        (bad / f"{name}.json").write_text(json.dumps(doc, indent=2))

    case("no_question", dict(base, protocol_version="2025-11-27"))  # the 2025-12-10 layout
    meta = dict(twin["experiment_metadata"], question_id="bbq_age_7")
    case("two_question_ids", dict(twin, experiment_metadata=meta))
    agents = [dict(twin["agent_definitions"][0], demographics="white"),
              twin["agent_definitions"][1]]  # fmt: skip
    case("agents_mismatch", dict(twin, agent_definitions=agents))
    case("unknown_protocol", dict(base, protocol_version="2025-10-01"))
    # The early layout of the same era: an `experiment` section, no agent_definitions.
    early = {"experiment": {"experiment_name": NAME, "benchmark_name": SUB, "max_rounds": 3,
                            "routing_strategy": "vanilla", "shared_model_backbone": "llm_0",
                            "agents": [{"agent_id": "spkr_000", "as_human": True,
                                        "model": "shared"},
                                       {"agent_id": "spkr_001", "as_human": False,
                                        "model": "shared"}]}}  # fmt: skip
    (snaps / f"{NAME}_early.yaml").write_text(yaml.safe_dump(early, sort_keys=False))
    path = f"$MAC_FAIRNESS_WORKSPACE/bookkeeping/config_snapshot/{SUB}/{NAME}_early.yaml"
    meta = dict(twin["experiment_metadata"], config_snapshot_path=path)
    case("early_layout", dict(twin, experiment_metadata=meta))


def main() -> None:
    shutil.rmtree(HERE, ignore_errors=True)
    snaps = HERE / "bookkeeping" / "config_snapshot" / SUB
    tdir = HERE / "experiment" / SUB / NAME / "transcript"
    snaps.mkdir(parents=True)
    tdir.mkdir(parents=True)
    cfgs = {}
    for key, cell in CELLS.items():
        cfg = snapshot(SYSTEM, NAME, SUB, BENCH, cell, rounds=1 if key == "one_round" else 3)
        (snaps / f"{NAME}_{key}.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
        cfgs[key] = cfg
    single = snapshot(SYSTEM, NAME, SUB, BENCH, CELLS["null"], rounds=1)
    single["agent_definitions"] = single["agent_definitions"][:1]
    (snaps / f"{NAME}_single.yaml").write_text(yaml.safe_dump(single, sort_keys=False))
    cfgs["single"] = single
    docs = {}
    for case, (snap, rounds, status) in CASES.items():
        tid = str(uuid.uuid5(NS, case))
        rel = f"bookkeeping/config_snapshot/{SUB}/{NAME}_{snap}.yaml"
        doc = transcript(tid, NAME, SUB, rel, f"bbq_age_{len(docs)}", rounds, status)
        if case == "single_agent":  # one agent, one round, one opinion
            doc = transcript(tid, NAME, SUB, rel, "bbq_age_9", [("A", "A")])
            msgs = doc["conversation_rounds"][0]["messages"]
            doc["conversation_rounds"][0]["messages"] = msgs[:1]
            doc["conversation_summary"]["final_answers"] = {"spkr_000": "A"}
        docs[case] = doc
        (tdir / f"{case}.json").write_text(json.dumps(doc, indent=2))
    (tdir.parent / "notes.json").write_text(json.dumps({"note": "not a transcript"}))
    bulk = HERE / "bulk"
    bulk.mkdir()
    # the same transcript again, in the bulk form: a duplicate, not a second conversation
    (bulk / "again.jsonl").write_text(json.dumps(docs["identity_shifts"]) + "\n")
    old_protocol(docs, cfgs, snaps)


if __name__ == "__main__":
    main()
