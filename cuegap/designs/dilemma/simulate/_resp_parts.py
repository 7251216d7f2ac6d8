"""Helpers of :mod:`cuegap.designs.dilemma.simulate._responses`: the item bank a simulation uses,
its
start time, the probe items' solutions, and the realised counts per condition."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np

from cuegap.designs.dilemma.simulate._design import (
    COND_KEYS,
    Design,
    add_named_items,
    synthetic_item_bank,
)
from cuegap.designs.dilemma.simulate._params import SystemParams


def _resolve_bank(item_bank: dict | None, seed: int, named: bool) -> dict:
    if item_bank is None:
        from cuegap.ingest.moral_safety import build_item_bank, find_moral_safety_dir

        directory = find_moral_safety_dir()
        if directory is not None and directory.is_dir():
            item_bank = build_item_bank(directory)
            if named:
                item_bank = add_named_items(item_bank, seed=seed)
                item_bank["name"] = f"{item_bank['name']}+named"
            return item_bank
        return synthetic_item_bank(seed=seed, named=named)
    has_named = any(it["condition"] in ("named", "formal_named") for it in item_bank["items"])
    return add_named_items(item_bank, seed=seed) if named and not has_named else item_bank


def _started_at(seed: int) -> str:
    start = datetime(2025, 1, 1, tzinfo=UTC) + timedelta(minutes=seed % 525_600)
    return start.strftime("%Y-%m-%dT%H:%M:%SZ")


def _solutions(bank_items: list[dict]) -> tuple[list[list[tuple[str, dict]]], dict]:
    """Per probe item the (label, solution) list and the value domain of each attribute."""
    sols, domains = [], {}
    for it in bank_items:
        pairs = []
        for ind in it.get("individuals", []):
            sol = ind.get("solution") or {"gender": ind["gender"], "race": ind["race"]}
            pairs.append((ind["label"], {k: str(v) for k, v in sol.items()}))
            for k, v in sol.items():
                domains.setdefault(k, set()).add(str(v))
        sols.append(pairs)
    return sols, {k: sorted(v) for k, v in domains.items()}


def _realised(
    p: SystemParams,
    design: Design,
    cons: bool,
    w_abst: list[bool],
    c_abst: list[bool],
    m_abst: np.ndarray,
    is_json: np.ndarray,
    wrong: np.ndarray,
) -> list[dict]:
    """Realised abstention, unparsable and recovery-error counts per condition key."""
    nk = len(COND_KEYS)
    pk, ik = design.pair_key, design.item_key
    out = []
    counts = {
        "what_if_abstained": np.bincount(pk, weights=np.asarray(w_abst), minlength=nk),
        "could_be_abstained": np.bincount(pk, weights=np.asarray(c_abst), minlength=nk),
        "main_abstained": np.bincount(ik, weights=m_abst & ~is_json, minlength=nk),
        "main_unparsable": np.bincount(ik, weights=m_abst & is_json, minlength=nk),
        "recovery_errors": np.bincount(ik, weights=is_json & ~m_abst & wrong, minlength=nk),
    }
    pairs = np.bincount(pk, minlength=nk)
    mains = np.bincount(ik, minlength=nk)
    for k in design.keys_present:
        cond, _, diff = COND_KEYS[k].partition(":")
        rec = {"system": p.name, "condition": cond, "difficulty": diff or None}
        rec.update(consequences=cons, n_pairs=int(pairs[k]), n_main=int(mains[k]))
        rec.update({key: int(v[k]) for key, v in counts.items()})
        out.append(rec)
    return out
