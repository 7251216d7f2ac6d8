"""Write the two-agent MAC-Fairness fixtures of tests/test_conv_ingest.py (run from anywhere).

Our own generator: the transcripts and config snapshots are built by
:func:`cuegap.simulate._conv.transcript` and :func:`~cuegap.simulate._conv.snapshot`, which
follow the public schema (stair-lab/mac-fairness ``schema/2025-12-10/schemas.ts``,
``ConversationSchema``) and the resolved two-agent config of
``config/colm_exp_configs/*2agent*.yaml``. No real transcripts are published; the opinions
below are chosen by hand, one case per edge, and are not system outputs.
"""

from __future__ import annotations

import json
import shutil
import uuid
from pathlib import Path

import yaml

from cuegap.simulate._conv import snapshot, transcript

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


def main() -> None:
    shutil.rmtree(HERE, ignore_errors=True)
    snaps = HERE / "bookkeeping" / "config_snapshot" / SUB
    tdir = HERE / "experiment" / SUB / NAME / "transcript"
    snaps.mkdir(parents=True)
    tdir.mkdir(parents=True)
    for key, cell in CELLS.items():
        cfg = snapshot(SYSTEM, NAME, SUB, BENCH, cell, rounds=1 if key == "one_round" else 3)
        (snaps / f"{NAME}_{key}.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    single = snapshot(SYSTEM, NAME, SUB, BENCH, CELLS["null"], rounds=1)
    single["agent_definitions"] = single["agent_definitions"][:1]
    (snaps / f"{NAME}_single.yaml").write_text(yaml.safe_dump(single, sort_keys=False))
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


if __name__ == "__main__":
    main()
