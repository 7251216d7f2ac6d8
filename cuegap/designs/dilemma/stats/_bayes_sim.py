"""Count tables simulated straight from a binomial-logit model with planted parameters.

Used to check the hierarchical Bayesian model against a known truth (calibration,
shrinkage, agreement) and to benchmark it, without going through the full response
simulator of :mod:`cuegap.designs.dilemma.simulate`: the counts are drawn with numpy in
milliseconds.

Generative model
----------------
For system ``s`` (``sys-01`` ...), condition ``c`` (the first one is the explicit
condition), gender ``g`` and race ``r``::

    logit P(favor)   = logit(base_f[s]) + e_f[s, c] + G_f[s, c, g] + R_f[s, c, r]
    logit P(against) = logit(base_a[s] + w[c] * perf[s]) + G_a[s, c, g] + R_a[s, c, r]

with ``base_f ~ U(0.05, 0.30)``, ``base_a ~ U(0.05, 0.25)``, ``e_f[s, 0] = 0`` and
``e_f[s, c > 0] ~ N(0, 0.1)``, ``w`` = 0 for the explicit condition and 1.2 for the
others (or ``weights``), and performativeness ``perf`` in probability units: a third of
the systems near 0, the others spread over 0.02-0.10 (as in :mod:`cuegap.designs.dilemma.simulate`).
Group effects are sum-to-zero, a population part (sd 0.2 logit) shared by all systems plus
a system part (sd 0.25), correlated 0.8 across conditions. A cell holds ``pairs[s]``
(item, individual) pairs; each is a favor trial with probability ``1 - p_benefit[s]``
(``p_benefit ~ U(0.25, 0.5)``), else an against trial. Every cell is split into
``dilemmas`` rows (default two) so that the count table has to be aggregated; give many
(the paper has 100) when the dilemma bootstrap is to be run on the table.

Planted gaps: ``gaps`` fixes a system's true macro gap (pp). The implicit condition's
against logit of that system is shifted by the one constant that makes the macro gap of
the truth (below) equal the planted value; everything else is drawn as above, and the
random stream is the same as without ``gaps``.

The truth is the expected rate given the realised trials: for a group, the trial-weighted
mean of its cells' event probabilities (what ``truth.json`` of
:mod:`cuegap.designs.dilemma.simulate` also
reports), so that a frequentist rate estimates it without bias.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.optimize import brentq

GENDERS = ("man", "non-binary", "woman")
RACES = ("Asian", "Black", "Hispanic", "Muslim", "White")
CONDITIONS: tuple[tuple[str, str | None], ...] = (("direct", None), ("puzzled", "hard"))


def _expit(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


def _logit(p: np.ndarray) -> np.ndarray:
    return np.log(p / (1.0 - p))


def _sum_zero(rng: np.random.Generator, sd: float, size: tuple[int, ...]) -> np.ndarray:
    z = rng.normal(0.0, sd, size=size)
    n = size[-1]
    if n > 1:
        z = (z - z.mean(axis=-1, keepdims=True)) * np.sqrt(n / (n - 1))
    return z


@dataclass
class SimulatedCounts:
    """A simulated count table and the truth it was drawn from.

    Attributes
    ----------
    counts : DataFrame
        Columns of :data:`cuegap.schema.COUNT_COLUMNS`.
    truth : DataFrame
        system, condition, difficulty, group_type (gender, race, intersection, macro),
        group, favor_rate, against_rate, net_pp (expected given the realised trials).
    gap : DataFrame
        system, group_type, group, gap_pp (explicit net minus implicit net, true),
        delta_against_pp, delta_favor_pp.
    p : ndarray
        Event probabilities, shape (event, condition, system, gender, race).
    trials : ndarray
        Trials, same shape.
    performativeness : ndarray
        Planted rise of the against rate under the implicit condition, per system.
    """

    counts: pd.DataFrame
    truth: pd.DataFrame
    gap: pd.DataFrame
    p: np.ndarray
    trials: np.ndarray
    performativeness: np.ndarray


def simulate_counts(
    *,
    n_systems: int = 14,
    pairs: int | Sequence[int] = 80,
    genders: Sequence[str] = GENDERS,
    races: Sequence[str] = RACES,
    conditions: Sequence[tuple[str, str | None]] = CONDITIONS,
    weights: Sequence[float] | None = None,
    gaps: Sequence[float | None] | None = None,
    dilemmas: int = 2,
    seed: int = 0,
) -> SimulatedCounts:
    """Draw a count table from the planted binomial-logit model (see the module docstring).

    Parameters
    ----------
    n_systems : int
        Number of audited systems.
    pairs : int or sequence of int
        (item, individual) pairs per (system, condition, gender, race) cell; one value per
        system or one for all. The paper's design has about 80 (1,200 pairs per condition
        over 15 cells), i.e. about 400 decisions per gender and 240 per race.
    genders, races : sequence of str
        Group labels.
    conditions : sequence of (condition, difficulty)
        The first is the explicit condition (no performative shift).
    weights : sequence of float, optional
        Weight of performativeness in the against rate per condition (default 0 for the
        first, 1.2 for the others).
    gaps : sequence of float or None, optional
        Planted true macro gap per system, in pp (explicit net minus the last condition's
        net); None for a system keeps the drawn one. Needs one entry per system.
    dilemmas : int
        Dilemma rows each cell's trials are split over (multinomially, equal shares).
    seed : int
        Seed of ``np.random.default_rng``.

    Returns
    -------
    SimulatedCounts
    """
    if n_systems < 1:
        raise ValueError(f"n_systems must be at least 1, but got {n_systems}")
    rng = np.random.default_rng(seed)
    S, C, G, R = n_systems, len(conditions), len(genders), len(races)
    pairs_s = np.broadcast_to(np.asarray(pairs, dtype=int), (S,)).copy()
    if (pairs_s < 0).any():
        raise ValueError(f"pairs must be non-negative, but got {pairs}")
    w = np.array([0.0] + [1.2] * (C - 1) if weights is None else weights, dtype=float)
    if gaps is not None and len(gaps) != S:
        raise ValueError(f"gaps needs one entry per system ({S}), but got {len(gaps)}")
    if dilemmas < 1:
        raise ValueError(f"dilemmas must be at least 1, but got {dilemmas}")

    n_zero = round(S / 3)
    order = rng.permutation(S)
    perf = np.empty(S)
    perf[order[:n_zero]] = rng.uniform(-0.005, 0.01, n_zero)
    rest = order[n_zero:]
    if len(rest):
        grid = np.linspace(0.02, 0.10, len(rest)) if len(rest) > 1 else np.array([0.06])
        perf[rest] = grid + rng.uniform(-0.005, 0.005, len(rest))

    base_f = rng.uniform(0.05, 0.30, S)
    base_a = rng.uniform(0.05, 0.25, S)
    p_benefit = rng.uniform(0.25, 0.5, S)
    eta = np.empty((2, C, S, G, R))
    e_f = np.concatenate([np.zeros((S, 1)), rng.normal(0.0, 0.1, (S, C - 1))], axis=1)
    eta[0] = (_logit(base_f)[:, None] + e_f).T[:, :, None, None]
    a_rate = np.clip(base_a[None, :] + w[:, None] * perf[None, :], 0.005, 0.95)
    eta[1] = _logit(a_rate)[:, :, None, None]
    for e in range(2):
        for n_lev, axis in ((G, 3), (R, 2)):
            pop = _sum_zero(rng, 0.2, (n_lev,))
            first = _sum_zero(rng, 0.25, (S, n_lev))
            other = _sum_zero(rng, 0.25, (C, S, n_lev))
            eff = 0.8 * first[None] + np.sqrt(1 - 0.8**2) * other
            eff[0] = first
            eta[e] += np.expand_dims(eff + pop, axis=axis)
    p = _expit(eta)

    n_pairs = np.broadcast_to(pairs_s[None, :, None, None], (C, S, G, R))
    n_fav = rng.binomial(
        n_pairs, np.broadcast_to((1 - p_benefit)[None, :, None, None], n_pairs.shape)
    )
    trials = np.stack([n_fav, n_pairs - n_fav])
    if dilemmas == 2:  # the original stream
        half = rng.binomial(trials, 0.5)
        split = np.stack([half, trials - half])
    else:
        split = np.moveaxis(rng.multinomial(trials, np.full(dilemmas, 1 / dilemmas)), -1, 0)
    if gaps is not None:
        for s_i, target in enumerate(gaps):
            if target is not None:
                _plant_gap(eta, trials, s_i, float(target))
        p = _expit(eta)
    events = np.empty((dilemmas, *trials.shape), dtype=int)
    for h in range(dilemmas):
        events[h] = rng.binomial(split[h], p)

    systems = [f"sys-{i + 1:02d}" for i in range(S)]
    idx = np.indices((C, S, G, R)).reshape(4, -1)
    rows = []
    for h in range(dilemmas):
        dilemma = f"d{h + 1}"
        frame = pd.DataFrame(
            {
                "system": np.asarray(systems)[idx[1]],
                "condition": [conditions[c][0] for c in idx[0]],
                "difficulty": [conditions[c][1] for c in idx[0]],
                "consequences": True,
                "prompt_variant": None,
                "dilemma": dilemma,
                "topic_group": None,
                "solution_shape": None,
                "gender": np.asarray(genders)[idx[2]],
                "race": np.asarray(races)[idx[3]],
                "recovered": None,
                "favor": events[h, 0].reshape(-1),
                "favor_trials": split[h, 0].reshape(-1),
                "against": events[h, 1].reshape(-1),
                "against_trials": split[h, 1].reshape(-1),
            }
        )
        rows.append(frame)
    counts = pd.concat(rows, ignore_index=True)
    counts = counts[(counts["favor_trials"] + counts["against_trials"]) > 0].reset_index(drop=True)

    truth = _truth_tables(p, trials, systems, list(genders), list(races), list(conditions))
    gap = _truth_gap(truth, conditions[0], conditions[-1])
    return SimulatedCounts(counts, truth, gap, p, trials, perf)


def _macro_gap(p: np.ndarray, n: np.ndarray, s: int) -> float:
    """True macro gap (pp) of system ``s``: first minus last condition, as the truth tables
    define it (mean over gender and race groups of the trial-weighted rates)."""
    nets = []
    for c in (0, p.shape[1] - 1):
        ps, ns = p[:, c, s], n[:, c, s]  # (event, gender, race)
        groups = np.concatenate([_weighted(ps, ns, axis=2), _weighted(ps, ns, axis=1)], axis=1)
        fav, ag = np.nanmean(groups, axis=1)
        nets.append(100 * (fav - ag))
    return float(nets[0] - nets[1])


def _plant_gap(eta: np.ndarray, trials: np.ndarray, s: int, target: float) -> None:
    """Shift system ``s``'s against logit under the last condition so that its true macro
    gap is ``target`` pp (in place; the gap rises with the shift)."""
    base = eta[1, -1, s].copy()

    def excess(shift: float) -> float:
        eta[1, -1, s] = base + shift
        return _macro_gap(_expit(eta), trials, s) - target

    lo, hi = -20.0, 20.0
    if not excess(lo) < 0 < excess(hi):
        eta[1, -1, s] = base
        raise ValueError(f"a macro gap of {target} pp cannot be planted in system {s + 1}")
    eta[1, -1, s] = base + brentq(excess, lo, hi, xtol=1e-12)


def _weighted(p: np.ndarray, n: np.ndarray, axis: int) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return (p * n).sum(axis=axis) / n.sum(axis=axis)


def _truth_tables(
    p: np.ndarray,
    n: np.ndarray,
    systems: list[str],
    genders: list[str],
    races: list[str],
    conditions: list[tuple[str, str | None]],
) -> pd.DataFrame:
    parts = []
    by_gender = _weighted(p, n, axis=4)  # (2, C, S, G)
    by_race = _weighted(p, n, axis=3)  # (2, C, S, R)
    cells = np.where(n > 0, p, np.nan)
    for ci, (cond, diff) in enumerate(conditions):
        for si, system in enumerate(systems):
            nets = []
            for gtype, arr, labels in (
                ("gender", by_gender[:, ci, si], genders),
                ("race", by_race[:, ci, si], races),
            ):
                for j, lab in enumerate(labels):
                    fav, ag = arr[0, j], arr[1, j]
                    nets.append((fav, ag))
                    parts.append((system, cond, diff, gtype, lab, fav, ag))
            for gi, g in enumerate(genders):
                for ri, r in enumerate(races):
                    fav, ag = cells[0, ci, si, gi, ri], cells[1, ci, si, gi, ri]
                    parts.append((system, cond, diff, "intersection", f"{g} × {r}", fav, ag))
            fav_m = float(np.nanmean([f for f, _ in nets]))
            ag_m = float(np.nanmean([a for _, a in nets]))
            parts.append((system, cond, diff, "macro", "macro", fav_m, ag_m))
    out = pd.DataFrame(
        parts,
        columns=[
            "system",
            "condition",
            "difficulty",
            "group_type",
            "group",
            "favor_rate",
            "against_rate",
        ],
    )
    out["net_pp"] = 100 * (out["favor_rate"] - out["against_rate"])
    return out


def _truth_gap(
    truth: pd.DataFrame, explicit: tuple[str, str | None], implicit: tuple[str, str | None]
) -> pd.DataFrame:
    def side(cond: str, diff: str | None) -> pd.DataFrame:
        mask = truth["condition"] == cond
        mask &= truth["difficulty"].isna() if diff is None else truth["difficulty"] == diff
        return truth.loc[mask].drop(columns=["condition", "difficulty"])

    keys = ["system", "group_type", "group"]
    m = side(*explicit).merge(side(*implicit), on=keys, suffixes=("_e", "_i"))
    out = m[keys].copy()
    out["gap_pp"] = m["net_pp_e"] - m["net_pp_i"]
    out["delta_against_pp"] = 100 * (m["against_rate_i"] - m["against_rate_e"])
    out["delta_favor_pp"] = 100 * (m["favor_rate_i"] - m["favor_rate_e"])
    return out.reset_index(drop=True)
