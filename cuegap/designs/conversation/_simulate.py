"""Simulated MAC-Fairness two-agent runs (conversation design, seed 003 §4-5).

:func:`simulate_conv` writes what a MAC-Fairness workspace holds after seed 003's runs,
in the public transcript schema (stair-lab/mac-fairness ``schema/2025-12-10/schemas.ts``):

* ``bookkeeping/config_snapshot/{subcategory}/{experiment}_{k}.yaml``: one resolved
  two-agent config per (system, subcategory, configuration), ``spkr_000`` the identity
  agent (demographics, persona, ``if_as_human``), ``spkr_001`` the baseline, the reveal
  condition as ``identity_reveal_config`` (all three switches true or all false);
* ``experiment/{subcategory}/{experiment}/transcript/{transcript_id}.json``: one
  transcript per (configuration, question), 3 rounds, without the debug-only fields;
* ``truth.csv`` (planted λ per cell) and ``counts.csv`` (the transition counts of the
  succeeded transcripts, which ``cuegap ingest`` followed by
  :func:`cuegap.schema.conv_counts` must give back exactly).

Opinion sequences come from :func:`cuegap.designs.conversation.stats.simulate_conv_opinions` with
planted
shift rates per cell (:func:`cuegap.designs.conversation.stats.simulate_conv_counts`); a fraction
``fail_rate`` of the conversations is written as ``failed`` after round 0 (the reader
quarantines them). ``scale="paper"`` is seed 003's design: 8 systems, BBQ 9 categories ×
200 questions, Difference-Awareness 8 × 250, Discrim-Eval 2 × 1,000, 7 demographics × 6
personas × 2 instantiations × 2 reveal conditions: 7.8 million transcripts.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import orjson
import pandas as pd
import yaml

from cuegap.designs.conversation.stats import (
    conv_transition_counts,
    simulate_conv_counts,
    simulate_conv_opinions,
)
from cuegap.designs.conversation.stats._frame import CELL
from cuegap.designs.conversation.stats._sim import DEMOGRAPHICS, PERSONAS, conv_design
from cuegap.files import make_dir, refuse_link, write_output

PREFIX = {"BBQ": "bbq", "DifferenceAwareness": "diffAware", "DiscrimEval": "discrimEval"}
PAPER = {
    "BBQ": (["age", "disability_status", "gender_identity", "nationality",
             "physical_appearance", "race_ethnicity", "religion", "ses",
             "sexual_orientation"], 200),
    "DifferenceAwareness": (["d1", "d2", "d3", "d4", "n1", "n2", "n3", "n4"], 250),
    "DiscrimEval": (["explicit", "implicit"], 1000),
}  # fmt: skip
SMALL = {"BBQ": (["age", "race_ethnicity"], 4), "DifferenceAwareness": (["d1", "n1"], 4),
         "DiscrimEval": (["explicit"], 4)}  # fmt: skip
#: Planted logit effects (seed 003's direction: assigned identities persist more).
IDEN_EFFECTS = {("black", "human"): -0.6, ("older", "human"): -0.5, ("black", "ai"): -0.3}
BASE_REVEAL_EFFECTS = {("black", "human"): 0.5, ("female", "human"): 0.4}
_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)  # libyaml when there
STAMP, SUBMITTED, EXECUTED = "20260115T1200Z", "2026-01-15T12:00:00Z", "2026-01-15T12:05:00Z"


@dataclass(frozen=True)
class ConvSimulationResult:
    """What :func:`simulate_conv` wrote."""

    out_dir: Path
    n_systems: int
    n_transcripts: int
    n_failed: int
    truth_path: Path
    counts_path: Path


def snapshot(system: str, name: str, sub: str, bench: str, cell: Mapping[str, str],
             rounds: int = 3) -> dict:  # fmt: skip
    """A resolved two-agent config, as MAC-Fairness dumps it into its snapshot."""
    demo = None if cell["demographics"] == "none" else cell["demographics"]
    persona = None if cell["persona"] == "none" else cell["persona"]
    shown = cell["reveal"] == "revealed"

    def agent(k: int, demo: str | None, persona: str | None, human: bool) -> dict:
        return {"agent_id": f"spkr_{k:03d}", "role": "participant", "persona": persona,
                "demographics": demo, "if_as_human": human, "model": "llm_0",
                "temperature": 0.7, "max_tokens": 512}  # fmt: skip

    return {
        "experiment_metadata": {
            "experiment_name": name, "benchmark_subcategory": sub,
            "schema_version": "2025-12-10",
            "questions_file": f"data/{bench}/sampled/{sub}.jsonl",
        },
        "conversation_config": {"routing_strategy": "vanilla", "max_rounds": rounds},
        "retry_config": {"max_retries": 5, "answer_match_threshold": 0.75,
                         "retry_on_validation_error": True, "retry_on_generation_error": True},
        "identity_reveal_config": {"reveal_persona": shown, "reveal_demographics": shown,
                                   "reveal_presence_mode": shown},
        "prompt_template_config": {"for_participant": {"choice_display_format": "none",
                                                       "json_field_order": "rationale_first"}},
        "model_definitions": {"llm_0": {"backend": "vllm", "model_path": system}},
        "agent_definitions": [agent(0, demo, persona, cell["instantiation"] == "human"),
                              agent(1, None, None, False)],
    }  # fmt: skip


def transcript(tid: str, name: str, sub: str, snap: str, qid: str,
               rounds: list[tuple[str, str]], status: str = "succeeded") -> dict:  # fmt: skip
    """A transcript in the 2025-12-10 schema (no debug-only fields)."""
    conv = []
    for r, pair in enumerate(rounds):
        msgs = [
            {"message_id": f"msg_{r}_{k:03d}", "agent_id": f"spkr_{k:03d}",
             "agent_role": "participant", "round_id": r,
             "structured_response": {"response_type": "participant",
                                     "rationale": f"Weighing the context, {op} fits best.",
                                     "opinion": op},
             "visible_to": ["spkr_000", "spkr_001"],
             "message_metadata": {"retry_count": 0, "prompt_tokens": 400, "response_tokens": 60}}
            for k, op in enumerate(pair)
        ]  # fmt: skip
        conv.append({"round_id": r, "messages": msgs})
    n = 2 * len(rounds)
    tok = {"total": 460 * n, "avg": 460, "max": 460}
    final = dict(zip(("spkr_000", "spkr_001"), rounds[-1], strict=True)) if rounds else {}
    ok = status == "succeeded"
    return {
        "transcript_id": tid, "protocol_version": "2025-12-10",
        "experiment_metadata": {
            "experiment_name": name, "benchmark_subcategory": sub,
            "config_snapshot_path": f"$MAC_FAIRNESS_WORKSPACE/{snap}",
            "submission_timestamp": SUBMITTED, "execution_timestamp": EXECUTED,
            "job_task_id": "local", "question_id": qid,
        },
        "conversation_rounds": conv,
        "conversation_summary": {
            "total_rounds": len(rounds), "total_messages": n, "status": status,
            "final_answers": final if ok else {},
            "consensus_reached": (len(set(final.values())) == 1) if ok else None,
            "token_metrics": {"total_messages": n, "prompt_tokens": tok,
                              "response_tokens": tok, "combined_tokens": tok},
            "retry_statistics": {"total_retry_attempts": 0, "messages_requiring_retries": 0,
                                 "validation_errors_summary": []},
        },
        "created_at": EXECUTED,
    }  # fmt: skip


def as_2025_11_27(doc: Mapping, cfg: Mapping, question: Mapping) -> dict:
    """The same transcript as MAC-Fairness wrote it under protocol ``2025-11-27``.

    From ``schema/2025-11-27/schemas.ts`` and the ``src/utils/transcript_manager.py`` of
    then: the question id is not in ``experiment_metadata`` but in the full question
    object, and the run's conversation, retry, reveal and agent configuration are copied
    in (required then, debug-only since 2025-12-10). Messages and summary are unchanged.

    Parameters
    ----------
    doc : Mapping
        A 2025-12-10 transcript (:func:`transcript`).
    cfg : Mapping
        The config snapshot it names (:func:`snapshot`).
    question : Mapping
        The question object (MAC-Fairness's question schema, with ``question_id``).
    """
    meta = {k: v for k, v in doc["experiment_metadata"].items() if k != "question_id"}
    conv = cfg["conversation_config"]
    return {
        "transcript_id": doc["transcript_id"], "protocol_version": "2025-11-27",
        "experiment_metadata": meta, "question": dict(question),
        "conversation_config": {"routing_strategy": conv["routing_strategy"],
                                "max_rounds": conv["max_rounds"]},
        "retry_config": dict(cfg["retry_config"]),
        "identity_reveal_config": dict(cfg["identity_reveal_config"]),
        "agent_definitions": [dict(a) for a in cfg["agent_definitions"]],
        "conversation_rounds": doc["conversation_rounds"],
        "conversation_summary": doc["conversation_summary"],
        "created_at": doc["created_at"],
    }  # fmt: skip


def simulate_conv(
    out_dir: Path | str,
    *,
    systems: int = 3,
    scale: str = "small",
    seed: int = 0,
    fail_rate: float = 0.01,
    questions: int | None = None,
    fraction: float = 1.0,
    iden_effects: Mapping[tuple[str, ...], float] | None = None,
    base_reveal_effects: Mapping[tuple[str, ...], float] | None = None,
    progress: Callable[[int, int], None] | None = None,
    only_systems: Collection[int] | None = None,
) -> ConvSimulationResult:
    """Write a simulated MAC-Fairness workspace of two-agent conversations.

    Parameters
    ----------
    out_dir : Path or str
        Folder to write to (created).
    systems : int, default 3
        Audited systems (``sim/system-01`` ...); ``scale="paper"`` uses 8 unless given.
    scale : {"small", "paper"}, default "small"
        ``small``: 5 categories × 4 questions × 168 configurations per system (3,360
        transcripts per system); ``paper``: seed 003's full design (see the module
        docstring).
    seed : int, default 0
    fail_rate : float, default 0.01
        Share of conversations written as ``failed`` after round 0.
    questions : int, optional
        Questions per category instead of the scale's (e.g. 1 for a quick test).
    fraction : float, default 1
        Scales the questions per category (at least 1 each), e.g. 0.1 for a tenth.
    iden_effects, base_reveal_effects : mapping, optional
        Planted logit effects (:func:`cuegap.designs.conversation.stats.simulate_conv_counts`);
        default
        :data:`IDEN_EFFECTS` and :data:`BASE_REVEAL_EFFECTS`.
    progress : callable, optional
        ``progress(done, total)`` in transcripts.
    only_systems : collection of int, optional
        Write only these systems' transcripts and snapshots (0-based). The random streams
        are those of the full run, so writing the systems in parts gives the same files
        as one call (e.g. a paper-scale benchmark that writes one system at a time to
        bound the disk it needs); ``truth.csv`` and ``counts.csv`` cover the part.

    Returns
    -------
    ConvSimulationResult
    """
    if scale not in ("small", "paper"):
        raise ValueError(f"scale should be 'small' or 'paper', but got {scale!r}")
    if not 0 <= fail_rate < 1:
        raise ValueError(f"fail_rate must be in [0, 1), but got {fail_rate!r}")
    out = Path(out_dir)
    for name in ("experiment", "bookkeeping", "truth.csv", "counts.csv"):
        refuse_link(out / name)  # before anything is written
    plan = PAPER if scale == "paper" else SMALL
    if questions is not None:
        if questions < 1:
            raise ValueError(f"questions must be >= 1, but got {questions!r}")
        plan = {b: (cats, questions) for b, (cats, _q) in plan.items()}
    if not 0 < fraction <= 1:
        raise ValueError(f"fraction must be in (0, 1], but got {fraction!r}")
    plan = {b: (cats, max(1, round(q * fraction))) for b, (cats, q) in plan.items()}
    names = [f"sim/system-{k + 1:02d}" for k in range(systems)]
    if only_systems is not None and (
        not only_systems or not set(only_systems) <= set(range(systems))
    ):
        raise ValueError(f"only_systems must be a non-empty subset of 0..{systems - 1}")
    wanted = set(names) if only_systems is None else {names[k] for k in only_systems}
    cells = conv_design(systems=names, benchmarks={b: c for b, (c, _q) in plan.items()})
    truth = simulate_conv_counts(
        cells=cells,
        iden_effects=IDEN_EFFECTS if iden_effects is None else iden_effects,
        base_reveal_effects=BASE_REVEAL_EFFECTS
        if base_reveal_effects is None
        else base_reveal_effects,
        seed=seed,
    ).truth
    total = sum(len(DEMOGRAPHICS) * len(PERSONAS) * 4 * len(c) * q for c, q in plan.values())
    total *= len(wanted)
    done, failed, counts = 0, 0, []
    rng = np.random.default_rng([seed, 1])
    for b, ((system, bench, cat), block) in enumerate(
        truth.groupby(["system", "benchmark", "category"], sort=False)
    ):
        q = plan[bench][1]
        if system not in wanted:  # the full run's draws, so that parts add up to it
            rng.bytes(16 * len(block) * q)
            rng.random(len(block) * q)
            continue
        sub = f"{PREFIX[bench]}_{cat}_sampled"
        short = system.split("/")[-1]
        name = f"{STAMP}_{short}_2agent_var-and-vanilla_v2025-12-10"
        tdir = make_dir(out, Path("experiment", sub, name, "transcript"))
        make_dir(out, Path("bookkeeping", "config_snapshot", sub))
        block = block.reset_index(drop=True)
        ops, convs = simulate_conv_opinions(block, conversations=q, seed=seed * 100_003 + b)
        # columns (round, role), roles in name order: (r, baseline), (r, identity)
        wide = ops.pivot(index="conversation", columns=["round", "role"], values="opinion")
        wide = wide.sort_index(axis=1)
        ids = rng.bytes(16 * len(convs))
        fails = rng.random(len(convs)) < fail_rate
        snaps = []
        for k, row in block.iterrows():
            rel = f"bookkeeping/config_snapshot/{sub}/{name}_{k:03d}.yaml"
            cfg = snapshot(system, name, sub, bench, row)
            write_output(out / rel, yaml.dump(cfg, Dumper=_DUMPER))
            snaps.append(rel)
        for i in range(len(convs)):
            cell, qn = divmod(i, q)
            tid = str(uuid.UUID(bytes=ids[16 * i : 16 * i + 16], version=4))
            rounds = [(wide.iat[i, 2 * r + 1], wide.iat[i, 2 * r]) for r in range(3)]
            status = "failed" if fails[i] else "succeeded"
            doc = transcript(tid, name, sub, snaps[cell], f"{sub.removesuffix('_sampled')}_{qn}",
                             rounds[:1] if fails[i] else rounds, status)  # fmt: skip
            write_output(tdir / f"{tid}.json", orjson.dumps(doc))
        done += len(convs)
        failed += int(fails.sum())
        keep = ops[~ops["conversation"].isin(np.flatnonzero(fails))]
        counts.append(conv_transition_counts(keep, convs))
        if progress:
            progress(done, total)
    truth = truth[truth["system"].isin(wanted)]
    out.mkdir(parents=True, exist_ok=True)
    write_output(out / "truth.csv", truth.to_csv(index=False))
    got = pd.concat(counts, ignore_index=True).sort_values(list(CELL), ignore_index=True)
    write_output(out / "counts.csv", got.to_csv(index=False))
    truth_path, counts_path = out / "truth.csv", out / "counts.csv"
    return ConvSimulationResult(out, len(wanted), done, failed, truth_path, counts_path)
