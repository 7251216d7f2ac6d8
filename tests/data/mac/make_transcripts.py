"""Write the MAC-Fairness transcript fixtures of tests/test_pv_mac.py (run from anywhere).

Our own generator, written from the public transcript schema (stair-lab/mac-fairness,
``schema/2025-12-10/schemas.ts``: ``ConversationSchema``) and the config snapshot that
``src/utils/config_manager.py`` dumps (the resolved ``1agent_as-ai`` grid config). No
real transcripts are published; these are not real system outputs. The questions are
those of ``tests/data/pv/da_bank.jsonl`` (invented sentences).
"""

from __future__ import annotations

import json
import shutil
import uuid
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
BENCH = "diffAware_d1_sampled"
SYSTEM = "Qwen/Qwen3-4B"
LATER = "2026-01-15T12:06:00Z"
NS = uuid.UUID("6d094801-c330-4e1a-85a0-000000000003")


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


def write_snapshot(name: str, cfg: dict) -> str:
    rel = f"bookkeeping/config_snapshot/{BENCH}/{name}_20260115T120000Z.yaml"
    path = HERE / rel
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


def main() -> None:
    for sub in ("bookkeeping", "experiment"):
        shutil.rmtree(HERE / sub, ignore_errors=True)
    (HERE / "bulk").mkdir(exist_ok=True)
    for (fmt, order), reps in ANSWERS.items():
        for rep, (a1, a2) in enumerate(reps):
            name = f"20260115T1{2 + rep}00Z_qwen3-4b_{fmt}_{order}_1agent_as-ai_v2025-12-10"
            snap = write_snapshot(name, config(name, fmt, order))
            write(name, transcript(name, snap, "diffAware_d1_1", a1))
            write(name, transcript(name, snap, "diffAware_d1_2", a2))
    name = "20260115T1400Z_qwen3-4b_bad_1agent_as-ai_v2025-12-10"
    snap = write_snapshot(name, config(name, "bullet", "answer_first"))
    two = "20260115T1400Z_qwen3-4b_two_2agent_var-and-vanilla_v2025-12-10"
    snap2 = write_snapshot(two, config(two, "bullet", "answer_first", agents=2))
    bad = "bad"
    write(bad, transcript(name, snap, "diffAware_d1_1", None), "failed")
    write(bad, transcript(two, snap2, "diffAware_d1_1", "A"), "two_agents")
    gone = snap.replace("bad_", "gone_")
    write(bad, transcript(name, gone, "diffAware_d1_1", "A"), "no_snapshot")
    old = transcript(name, snap, "diffAware_d1_1", "A", protocol_version="2025-11-27")
    write(bad, old, "old_protocol")
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
