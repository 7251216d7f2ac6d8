"""Planted parameters of the simulated systems and the exact expected rates (ground truth).

See the package docstring of :mod:`cuegap.designs.dilemma.simulate` for the model. Every system
draws its
parameters from its own stream ``np.random.default_rng([seed, system_index, 0])``; the
allocation across systems (which ones are nearly not performative, which one abstains)
comes from ``np.random.default_rng([seed, 9000])``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from cuegap.designs.dilemma.simulate._design import COND_KEYS, STATUSES, Design

#: Weight of the system's performativeness in the against rate of each condition key.
AGAINST_WEIGHT = {
    "direct": 0.0,
    "named": 0.3,
    "puzzled:easy": 0.8,
    "puzzled:intermediate": 1.0,
    "puzzled:hard": 1.2,
    "formal_named:easy": 0.8,
    "formal_named:intermediate": 1.0,
    "formal_named:hard": 1.2,
}
RECOVERY_RANGE = {"easy": (0.97, 1.0), "intermediate": (0.94, 0.98), "hard": (0.90, 0.95)}
GROUP_SD = 0.3
RHO = 0.8  # correlation of a condition's group effects with the direct ones
DECISION_KEEP = 0.8  # P(neutral decision without consequences is a copy of the one with)


def expit(x: np.ndarray) -> np.ndarray:
    """Logistic function."""
    return 1.0 / (1.0 + np.exp(-x))


def logit(p: float) -> float:
    """Log-odds of ``p``."""
    return float(np.log(p / (1.0 - p)))


def _sum_zero(rng: np.random.Generator, n: int, sd: float, size: tuple = ()) -> np.ndarray:
    z = rng.normal(0.0, sd, size=(*size, n))
    if n > 1:
        z = (z - z.mean(axis=-1, keepdims=True)) * np.sqrt(n / (n - 1))
    return z


@dataclass
class SystemParams:
    """Planted parameters of one simulated system (arrays indexed by COND_KEYS)."""

    name: str
    index: int
    capability: float
    alignment: int
    p_benefit: float
    performativeness: float
    a_f: np.ndarray
    g_f: np.ndarray
    r_f: np.ndarray
    a_a: np.ndarray
    g_a: np.ndarray
    r_a: np.ndarray
    shift_f: float
    shift_a: float
    cb_base: np.ndarray
    cb_status: np.ndarray
    cb_g: np.ndarray
    cb_r: np.ndarray
    abst_what_if: np.ndarray
    abst_could_be: np.ndarray
    abst_main: np.ndarray
    unparsable: float
    recovery: np.ndarray

    def logits(self, design: Design, consequences: bool) -> tuple[np.ndarray, np.ndarray]:
        """Favor and against logits of every (item, individual) pair."""
        k, g, r = design.pair_key, design.pair_gender, design.pair_race
        off_f = 0.0 if consequences else self.shift_f
        off_a = 0.0 if consequences else self.shift_a
        lf = self.a_f[k] + self.g_f[k, g] + self.r_f[k, r] + off_f
        la = self.a_a[k] + self.g_a[k, g] + self.r_a[k, r] + off_a
        return lf, la

    def p_yes(self, design: Design) -> np.ndarray:
        """Could-be P(yes) of every pair; group effects are full for bad status, 0.3x else."""
        k, g, r = design.pair_key, design.pair_gender, design.pair_race
        st = design.status[design.pair_dilemma]
        scale = np.where(st == 0, 1.0, 0.3)
        lin = self.cb_base[k] + self.cb_status[st] + scale * (self.cb_g[g] + self.cb_r[r])
        return expit(lin)


def allocate(seed: int, n_systems: int) -> tuple[np.ndarray, int | None]:
    """Allocate the cross-system parts of the model.

    Parameters
    ----------
    seed
        Simulation seed.
    n_systems
        Number of systems.

    Returns
    -------
    tuple
        Performativeness per system in probability units (about a third of the systems
        near 0, the others spread over 0.02-0.10) and the index of the high-abstention
        system (the last one when there are 3 or more systems, else None).
    """
    rng = np.random.default_rng([seed, 9000])
    n_zero = round(n_systems / 3)
    order = rng.permutation(n_systems)
    perf = np.empty(n_systems)
    zero, rest = order[:n_zero], order[n_zero:]
    perf[zero] = rng.uniform(-0.005, 0.01, n_zero)
    if len(rest):
        grid = np.linspace(0.02, 0.10, len(rest)) if len(rest) > 1 else np.array([0.06])
        perf[rest] = np.clip(grid + rng.uniform(-0.005, 0.005, len(rest)), 0.015, 0.105)
    return perf, (n_systems - 1 if n_systems >= 3 else None)


def draw_system(
    seed: int, index: int, performativeness: float, high_abstention: bool, design: Design
) -> SystemParams:
    """Draw the planted parameters of one system.

    Parameters
    ----------
    seed
        Simulation seed; the system's stream is ``default_rng([seed, index, 0])``.
    index
        0-based system index (the name is ``sim-system-{index + 1:02d}``).
    performativeness
        Rise of the against rate under puzzled cues, in probability units.
    high_abstention
        Whether this is the system that abstains on most direct what-if probes.
    design
        The flattened item bank (gives the gender and race groups).

    Returns
    -------
    SystemParams
    """
    rng = np.random.default_rng([seed, index, 0])
    nk, ng, nr = len(COND_KEYS), len(design.genders), len(design.races)
    weights = np.array([AGAINST_WEIGHT[k] for k in COND_KEYS])
    capability = float(rng.uniform(0.3, 0.95))
    alignment = int(rng.integers(1, 4))
    p_benefit = float(rng.uniform(0.25, 0.5))
    base_f = rng.uniform(0.05, 0.30)
    base_a = rng.uniform(0.05, 0.25)
    a_f = logit(base_f) + np.concatenate([[0.0], rng.normal(0.0, 0.1, nk - 1)])
    a_a = np.array(
        [logit(float(np.clip(base_a + w * performativeness, 0.005, 0.95))) for w in weights]
    )

    def effects(n: int, moved: np.ndarray | None) -> np.ndarray:
        first = _sum_zero(rng, n, GROUP_SD)
        other = _sum_zero(rng, n, GROUP_SD, (nk,))
        eff = RHO * first + np.sqrt(1 - RHO**2) * other
        eff[0] = first
        if moved is not None:
            eff += (weights * performativeness / 0.1)[:, None] * moved[None, :]
        return eff

    g_f, r_f = effects(ng, None), effects(nr, None)
    g_a = effects(ng, _sum_zero(rng, ng, 0.4))
    r_a = effects(nr, _sum_zero(rng, nr, 0.4))
    shift_f, shift_a = (float(x) for x in rng.normal(0.0, 0.15, 2))

    cb_base = rng.uniform(-1.2, 0.3) + np.concatenate([[0.0], rng.normal(0.0, 0.2, nk - 1)])
    cb_status = np.array([rng.normal(0.4, 0.2), 0.0, rng.normal(-0.3, 0.2), 0.0])
    cb_g, cb_r = _sum_zero(rng, ng, GROUP_SD), _sum_zero(rng, nr, GROUP_SD)

    abst_what_if = rng.uniform(0.0, 0.02, nk)
    abst_could_be = rng.uniform(0.0, 0.01, nk)
    if high_abstention:
        abst_what_if[COND_KEYS.index("direct")] = 0.9
        abst_what_if[COND_KEYS.index("named")] = 0.6
        abst_could_be[COND_KEYS.index("direct")] = 0.05
    abst_main = abst_what_if.copy()
    unparsable = float(rng.uniform(0.005, 0.015))
    recovery = np.ones(nk)
    for j, key in enumerate(COND_KEYS):
        if ":" in key:
            lo, hi = RECOVERY_RANGE[key.split(":")[1]]
            recovery[j] = rng.uniform(lo, hi) - (0.02 if key.startswith("formal") else 0.0)
    return SystemParams(
        name=f"sim-system-{index + 1:02d}",
        index=index,
        capability=round(capability, 3),
        alignment=alignment,
        p_benefit=p_benefit,
        performativeness=float(performativeness),
        a_f=a_f,
        g_f=g_f,
        r_f=r_f,
        a_a=a_a,
        g_a=g_a,
        r_a=r_a,
        shift_f=shift_f,
        shift_a=shift_a,
        cb_base=cb_base,
        cb_status=cb_status,
        cb_g=cb_g,
        cb_r=cb_r,
        abst_what_if=abst_what_if,
        abst_could_be=abst_could_be,
        abst_main=abst_main,
        unparsable=unparsable,
        recovery=recovery,
    )


def neutral_decisions(p: SystemParams, benefit: np.ndarray, seed: int) -> dict[bool, np.ndarray]:
    """Draw the realised neutral decisions s_d per consequences setting.

    Parameters
    ----------
    p
        The system.
    benefit
        b_d per dilemma (0 = option1, 1 = option2).
    seed
        Simulation seed; the stream is ``default_rng([seed, p.index, 2])``.

    Returns
    -------
    dict
        ``{True: s, False: s}``, arrays of 0/1 (option1/option2) per dilemma.
    """
    rng = np.random.default_rng([seed, p.index, 2])
    n = len(benefit)
    with_c = np.where(rng.random(n) < p.p_benefit, benefit, 1 - benefit)
    redraw = np.where(rng.random(n) < p.p_benefit, benefit, 1 - benefit)
    without = np.where(rng.random(n) < DECISION_KEEP, with_c, redraw)
    return {True: with_c, False: without}


def _r(x: float) -> float:
    return round(float(x), 8)


def params_record(p: SystemParams, design: Design) -> dict:
    """JSON-ready description of the planted parameters, keyed by condition and group."""
    keys = [COND_KEYS[k] for k in design.keys_present]
    idx = [COND_KEYS.index(k) for k in keys]

    def by_key(arr: np.ndarray) -> dict:
        return {COND_KEYS[k]: _r(arr[k]) for k in idx}

    def by_group(arr: np.ndarray, labels: list[str]) -> dict:
        return {COND_KEYS[k]: {lab: _r(arr[k, j]) for j, lab in enumerate(labels)} for k in idx}

    def logit_block(a, g, r, shift) -> dict:
        return {
            "intercept": by_key(a),
            "gender": by_group(g, design.genders),
            "race": by_group(r, design.races),
            "no_consequences_shift": _r(shift),
        }

    return {
        "system": p.name,
        "index": p.index,
        "capability": p.capability,
        "alignment": p.alignment,
        "p_benefit": _r(p.p_benefit),
        "performativeness_pp": _r(100 * p.performativeness),
        "favor": logit_block(p.a_f, p.g_f, p.r_f, p.shift_f),
        "against": logit_block(p.a_a, p.g_a, p.r_a, p.shift_a),
        "could_be": {
            "intercept": by_key(p.cb_base),
            "status": {s: _r(p.cb_status[i]) for i, s in enumerate(STATUSES)},
            "gender_bad_status": {g: _r(v) for g, v in zip(design.genders, p.cb_g, strict=True)},
            "race_bad_status": {r: _r(v) for r, v in zip(design.races, p.cb_r, strict=True)},
            "other_status_group_scale": 0.3,
        },
        "abstention": {
            "what_if": by_key(p.abst_what_if),
            "could_be": by_key(p.abst_could_be),
            "main": by_key(p.abst_main),
            "puzzle_main_unparsable": _r(p.unparsable),
        },
        "recovery": {COND_KEYS[k]: _r(p.recovery[k]) for k in idx if ":" in COND_KEYS[k]},
    }


def _split(key: str) -> tuple[str, str | None]:
    cond, _, diff = key.partition(":")
    return cond, diff or None


def expected_records(
    p: SystemParams, design: Design, decisions: dict[bool, np.ndarray]
) -> tuple[list[dict], list[dict], list[dict]]:
    """Exact expected rates given the realised neutral decisions.

    Parameters
    ----------
    p
        The system.
    design
        The flattened item bank.
    decisions
        Realised s_d per consequences setting (from :func:`neutral_decisions`).

    Returns
    -------
    tuple of three lists
        Per-group favor/against records, pooled favor/against records (with net_pp) and
        could-be yes-rate records per status and group. A rate is the mean event
        probability over the eligible (d, X) pairs; None when there are none.
    """
    rates, pooled, could = [], [], []
    pd, pk = design.pair_dilemma, design.pair_key
    p_yes = p.p_yes(design)
    st = design.status[pd]
    groups = (
        ("gender", design.pair_gender, design.genders),
        ("race", design.pair_race, design.races),
    )
    for cons in (True, False):
        lf, la = p.logits(design, cons)
        s = decisions[cons][pd]
        fav_elig = s != design.benefit[pd]
        for k in design.keys_present:
            cond, diff = _split(COND_KEYS[k])
            in_k = pk == k
            head = {"system": p.name, "condition": cond, "difficulty": diff, "consequences": cons}
            f_mask, a_mask = in_k & fav_elig, in_k & ~fav_elig
            nf, na = int(f_mask.sum()), int(a_mask.sum())
            fr = float(expit(lf[f_mask]).mean()) if nf else None
            ar = float(expit(la[a_mask]).mean()) if na else None
            pooled.append(
                {
                    **head,
                    "favor_rate": None if fr is None else _r(fr),
                    "against_rate": None if ar is None else _r(ar),
                    "favor_n": nf,
                    "against_n": na,
                    "net_pp": None if fr is None or ar is None else _r(100 * (fr - ar)),
                }
            )
            for gtype, garr, labels in groups:
                for j, lab in enumerate(labels):
                    gm = garr == j
                    fm, am = f_mask & gm, a_mask & gm
                    if not (in_k & gm).any():
                        continue
                    nfg, nag = int(fm.sum()), int(am.sum())
                    rates.append(
                        {
                            **head,
                            "group_type": gtype,
                            "group": lab,
                            "favor_rate": _r(expit(lf[fm]).mean()) if nfg else None,
                            "against_rate": _r(expit(la[am]).mean()) if nag else None,
                            "favor_n": nfg,
                            "against_n": nag,
                        }
                    )
                    for si, sname in enumerate((*STATUSES, None)):
                        sm = in_k & gm & (st == si)
                        if sm.any():
                            could.append(
                                {
                                    **head,
                                    "status": sname,
                                    "group_type": gtype,
                                    "group": lab,
                                    "yes_rate": _r(p_yes[sm].mean()),
                                    "n": int(sm.sum()),
                                }
                            )
    return rates, pooled, could
