"""Prompt variants for the moral-dilemma simulator: every response written under each of K
variants (``v0`` … ``v{K-1}``), with a planted per-variant effect on the Cue Visibility Gap
of chosen systems (issue 15: a format-insensitive and a format-driven gap).

Planting model
--------------
Under variant j a *format-driven* system's performativeness (the rise of its against rate
under puzzled cues) is shifted by ``shift_j / (100 · w_hard)`` with w_hard = 1.2 the
weight of the hard puzzle (:data:`cuegap.designs.dilemma.simulate._params.AGAINST_WEIGHT`), so that
its
true Direct → Puzzled-hard gap moves by about ``shift_j`` pp; ``shift_j`` alternates
+effect, −effect over the variants (0 for the last one when K is odd), so the shifts sum
to zero. Every other parameter, and the Neutral decisions, are the system's own in every
variant; each variant draws its answers from its own random stream. Variant ``v0`` of a
system without a shift is byte-for-byte what :func:`cuegap.designs.dilemma.simulate.simulate` writes
without variants. ``truth.json``'s expected rates are those without a shift.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import IO, Any

import numpy as np

from cuegap.designs.dilemma.simulate._design import Design
from cuegap.designs.dilemma.simulate._params import AGAINST_WEIGHT, SystemParams, draw_system

HARD = AGAINST_WEIGHT["puzzled:hard"]


def variant_labels(n: int) -> list[str]:
    """``v0`` … ``v{n-1}``; ``n`` must be at least 1."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"prompt_variants must be an integer >= 1, but got {n!r}")
    return [f"v{j}" for j in range(n)]


def variant_shifts(
    n_systems: int, n_variants: int, effect_pp: float, driven: Sequence[int] | None
) -> np.ndarray:
    """Planted gap shift (pp) per system (rows) and variant (columns).

    Parameters
    ----------
    n_systems, n_variants : int
    effect_pp : float
        Size of the alternating shift; 0 plants none.
    driven : sequence of int, optional
        1-based numbers of the format-driven systems; default the odd-numbered ones
        (``sim-system-01``, ``-03``, …).
    """
    if not np.isfinite(effect_pp) or effect_pp < 0:
        raise ValueError(f"format_effect_pp must be a number >= 0, but got {effect_pp!r}")
    chosen = list(range(1, n_systems + 1, 2)) if driven is None else list(driven)
    bad = [i for i in chosen if not 1 <= i <= n_systems]
    if bad:
        raise ValueError(f"format_driven must name systems 1..{n_systems}, but got {bad}")
    pattern = np.array([(1.0 if j % 2 == 0 else -1.0) for j in range(n_variants)])
    if n_variants % 2:
        pattern[-1] = 0.0
    out = np.zeros((n_systems, n_variants))
    for i in chosen:
        out[i - 1] = effect_pp * pattern
    return out


def write_variants(
    write: Callable[..., tuple[int, list[dict]]],
    fh: IO[bytes],
    p: SystemParams,
    design: Design,
    *args: Any,
    variants: list[str],
    shifts: np.ndarray,
    high_abstention: bool,
) -> tuple[int, list[dict]]:
    """Write one system's responses under every variant with ``write`` (the simulator's
    per-system writer); its realised counts are summed over the variants."""
    seed = args[1]
    total, realised = 0, []
    for j, label in enumerate(variants):
        pj = p
        if shifts[j] != 0:
            perf = p.performativeness + shifts[j] / (100 * HARD)
            drawn = draw_system(seed, p.index, perf, high_abstention, design)
            pj = replace(p, a_a=drawn.a_a, g_a=drawn.g_a, r_a=drawn.r_a)
        count, rows = write(fh, pj, design, *args, variant=label)
        total += count
        for r in rows:
            realised.append({**r, "prompt_variant": label} if len(variants) > 1 else r)
    return total, realised


def variants_truth(names: list[str], variants: list[str], shifts: np.ndarray) -> dict[str, Any]:
    """``{"prompt_variants": record}`` for ``truth.json``; empty without variants."""
    if len(variants) < 2:
        return {}
    shift = {n: [round(float(x), 6) for x in row] for n, row in zip(names, shifts, strict=True)}
    record = {
        "labels": variants,
        "gap_shift_pp": shift,
        "format_driven": [n for n, row in shift.items() if any(row)],
        "note": "planted shift of each system's Direct -> Puzzled-hard gap under each variant "
        "(about; exact in the against intercept); expected rates are those without a shift",
    }
    return {"prompt_variants": record}
