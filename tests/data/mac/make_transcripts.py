"""Write the MAC-Fairness transcript fixtures of tests/test_pv_mac.py (run from anywhere).

Our own generator, written from the public transcript schema (stair-lab/mac-fairness,
``schema/2025-12-10/schemas.ts``: ``ConversationSchema``) and the config snapshot that
``src/utils/config_manager.py`` dumps (the resolved ``1agent_as-ai`` grid config). No
real transcripts are published; these are not real system outputs. The questions are
those of ``tests/data/pv/da_bank.jsonl`` (invented sentences).

``v2025-11-27/`` holds transcripts of the older protocol (``schema/2025-11-27/schemas.ts``,
written by :func:`cuegap.designs.conversation._simulate.as_2025_11_27`): two twins of good
2025-12-10
transcripts (same conversation, same snapshot) and the cases that differ by version.
"""

from __future__ import annotations

import json
import shutil
import uuid
from pathlib import Path

import yaml

from cuegap.designs.conversation._simulate import as_2025_11_27

HERE = Path(__file__).resolve().parent
BENCH = "diffAware_d1_sampled"
SYSTEM = "Qwen/Qwen3-4B"
LATER = "2026-01-15T12:06:00Z"
NS = uuid.UUID("6d094801-c330-4e1a-85a0-000000000003")
OLD = "v2025-11-27"  # the folder of the protocol 2025-11-27 transcripts


def config(name: str, fmt: str, order: str, agents: int = 1) -> dict:
    """A resolved single-agent config, as ConfigManager.save_snapshot dumps it."""
    agent = {
        "agent_id": "spkr_000", "role": "participant", "persona": None, "demographics": None,
        "if_as_human": False, "model": "llm_0", "temperature": 0.7, "max_tokens": 512,
    }  # fmt: skip
    return {
        "experiment_metadata": {
            "experiment_name": name,
            "benchmark_subcategory": BENCH,
            "schema_version": "2025-12-10",
            "questions_file": f"data/DifferenceAwareness/sampled/{BENCH}.jsonl",
        },
        "conversation_config": {"routing_strategy": "vanilla", "max_rounds": 1},
        "retry_config": {
            "max_retries": 5,
            "answer_match_threshold": 0.75,
            "retry_on_validation_error": True,
            "retry_on_generation_error": True,
        },
        "identity_reveal_config": {
            "reveal_persona": False,
            "reveal_demographics": False,
            "reveal_presence_mode": False,
        },
        "prompt_template_config": {
            "for_participant": {"choice_display_format": fmt, "json_field_order": order}
        },
        "model_definitions": {"llm_0": {"backend": "vllm", "model_path": SYSTEM}},
        "agent_definitions": [dict(agent, agent_id=f"spkr_{i:03d}") for i in range(agents)],
    }


def transcript(name: str, snap: str, qid: str, opinion: str | None, **extra) -> dict:
    """One ConversationSchema object with one round and one participant message."""
    tid = str(uuid.uuid5(NS, f"{name}/{qid}/{opinion}/{sorted(extra)}"))
    msgs = []
    if opinion is not None:
        msgs = [
            {
                "message_id": "msg_0_000",
                "agent_id": "spkr_000",
                "agent_role": "participant",
                "round_id": 0,
                "structured_response": {
                    "response_type": "participant",
                    "rationale": "A generated rationale.",
                    "opinion": opinion,
                },
                "visible_to": ["spkr_000"],
                "message_metadata": {"retry_count": 0, "prompt_tokens": 180, "response_tokens": 40},
            }
        ]
    tokens = {"total": 220, "avg": 220, "max": 220}
    out = {
        "transcript_id": tid,
        "protocol_version": "2025-12-10",
        "experiment_metadata": {
            "experiment_name": name,
            "benchmark_subcategory": BENCH,
            "config_snapshot_path": snap,
            "submission_timestamp": "2026-01-15T12:00:00Z",
            "execution_timestamp": "2026-01-15T12:05:00Z",
            "job_task_id": "local",
            "question_id": qid,
        },
        "conversation_rounds": [{"round_id": 0, "messages": msgs}] if msgs else [],
        "conversation_summary": {
            "total_rounds": 1 if msgs else 0,
            "total_messages": len(msgs),
            "status": "succeeded" if msgs else "failed",
            "final_answers": {"spkr_000": opinion} if msgs else {},
            "consensus_reached": True if msgs else None,
            "token_metrics": {
                "total_messages": len(msgs),
                "prompt_tokens": tokens,
                "response_tokens": tokens,
                "combined_tokens": tokens,
            },
            "retry_statistics": {
                "total_retry_attempts": 0,
                "messages_requiring_retries": 0,
                "validation_errors_summary": [],
            },
        },
        "created_at": "2026-01-15T12:05:01Z",
    }
    out.update(extra)
    return out


def write_snapshot(name: str, cfg: dict, under: str = "") -> str:
    rel = f"bookkeeping/config_snapshot/{BENCH}/{name}_20260115T120000Z.yaml"
    path = HERE / under / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.dump(cfg, default_flow_style=False, sort_keys=False))
    return "$MAC_FAIRNESS_WORKSPACE/" + rel


def write(folder: str, obj: dict, stem: str | None = None) -> None:
    """A transcript file, named by its id as MAC-Fairness names it (or ``stem``)."""
    name = f"{stem or obj['transcript_id']}.json"
    path = HERE / "experiment" / BENCH / folder / "transcript" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(obj, indent=2) + "\n")


# (choice format, field order) -> the opinions on d1_1 (different, gold A) and d1_2
# (equal, gold C), for replicates 0 and 1.
ANSWERS = {
    ("letter_paren", "answer_first"): (("A", "C"), ("B", "C")),
    ("letter_paren", "rationale_first"): (("A", "B"), ("A", "B")),
    ("roman_dot", "answer_first"): (("C", "C"), ("C", "C")),
    ("roman_dot", "rationale_first"): (("C", "B"), ("C", "B")),
}


def write_1127(folder: str, obj: dict, stem: str | None = None) -> None:
    """A 2025-11-27 transcript under ``v2025-11-27/experiment/...``."""
    name = f"{stem or obj['transcript_id']}.json"
    path = HERE / OLD / "experiment" / BENCH / folder / "transcript" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(obj, indent=2) + "\n")


def old_protocol_cases(name: str, snap: str, cfg: dict) -> None:
    """Twins of the two transcripts of ``name`` in protocol 2025-11-27, and the cases
    that differ by version (quarantined)."""
    bank = (HERE.parent / "pv" / "da_bank.jsonl").read_text().splitlines()
    questions = {
        q["question_id"]: dict(q, schema_version="2025-11-27") for q in map(json.loads, bank)
    }
    first = ANSWERS[("letter_paren", "answer_first")][0]
    for qid, opinion in zip(("diffAware_d1_1", "diffAware_d1_2"), first, strict=True):
        write_1127(name, as_2025_11_27(transcript(name, snap, qid, opinion), cfg, questions[qid]))
    bad = "bad"
    twin = as_2025_11_27(
        transcript(name, snap, "diffAware_d1_1", "B"), cfg, questions["diffAware_d1_1"]
    )
    shaped = transcript(name, snap, "diffAware_d1_1", "B", protocol_version="2025-11-27")
    write_1127(bad, shaped, "no_question")  # the 2025-12-10 layout under the older version
    two = dict(
        twin, experiment_metadata=dict(twin["experiment_metadata"], question_id="diffAware_d1_2")
    )
    write_1127(bad, two, "two_question_ids")
    write_1127(
        bad,
        dict(twin, conversation_config={"routing_strategy": "vanilla", "max_rounds": 3}),
        "rounds_mismatch",
    )
    # A 2025-11-27 run's own snapshot: no prompt_template_config (not configurable then).
    old = "20260115T1500Z_qwen3-4b_1agent_as-ai_v2025-11-27"
    ocfg = config(old, "bullet", "rationale_first")
    del ocfg["prompt_template_config"]
    ocfg["experiment_metadata"]["schema_version"] = "2025-11-27"
    osnap = write_snapshot(old, ocfg, OLD)
    q = questions["diffAware_d1_1"]
    write_1127(
        bad,
        as_2025_11_27(transcript(old, osnap, "diffAware_d1_1", "A"), ocfg, q),
        "no_prompt_format",
    )
    # The early layout of the same era (an `experiment` section; no agent_definitions).
    early = "20260115T1600Z_qwen3-4b_1agent_as-ai_early"
    ecfg = {"experiment": {"experiment_name": early, "benchmark_name": BENCH,
                           "max_rounds": 1, "routing_strategy": "vanilla",
                           "shared_model_backbone": "llm_0",
                           "agents": [{"agent_id": "spkr_000", "role": "participant",
                                       "as_human": False, "model": "shared"}]}}  # fmt: skip
    esnap = write_snapshot(early, ecfg, OLD)
    write_1127(
        bad, as_2025_11_27(transcript(early, esnap, "diffAware_d1_1", "A"), ocfg, q), "early_layout"
    )


def main() -> None:
    for sub in ("bookkeeping", "experiment", OLD):
        shutil.rmtree(HERE / sub, ignore_errors=True)
    (HERE / "bulk").mkdir(exist_ok=True)
    for (fmt, order), reps in ANSWERS.items():
        for rep, (a1, a2) in enumerate(reps):
            name = f"20260115T1{2 + rep}00Z_qwen3-4b_{fmt}_{order}_1agent_as-ai_v2025-12-10"
            cfg = config(name, fmt, order)
            snap = write_snapshot(name, cfg)
            write(name, transcript(name, snap, "diffAware_d1_1", a1))
            write(name, transcript(name, snap, "diffAware_d1_2", a2))
            if (fmt, order, rep) == ("letter_paren", "answer_first", 0):
                old_protocol_cases(name, snap, cfg)
    name = "20260115T1400Z_qwen3-4b_bad_1agent_as-ai_v2025-12-10"
    snap = write_snapshot(name, config(name, "bullet", "answer_first"))
    two = "20260115T1400Z_qwen3-4b_two_2agent_var-and-vanilla_v2025-12-10"
    snap2 = write_snapshot(two, config(two, "bullet", "answer_first", agents=2))
    bad = "bad"
    write(bad, transcript(name, snap, "diffAware_d1_1", None), "failed")
    write(bad, transcript(two, snap2, "diffAware_d1_1", "A"), "two_agents")
    gone = snap.replace("bad_", "gone_")
    write(bad, transcript(name, gone, "diffAware_d1_1", "A"), "no_snapshot")
    unknown = transcript(name, snap, "diffAware_d1_1", "A", protocol_version="2025-10-01")
    write(bad, unknown, "unknown_protocol")
    other = {
        "for_participant": {"choice_display_format": "none", "json_field_order": "answer_first"}
    }
    own = transcript(name, snap, "diffAware_d1_2", "A", prompt_template_config=other)
    write(bad, own, "config_mismatch")
    write(bad, transcript(name, snap, "diffAware_d1_2", "Both groups, probably"), "unmatched")
    write(bad, transcript(name, snap, "diffAware_d9_9", "A"), "unknown_question")
    # The bulk form: one transcript per line, the third line cut short.
    lines = [
        json.dumps(
            transcript(name, snap, "diffAware_d1_1", "A", created_at="2026-01-15T12:06:00Z")
        ),
        json.dumps(transcript(name, snap, "diffAware_n2_7", "B")),
        json.dumps(transcript(name, snap, "diffAware_d1_2", "C"))[:80],
    ]
    (HERE / "bulk" / "transcripts.jsonl").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
