"""Response generation and writing for :func:`cuegap.designs.dilemma.simulate.simulate`.

Per system the random draws are vectorised over all (item, individual) pairs of a
consequences setting; lines are serialised with orjson and written one chunk (one system
and consequences setting) at a time.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import numpy as np
import orjson

import cuegap
from cuegap.designs.dilemma.simulate import _text as tx
from cuegap.designs.dilemma.simulate._design import COND_KEYS, Design
from cuegap.designs.dilemma.simulate._params import (
    AGAINST_WEIGHT,
    DECISION_KEEP,
    SystemParams,
    allocate,
    draw_system,
    expected_records,
    expit,
    neutral_decisions,
    params_record,
)
from cuegap.designs.dilemma.simulate._resp_parts import (
    _realised,
    _resolve_bank,
    _solutions,
    _started_at,
)
from cuegap.designs.dilemma.simulate._variants import (
    variant_labels,
    variant_shifts,
    variants_truth,
    write_variants,
)
from cuegap.files import open_output, refuse_link, write_output

RUNNER = "cuegap-simulate"
JSON_CONDITIONS = ("puzzled", "formal_named")
MODEL_DESCRIPTION = (
    "Per system s and consequences setting, s_d = b_d with probability p_s ~ U(0.25, 0.5) "
    "(without consequences, s_d copies the with-consequences decision with probability "
    f"{DECISION_KEEP}, else is redrawn). A what_if answer flips away from s_d with "
    "probability expit(a_f[c] + g_f[c, gender] + r_f[c, race]) when s_d != b_d (favor) and "
    "expit(a_a[c] + g_a[c, gender] + r_a[c, race]) when s_d = b_d (against); without "
    "consequences each logit adds its no_consequences_shift. The against intercept of "
    "condition c is logit(base_against + against_weight[c] * performativeness). Could-be "
    "P(yes) = expit(intercept[c] + status + group effects), group effects full for bad "
    "status and scaled by 0.3 otherwise. Expected rates are exact means of the event "
    "probabilities over the eligible (d, X) pairs given the realised s_d; abstentions are "
    "independent of the answer, so they estimate the same rates among answered probes."
)


@dataclass
class SimulationResult:
    """Where :func:`simulate` wrote its files and what it wrote."""

    out_dir: Path
    itembank_path: Path
    responses_path: Path
    truth_path: Path
    n_responses: int
    n_systems: int
    item_bank_name: str


def _write_system(
    fh: IO[bytes],
    p: SystemParams,
    design: Design,
    decisions: dict[bool, np.ndarray],
    seed: int,
    solutions: list[list[tuple[str, dict]]],
    domains: dict,
    variant: str = "v0",
) -> tuple[int, list[dict]]:
    """Write all responses of one system under one prompt variant (``v0``: the streams of a
    run without variants); return the count and realised-event records."""
    extra = [] if variant == "v0" else [int(variant[1:])]
    rng = np.random.default_rng([seed, p.index, 1, *extra])
    dumps = orjson.dumps
    name, sid = p.name, p.name if variant == "v0" else f"{p.name}-{variant}"
    items = design.probe_items
    n_items, n_pairs = len(items), len(design.pair_item)
    pk, pd = design.pair_key, design.pair_dilemma
    is_json = np.array([it["condition"] in JSON_CONDITIONS for it in items], bool)
    n_ind = np.diff(design.item_start)
    starts = design.item_start.tolist()
    labels = design.pair_label
    item_ids = [it["item_id"] for it in items]
    counter = 0
    realised: list[dict] = []
    for cons in (True, False):
        s = decisions[cons]
        lf, la = p.logits(design, cons)
        s_pair = s[pd]
        p_flip = np.where(s_pair != design.benefit[pd], expit(lf), expit(la))
        w = (s_pair ^ (rng.random(n_pairs) < p_flip)).tolist()
        w_abst = (rng.random(n_pairs) < p.abst_what_if[pk]).tolist()
        w_form = rng.choice(len(tx.OPTION_FORMS), n_pairs, p=tx.OPTION_P).tolist()
        w_absf = rng.choice(len(tx.ABSTAIN_FORMS), n_pairs, p=tx.ABSTAIN_P).tolist()
        yes = (rng.random(n_pairs) < p.p_yes(design)).tolist()
        c_abst = (rng.random(n_pairs) < p.abst_could_be[pk]).tolist()
        yes_form = rng.choice(len(tx.YES_FORMS), n_pairs, p=tx.YES_P).tolist()
        no_form = rng.choice(len(tx.NO_FORMS), n_pairs, p=tx.NO_P).tolist()
        c_absf = rng.choice(len(tx.ABSTAIN_FORMS), n_pairs, p=tx.ABSTAIN_P).tolist()
        m_rate = np.where(is_json, p.unparsable, p.abst_main[design.item_key])
        m_abst_arr = rng.random(n_items) < m_rate
        m_abst = m_abst_arr.tolist()
        m_absf = rng.choice(len(tx.ABSTAIN_FORMS), n_items, p=tx.ABSTAIN_P).tolist()
        m_trunc = (rng.random(n_items) < 0.5).tolist()
        m_cut = rng.random(n_items).tolist()
        m_form = rng.choice(len(tx.DIRECT_MAIN_FORMS), n_items, p=tx.DIRECT_MAIN_P).tolist()
        m_letter = np.floor(rng.random(n_items) * np.maximum(n_ind, 1)).astype(int).tolist()
        m_wrap = rng.choice(len(tx.JSON_WRAPPERS), n_items, p=tx.JSON_WRAP_P).tolist()
        wrong_arr = rng.random(n_items) >= p.recovery[design.item_key]
        wrong = wrong_arr.tolist()
        n_form = rng.choice(len(tx.OPTION_FORMS), len(design.neutral_items), p=tx.OPTION_P)
        rng_wrong = np.random.default_rng([seed, p.index, 3, int(cons), *extra])
        item_s = s[design.item_dilemma].tolist()
        json_flags = is_json.tolist()

        lines = []
        for (item_id, d), form in zip(design.neutral_items, n_form.tolist(), strict=True):
            counter += 1
            text = tx.OPTION_TEXT[form][int(s[d])]
            row = {"system": name, "item_id": item_id, "probe": "main", "consequences": cons}
            row.update(prompt_variant=variant, response=text, sample_id=f"{sid}-{counter:06d}")
            lines.append(dumps(row))
        for i in range(n_items):
            item_id, lo, hi = item_ids[i], starts[i], starts[i + 1]
            if m_abst[i]:
                if json_flags[i] and m_trunc[i]:
                    text = tx.truncated_json(tx.puzzle_json(solutions[i], item_s[i]), m_cut[i])
                else:
                    text = tx.ABSTAIN_TEXT[m_absf[i]]
            elif json_flags[i]:
                sol = solutions[i]
                if wrong[i]:
                    sol = tx.wrong_recovery(sol, domains, rng_wrong)
                text = tx.render_json(tx.puzzle_json(sol, item_s[i]), m_wrap[i])
            else:
                letter = labels[lo + m_letter[i]] if hi > lo else "A"
                text = tx.DIRECT_MAIN_TEXT[m_form[i]][letter][item_s[i]]
            counter += 1
            row = {"system": name, "item_id": item_id, "probe": "main", "consequences": cons}
            row.update(prompt_variant=variant, response=text, sample_id=f"{sid}-{counter:06d}")
            lines.append(dumps(row))
            for j in range(lo, hi):
                if c_abst[j]:
                    text = tx.ABSTAIN_TEXT[c_absf[j]]
                elif yes[j]:
                    text = tx.yes_no_text(yes_form[j], True, labels[j])
                else:
                    text = tx.yes_no_text(no_form[j], False, labels[j])
                counter += 1
                lines.append(
                    dumps(
                        {
                            "system": name,
                            "item_id": item_id,
                            "probe": "could_be",
                            "individual": labels[j],
                            "consequences": cons,
                            "prompt_variant": variant,
                            "response": text,
                            "sample_id": f"{sid}-{counter:06d}",
                        }
                    )
                )
            for j in range(lo, hi):
                text = tx.ABSTAIN_TEXT[w_absf[j]] if w_abst[j] else tx.OPTION_TEXT[w_form[j]][w[j]]
                counter += 1
                lines.append(
                    dumps(
                        {
                            "system": name,
                            "item_id": item_id,
                            "probe": "what_if",
                            "individual": labels[j],
                            "consequences": cons,
                            "prompt_variant": variant,
                            "response": text,
                            "sample_id": f"{sid}-{counter:06d}",
                        }
                    )
                )
        lines.append(b"")
        fh.write(b"\n".join(lines))
        realised.extend(_realised(p, design, cons, w_abst, c_abst, m_abst_arr, is_json, wrong_arr))
    return counter, realised


def simulate(
    out_dir: Path,
    *,
    systems: int = 3,
    seed: int = 0,
    item_bank: dict | None = None,
    named: bool = False,
    progress: Callable[[int, int], None] | None = None,
    prompt_variants: int = 1,
    format_effect_pp: float = 0.0,
    format_driven: Sequence[int] | None = None,
) -> SimulationResult:
    """Simulate audited systems answering a Moral Safety item bank.

    Parameters
    ----------
    out_dir
        Directory for ``itembank.json``, ``responses.jsonl`` and ``truth.json``.
    systems
        Number of simulated systems (``sim-system-01`` ...).
    seed
        Seed of everything; the same seed gives byte-identical files.
    item_bank
        Bank to answer; by default the real design (``build_item_bank`` on
        ``find_moral_safety_dir()``) when the data directory exists, else
        ``synthetic_item_bank(seed=seed, named=named)``.
    named
        Add named/formal_named items (see ``add_named_items``) when the bank has none; the
        real bank is then renamed ``moral_safety+named``.
    progress
        Called as ``progress(systems_done, systems)`` after each system.
    prompt_variants, format_effect_pp, format_driven
        Answer under this many prompt variants; the gap of the format-driven systems moves
        by ±``format_effect_pp`` per variant (:mod:`cuegap.designs.dilemma.simulate._variants`).

    Returns
    -------
    SimulationResult
        Paths and counts of what was written.
    """
    if systems < 1:
        raise ValueError("systems must be >= 1")
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    for name in ("itembank.json", "responses.jsonl", "truth.json"):
        refuse_link(out_dir / name)  # before anything is written
    bank = _resolve_bank(item_bank, seed, named)
    design = Design.from_bank(bank)
    solutions, domains = _solutions(design.probe_items)
    perf, high = allocate(seed, systems)
    params = [draw_system(seed, i, perf[i], i == high, design) for i in range(systems)]
    variants = variant_labels(prompt_variants)
    shifts = variant_shifts(systems, len(variants), format_effect_pp, format_driven)

    itembank_path = out_dir / "itembank.json"
    write_output(itembank_path, orjson.dumps(bank))
    header = {
        "format": "cuegap-responses",
        "version": 1,
        "item_bank": bank["name"],
        "runner": RUNNER,
        "runner_version": cuegap.__version__,
        "started_at": _started_at(seed),
        "settings": {"temperature": 0, "seed": seed},
        "systems": {
            p.name: {
                "provider": "simulated",
                "version": "1",
                "metadata": {"capability": p.capability, "alignment": p.alignment},
            }
            for p in params
        },
    }
    responses_path = out_dir / "responses.jsonl"
    n_responses = 0
    records: dict[str, list] = {k: [] for k in ("rates", "pooled", "could_be", "realised")}
    systems_out, neutral_out = [], []
    with open_output(responses_path) as fh:
        fh.write(orjson.dumps(header) + b"\n")
        for p in params:
            decisions = neutral_decisions(p, design.benefit, seed)
            count, realised = write_variants(
                _write_system, fh, p, design, decisions, seed, solutions, domains,
                variants=variants, shifts=shifts[p.index], high_abstention=p.index == high,
            )  # fmt: skip
            n_responses += count
            rates, pooled, could = expected_records(p, design, decisions)
            records["rates"] += rates
            records["pooled"] += pooled
            records["could_be"] += could
            records["realised"] += realised
            systems_out.append({**params_record(p, design), "high_abstention": p.index == high})
            for cons in (True, False):
                dec = decisions[cons]
                neutral_out.append(
                    {
                        "system": p.name,
                        "consequences": cons,
                        "benefit_share": round(float((dec == design.benefit).mean()), 8),
                        "decisions": {
                            did: f"option{int(v) + 1}"
                            for did, v in zip(design.dilemma_ids, dec.tolist(), strict=True)
                        },
                    }
                )
            if progress is not None:
                progress(p.index + 1, systems)

    per_key = np.bincount(design.item_key, minlength=len(COND_KEYS))
    truth = {
        "format": "cuegap-simulation-truth",
        "version": 1,
        "seed": seed,
        "item_bank": bank["name"],
        "runner_version": cuegap.__version__,
        "model": {
            "description": MODEL_DESCRIPTION,
            "against_weight": AGAINST_WEIGHT,
            "high_abstention_system": None if high is None else params[high].name,
        },
        "design": {
            "n_dilemmas": len(design.dilemma_ids),
            "n_neutral_items": len(design.neutral_items),
            "n_items": {COND_KEYS[k]: int(per_key[k]) for k in design.keys_present},
            "n_pairs": {
                COND_KEYS[k]: int((design.pair_key == k).sum()) for k in design.keys_present
            },
            "genders": design.genders,
            "races": design.races,
            "n_systems": systems,
            "responses_per_system": n_responses // systems,
            "n_responses": n_responses,
        },
        "systems": systems_out,
        "neutral_decisions": neutral_out,
        "rates": records["rates"],
        "pooled_rates": records["pooled"],
        "could_be_rates": records["could_be"],
        "realised": records["realised"],
    }
    truth.update(variants_truth([p.name for p in params], variants, shifts))
    truth_path = out_dir / "truth.json"
    write_output(truth_path, orjson.dumps(truth, option=orjson.OPT_INDENT_2) + b"\n")
    return SimulationResult(
        out_dir=out_dir,
        itembank_path=itembank_path,
        responses_path=responses_path,
        truth_path=truth_path,
        n_responses=n_responses,
        n_systems=systems,
        item_bank_name=bank["name"],
    )
