"""Simulated QA-design audits with planted truth (``cuegap simulate --design qa``).

Planting model
--------------
Per system ``s`` (seeded draws, ``np.random.default_rng([seed, s, stream])``), on the
bias-score scale of seed 001 §4.2 and under the zero-shot strategy:

* **Explicit cues.** Ambiguous accuracy ``U(0.76, 0.98)`` and bias ``s_amb`` ``U(0.02,
  0.08)`` (the range of seed 001's Table 2, explicit columns), capped at 0.9·(1 − acc).
* **Implicit cues.** Two systems in three are *performative*: accuracy ``U(0.16, 0.39)``
  and bias ``U(0.26, 0.40)`` (Table 2, implicit columns). The others answer implicit
  items exactly as explicit ones: their planted gap is 0.
* **Controls** (neutral characteristic, no characteristic): accuracy ``U(0.85, 0.99)``
  and bias 0.
* **Dimensions.** Each dimension shifts accuracy and bias by ``N(0, 0.03)`` (clipped to
  valid values).
* **Disambiguated items.** "Unknown" with probability 0.02; otherwise the gold person with
  probability acc ± β (+ when the gold answer is the stereotype-consistent person), acc
  ``U(0.91, 0.97)`` (implicit performative ``U(0.85, 0.95)``), β ``U(0, 0.03)``.
* **Strategies.** ``safety``, ``few-shot``, ``cot`` multiply the ambiguous bias by 0.40,
  0.16 and 0.43 (seed 001's reductions of 60 %, 84 %, 57 %): accuracy becomes
  1 − (1 − acc)·√f and the raw bias b·√f, so s_amb = (1 − acc)·b scales by f.
* **Parsing.** A system answers unparsably with probability ``U(0.002, 0.02)``,
  independently of the answer, so the planted rates are those of the parsable answers.

Ambiguous answers: unknown with probability acc, the stereotype-consistent person with
(1 − acc)(1 + b)/2, the other with (1 − acc)(1 − b)/2, where b = s_amb / (1 − acc).

``truth.json`` holds the exact expected values of every metric per (system, strategy,
cue, context, dimension) given the realised items, the system means over dimensions, and
the planted explicit-vs-implicit gaps in cuegap's sign convention (positive = looks
fairer when the identity is stated).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import orjson

from cuegap.designs.qa._simulate_bank import (
    CUES,
    DIMENSIONS,
    qa_item_bank,
    stereotype_consistent_role,
)
from cuegap.files import open_output, refuse_link, write_output

STRATEGIES = {"zero-shot": 1.0, "safety": 0.40, "few-shot": 0.16, "cot": 0.43}
DISAMBIG_UNKNOWN = 0.02
UNPARSABLE = ("I would rather not answer that.", "Sorry, something went wrong.", "")
#: Scales of ``simulate --design qa``: (systems, templates per dimension).
SCALES = {"small": (4, 24), "paper": (11, 667)}


@dataclass
class QASimulationResult:
    """Where :func:`simulate_qa` wrote its files and what it wrote."""

    out_dir: Path
    itembank_path: Path
    responses_path: Path
    truth_path: Path
    n_items: int
    n_responses: int
    n_systems: int


def _system_cells(s: int, seed: int) -> dict[tuple[str, str], dict[str, float]]:
    """Planted zero-shot parameters per (cue, dimension) of one system."""
    rng = np.random.default_rng([seed, s, 1])
    acc_e, acc_i = rng.uniform(0.76, 0.98), rng.uniform(0.16, 0.39)
    bias_e, bias_i = rng.uniform(0.02, 0.08), rng.uniform(0.26, 0.40)
    dis_e, dis_i = rng.uniform(0.91, 0.97), rng.uniform(0.85, 0.95)
    beta = rng.uniform(0.0, 0.03)
    acc_c = rng.uniform(0.85, 0.99, size=2)
    performative = s % 3 != 2
    if not performative:
        acc_i, bias_i, dis_i = acc_e, bias_e, dis_e
    base = {
        "explicit": (acc_e, bias_e, dis_e),
        "implicit": (acc_i, bias_i, dis_i),
        "control_neutral": (acc_c[0], 0.0, dis_e),
        "control_none": (acc_c[1], 0.0, dis_e),
    }
    cells = {}
    for dimension in DIMENSIONS:
        d_acc, d_bias = rng.normal(0, 0.03, size=2)
        for cue in CUES:
            acc, bias, dis = base[cue]
            a = float(np.clip(acc + d_acc, 0.05, 0.98))
            b = 0.0 if bias == 0 else float(bias + d_bias)
            b = float(np.clip(b, -0.9 * (1 - a), 0.9 * (1 - a)))
            cells[(cue, dimension)] = {"acc_amb": a, "s_amb": b, "acc": dis, "beta": beta}
    return cells


def _strategy_params(cell: dict[str, float], factor: float) -> tuple[float, float]:
    """(unknown probability, raw bias) of an ambiguous cell under a strategy."""
    root = np.sqrt(factor)
    acc = 1 - (1 - cell["acc_amb"]) * root
    raw = cell["s_amb"] / (1 - cell["acc_amb"]) * root
    return float(acc), float(raw)


def _answer_text(rng: np.random.Generator, option: dict, unknown: bool) -> str:
    form = int(rng.integers(7))
    label, text = option["label"], option["text"]
    if form == 0:
        return label
    if form == 1:
        return f"({label.lower()})"
    if form == 2:
        return f"Answer: {label}"
    if form == 3:
        return f"The answer is {label}."
    if form == 4:
        return "There is not enough information to tell." if unknown else text
    if form == 5:
        return f"Let me reason about who is described.\nFinal Answer: {text}"
    return f"{label}) {text}"


def _expected(items: list[dict], cell: dict[str, float], factor: float) -> dict[str, float]:
    """Exact expected metrics of one (cue, context, dimension) cell over its items."""
    context = items[0]["context_condition"]
    if context == "ambiguous":
        acc, raw = _strategy_params(cell, factor)
        return {"acc_amb": acc, "s_amb_raw": raw, "s_amb": (1 - acc) * raw}
    consistent = np.mean(
        [
            next(o["role"] for o in it["options"] if o["label"] == it["gold"])
            == stereotype_consistent_role(it["polarity"])
            for it in items
        ]
    )
    acc, beta = cell["acc"], cell["beta"]
    acc_dis = consistent * (acc + beta) + (1 - consistent) * (acc - beta)
    st = consistent * (acc + beta) + (1 - consistent) * (1 - acc + beta)
    return {
        "acc_dis": float(acc_dis),
        "acc_dis_bbq": float((1 - DISAMBIG_UNKNOWN) * acc_dis),
        "s_dis": float(2 * st - 1),
    }


def _answer_role(
    rng: np.random.Generator, item: dict, cell: dict[str, float], factor: float
) -> str:
    st_role = stereotype_consistent_role(item["polarity"])
    anti_role = "non_target" if st_role == "target" else "target"
    u = rng.random()
    if item["context_condition"] == "ambiguous":
        acc, raw = _strategy_params(cell, factor)
        if u < acc:
            return "unknown"
        return st_role if u < acc + (1 - acc) * (1 + raw) / 2 else anti_role
    if u < DISAMBIG_UNKNOWN:
        return "unknown"
    gold = next(o["role"] for o in item["options"] if o["label"] == item["gold"])
    p = cell["acc"] + (cell["beta"] if gold == st_role else -cell["beta"])
    other = anti_role if gold == st_role else st_role
    return gold if rng.random() < p else other


def simulate_qa(
    out_dir: Path,
    *,
    systems: int | None = None,
    templates_per_dimension: int | None = None,
    scale: str = "small",
    seed: int = 2026,
    progress: Callable[[int, int], None] | None = None,
) -> QASimulationResult:
    """Write a planted-truth QA dataset: ``qa_itembank.jsonl`` (``cuegap-qa-itembank``),
    ``qa_results.jsonl`` (``bbq-results``, joined by ``item_id``) and ``truth.json``.

    Parameters
    ----------
    out_dir : Path
        Created if missing.
    systems, templates_per_dimension : int, optional
        Override the scale's values. Each template gives 16 items; every system answers
        every item under each of the four strategies.
    scale : {"small", "paper"}
        ``paper`` is seed 001's scale: 11 systems and ≈8,000 items per cue type and
        context condition (2.8 million responses).
    seed : int
    progress : callable, optional
        Called with (systems done, systems) after each system.

    Returns
    -------
    QASimulationResult
    """
    if scale not in SCALES:
        raise ValueError(f"--scale should be one of {', '.join(SCALES)} but got {scale!r}")
    n_sys = systems if systems is not None else SCALES[scale][0]
    n_tpl = templates_per_dimension or SCALES[scale][1]
    if n_sys < 1 or n_tpl < 2:
        raise ValueError("need at least 1 system and 2 templates per dimension")
    out_dir.mkdir(parents=True, exist_ok=True)
    for name in ("qa_itembank.jsonl", "qa_results.jsonl", "truth.json"):
        refuse_link(out_dir / name)  # before anything is written
    items = qa_item_bank(n_tpl, seed)
    bank_path, resp_path = out_dir / "qa_itembank.jsonl", out_dir / "qa_results.jsonl"
    with open_output(bank_path) as fh:
        fh.writelines(orjson.dumps(it) + b"\n" for it in items)
    groups: dict[tuple[str, str, str], list[dict]] = {}
    for it in items:
        groups.setdefault((it["cue"], it["context_condition"], it["dimension"]), []).append(it)
    truth: dict = {"model": __doc__.split("Planting model", 1)[1].strip(), "systems": {}}
    n_resp = 0
    with open_output(resp_path) as fh:
        for s in range(n_sys):
            name = f"sim-qa-system-{s + 1:02d}"
            cells = _system_cells(s, seed)
            rng = np.random.default_rng([seed, s, 2])
            unparsable = rng.uniform(0.002, 0.02)
            for strategy, factor in STRATEGIES.items():
                lines = []
                for it in items:
                    cell = cells[(it["cue"], it["dimension"])]
                    if rng.random() < unparsable:
                        text = UNPARSABLE[int(rng.integers(len(UNPARSABLE)))]
                    else:
                        role = _answer_role(rng, it, cell, factor)
                        option = next(o for o in it["options"] if o["role"] == role)
                        text = _answer_text(rng, option, role == "unknown")
                    row = {"system": name, "item_id": it["item_id"], "strategy": strategy}
                    lines.append(orjson.dumps(row | {"model_output": text}) + b"\n")
                fh.writelines(lines)
                n_resp += len(lines)
            truth["systems"][name] = _system_truth(cells, groups)
            truth["systems"][name]["performative"] = s % 3 != 2
            truth["systems"][name]["unparsable_rate"] = float(unparsable)
            if progress is not None:
                progress(s + 1, n_sys)
    truth_path = out_dir / "truth.json"
    write_output(truth_path, json.dumps(truth, indent=1))
    return QASimulationResult(out_dir, bank_path, resp_path, truth_path, len(items), n_resp, n_sys)


def _system_truth(cells: dict, groups: dict) -> dict:
    """Expected metrics per strategy × cue × context × dimension, their means over
    dimensions, and the planted zero-shot gaps."""
    cells_out, means = [], {}
    for strategy, factor in STRATEGIES.items():
        for (cue, context, dimension), its in sorted(groups.items()):
            row = {"strategy": strategy, "cue": cue, "context": context}
            row |= {"dimension": dimension, **_expected(its, cells[(cue, dimension)], factor)}
            cells_out.append(row)
            for metric, value in row.items():
                if metric not in ("strategy", "cue", "context", "dimension"):
                    means.setdefault((strategy, cue, metric), []).append(value)
    system = [
        {"strategy": st, "cue": cue, "metric": m, "value": float(np.mean(v))}
        for (st, cue, m), v in sorted(means.items())
    ]
    mean = {(r["strategy"], r["cue"], r["metric"]): r["value"] for r in system}
    gap = {}
    for metric in ("acc_amb", "acc_dis", "s_amb", "s_dis"):
        e, i = mean[("zero-shot", "explicit", metric)], mean[("zero-shot", "implicit", metric)]
        gap[metric] = e - i if metric.startswith("acc") else i - e
    return {"cells": cells_out, "system_scores": system, "gap": gap}


__all__ = ["SCALES", "STRATEGIES", "QASimulationResult", "simulate_qa"]
