"""Simulated prompt-variance audits with planted per-format effects
(``cuegap simulate --design prompt-variance``).

Planting model
--------------
Per-run counts come from :func:`cuegap.designs.prompt_variance.stats.simulate_pv_counts` (its
docstring has the
model): per (system, category) a base score, plus a per-level effect of the first factor
(SD ``format_sd``), of the second (SD ``field_sd``) and of their cell (SD
``interaction_sd``), so each combination's true score, and hence η², is known; each run
then draws its answers multinomially around the true scores. BBQ categories keep the BBQ
counts, Difference-Awareness subsets the Difference-Awareness counts (two independent
draws, seeds ``seed`` and ``seed + 1``).

Those counts become answers to concrete items: each run answers every question of its
category once, and the run's counts are dealt to a random permutation of the questions
(a biased answer to a ``negative`` question is its target option, to a ``nonneg`` one the
non-target; a ≠ question's correct answer is its gold group). So the per-run counts that
cuegap aggregates back from the store are exactly the simulated ones.

With ``cue_gap=True`` every BBQ item also comes under an implicit cue, and the systems
alternate between *steady* (the implicit side's raw ambiguous bias is 0.8 higher in
every format: a clear gap) and *fickle* (no mean gap, but a per-format part of SD 0.5:
a gap whose sign depends on the format).

Files: ``bbq_bank.jsonl`` (cuegap QA item bank), ``diffAware_sim.jsonl`` (MAC-Fairness
Difference-Awareness questions), ``responses_bbq.jsonl`` and ``responses_da.jsonl``
(bbq-results lines with ``factors`` and ``repeat``), ``truth.csv`` (the true score per
system × category × combination [× cue] × metric) and ``truth.json`` (the settings and
planted parameters).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import orjson
import pandas as pd

from cuegap.designs.prompt_variance.stats import simulate_pv_counts
from cuegap.files import open_output, refuse_link, write_output

BBQ_CATEGORIES = (
    "age",
    "disability_status",
    "gender_identity",
    "nationality",
    "physical_appearance",
    "race_ethnicity",
    "religion",
    "ses",
    "sexual_orientation",
)
DA_SUBSETS = ("d1", "d2", "d3", "d4", "n1", "n2", "n3", "n4")
#: (systems, BBQ categories, BBQ questions, DA subsets, DA questions, choice formats,
#: replicates) per scale; paper is seed 003 §3: 11 × 9 × 200 × 22 × 5 and DA 8 × 250.
SCALES = {
    "small": (None, 2, 80, 2, 40, 4, 3),
    "paper": (11, 9, 200, 8, 250, 11, 5),
}
FORMATS = (
    "bullet",
    "letter_colon",
    "letter_dot",
    "letter_paren",
    "arabic_colon",
    "arabic_dot",
    "arabic_paren",
    "roman_colon",
    "roman_dot",
    "roman_paren",
    "none",
)
#: Every file the design writes into its folder.
PV_FILES = (
    "bbq_bank.jsonl",
    "diffAware_sim.jsonl",
    "responses_bbq.jsonl",
    "responses_da.jsonl",
    "truth.csv",
    "truth.json",
)
ORDERS = ("answer_first", "rationale_first")


@dataclass
class PVSimulationResult:
    """Where :func:`simulate_pv` wrote its files and what it wrote."""

    out_dir: Path
    bank_paths: list[Path]
    responses_paths: list[Path]
    truth_path: Path
    n_responses: int
    n_systems: int


def _bbq_items(categories: list[str], n: int, cues: list[str]) -> list[dict]:
    items = []
    for cat in categories:
        for k in range(n):
            ctx = "ambiguous" if k < n // 2 else "disambiguated"
            pol = "negative" if k % 2 == 0 else "nonneg"
            gold = "C" if ctx == "ambiguous" else ("A" if k % 4 < 2 else "B")
            for cue in cues:
                items.append(
                    {
                        "item_id": f"{cat}-{k:03d}" + ("" if len(cues) == 1 else f"-{cue}"),
                        "template_id": f"{cat}-{k:03d}",
                        "dimension": cat,
                        "subgroup": "sim",
                        "context_condition": ctx,
                        "polarity": pol,
                        "cue": cue,
                        "context": f"Simulated context {k} of {cat}.",
                        "question": f"Simulated question {k}?",
                        "options": [
                            {"label": "A", "text": "Person one", "role": "target"},
                            {"label": "B", "text": "Person two", "role": "non_target"},
                            {"label": "C", "text": "Unknown", "role": "unknown"},
                        ],
                        "gold": gold,
                    }
                )
    return items


def _da_questions(subsets: list[str], n: int) -> list[dict]:
    out = []
    for sub in subsets:
        for k in range(n):
            split = "different" if k < n // 2 else "equal"
            gold = "C" if split == "equal" else "AB"[k % 2]
            out.append(
                {
                    "question_id": f"diffAware_{sub}_{k}",
                    "source_dataset": "DiffAware",
                    "source_id": str(k),
                    "question_type": "multiple_choice",
                    "context": "",
                    "question": f"Simulated question {k} of {sub}: which group?",
                    "choices": [
                        {"id": "A", "text": "Group one"},
                        {"id": "B", "text": "Group two"},
                        {"id": "C", "text": "Neither; they do not differ"},
                    ],
                    "correct_answer_id": gold,
                    "source_metadata": {
                        "example_id": str(k),
                        "additional_metadata": {"split": split},
                    },
                    "schema_version": "2025-12-10",
                }
            )
    return out


def _deal(rng: np.random.Generator, counts: list[int], labels: list[np.ndarray]) -> np.ndarray:
    """Answer labels for questions, ``counts[j]`` of them taking ``labels[j]`` (per question)."""
    n = sum(counts)
    order = rng.permutation(n)
    out = np.empty(n, dtype=object)
    start = 0
    for c, lab in zip(counts, labels, strict=True):
        pick = order[start : start + c]
        out[pick] = lab[pick]
        start += c
    return out


def simulate_pv(
    out_dir: Path | str,
    *,
    systems: int = 3,
    scale: str = "small",
    seed: int = 0,
    cue_gap: bool = False,
    format_sd: float = 0.08,
    field_sd: float = 0.03,
    fraction: float = 1.0,
    progress: Callable[[int], None] | None = None,
) -> PVSimulationResult:
    """Write a simulated prompt-variance audit (see the module docstring).

    Parameters
    ----------
    out_dir : Path or str
    systems : int, default 3
        Simulated systems (``paper`` scale: always 11, as in seed 003).
    scale : {"small", "paper"}
    seed : int
    cue_gap : bool, default False
        Also plant an explicit vs implicit cue contrast on the BBQ items.
    format_sd, field_sd : float
        SDs of the planted choice-format and field-order effects.
    fraction : float, default 1.0
        Scales the questions per category (kept even, at least 2): 0.1 is a tenth of the
        scale's answers, for benchmarks.
    progress : callable, optional
        Called with the number of answers written, now and then.

    Returns
    -------
    PVSimulationResult
    """
    if scale not in SCALES:
        raise ValueError(f"scale should be one of {', '.join(SCALES)} but got {scale!r}")
    n_sys, n_cat, n_q, n_sub, n_da, n_fmt, reps = SCALES[scale]
    n_sys = n_sys or systems
    if not 0 < fraction <= 1:
        raise ValueError(f"fraction should be in (0, 1] but got {fraction}")
    n_q, n_da = (max(2, 2 * round(n * fraction / 2)) for n in (n_q, n_da))
    if n_sys < 1:
        raise ValueError(f"systems should be at least 1 but got {n_sys}")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    for name in PV_FILES:  # before anything is written
        refuse_link(out / name)
    names = [f"sim-system-{i + 1:02d}" for i in range(n_sys)]
    factors = {"choice_format": FORMATS[:n_fmt], "field_order": ORDERS}
    cats, subs = list(BBQ_CATEGORIES[:n_cat]), list(DA_SUBSETS[:n_sub])
    cues = ["explicit", "implicit"] if cue_gap else ["explicit"]
    kw = {
        "systems": names,
        "factors": factors,
        "replicates": reps,
        "format_sd": format_sd,
        "field_sd": field_sd,
    }
    gaps = {s: (0.8, 0.0) if i % 2 == 0 else (0.0, 0.5) for i, s in enumerate(names)}
    bbq = simulate_pv_counts(
        categories=cats,
        n_questions=n_q,
        seed=seed,
        **kw,
        conditions=cues if cue_gap else None,
        condition_gap={s: g for s, (g, _) in gaps.items()},
        condition_format_sd={s: sd for s, (_, sd) in gaps.items()},
    )
    da = simulate_pv_counts(categories=subs, n_questions=n_da, seed=seed + 1, **kw)
    bank_items = _bbq_items(cats, n_q, cues)
    header = {
        "format": "cuegap-qa-itembank",
        "version": 1,
        "name": "pv-sim-bbq",
        "description": "Simulated BBQ-style items (cuegap simulate --design prompt-variance)",
    }
    bank = out / "bbq_bank.jsonl"
    write_output(bank, b"".join(orjson.dumps(o) + b"\n" for o in [header, *bank_items]))
    da_path = out / "diffAware_sim.jsonl"
    write_output(da_path, b"".join(orjson.dumps(o) + b"\n" for o in _da_questions(subs, n_da)))
    rng = np.random.default_rng([seed, 15])
    written = 0
    half_b, half_d = n_q // 2, n_da // 2
    pol_neg = np.arange(half_b) % 2 == 0  # ambiguous items 0.., disambiguated half_b..
    dis_neg = (np.arange(half_b, n_q) % 2) == 0
    da_gold = np.array(["AB"[k % 2] for k in range(half_d)], dtype=object)
    da_wrong = np.array(["BA"[k % 2] for k in range(half_d)], dtype=object)

    def labels(neg: np.ndarray) -> list[np.ndarray]:
        return [np.where(neg, "A", "B"), np.where(neg, "B", "A"), np.full(len(neg), "C")]

    paths = [out / "responses_bbq.jsonl", out / "responses_da.jsonl"]
    with open_output(paths[0]) as fb, open_output(paths[1]) as fd:
        fb.write(orjson.dumps({"format": "bbq-results", "item_bank": "pv-sim-bbq"}) + b"\n")
        fd.write(orjson.dumps({"format": "bbq-results", "item_bank": da_path.stem}) + b"\n")
        for r in bbq.counts.itertuples(index=False):
            base = {
                "system": r.system,
                "factors": {"choice_format": r.choice_format, "field_order": r.field_order},
                "repeat": int(r.replicate),
            }
            suffix = "" if not cue_gap else f"-{r.condition}"
            amb = _deal(rng, [r.amb_biased, r.amb_anti, r.amb_unknown], labels(pol_neg))
            dis = _deal(rng, [r.dis_biased, r.dis_anti, r.dis_unknown], labels(dis_neg))
            for k, lab in enumerate([*amb, *dis]):
                line = {**base, "item_id": f"{r.category}-{k:03d}{suffix}", "predicted_label": lab}
                fb.write(orjson.dumps(line) + b"\n")
            written += n_q
            if progress is not None:
                progress(written)
        for r in da.counts.itertuples(index=False):
            base = {
                "system": r.system,
                "factors": {"choice_format": r.choice_format, "field_order": r.field_order},
                "repeat": int(r.replicate),
            }
            neq = _deal(
                rng,
                [r.neq_correct, r.neq_wrong, r.neq_equal],
                [da_gold, da_wrong, np.full(half_d, "C", dtype=object)],
            )
            eq = _deal(
                rng,
                [r.eq_group, r.eq_equal],
                [np.full(half_d, "A", dtype=object), np.full(half_d, "C", dtype=object)],
            )
            for k, lab in enumerate([*neq, *eq]):
                line = {**base, "item_id": f"diffAware_{r.category}_{k}", "predicted_label": lab}
                fd.write(orjson.dumps(line) + b"\n")
            written += n_da
            if progress is not None:
                progress(written)
    truth = pd.concat(
        [
            bbq.truth[~bbq.truth["metric"].isin(["s_diffaware", "s_ctxtaware"])],
            da.truth[da.truth["metric"].isin(["s_diffaware", "s_ctxtaware"])],
        ],
        ignore_index=True,
    )
    if cue_gap:
        truth = truth.rename(columns={"condition": "cue"})
    write_output(out / "truth.csv", truth.to_csv(index=False))
    info = {
        "design": "prompt-variance",
        "scale": scale,
        "seed": seed,
        "systems": names,
        "bbq_categories": cats,
        "da_subsets": subs,
        "factors": {k: list(v) for k, v in factors.items()},
        "replicates": reps,
        "bbq_questions": n_q,
        "da_questions": n_da,
        "format_sd": format_sd,
        "field_sd": field_sd,
        "cue_gap": cue_gap,
        "planted_cue_gap": {s: {"raw_amb_gap": g, "format_sd": sd} for s, (g, sd) in gaps.items()}
        if cue_gap
        else None,
        "truth_csv": "truth.csv",
    }
    truth_path = out / "truth.json"
    write_output(truth_path, json.dumps(info, indent=2) + "\n")
    return PVSimulationResult(out, [bank, da_path], paths, truth_path, written, n_sys)
