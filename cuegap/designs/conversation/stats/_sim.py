r"""Planted-truth conversations for the conversation design (tests, demos, benchmarks).

Every cell (system, benchmark, category, demographics, persona, instantiation, reveal)
gets planted shift rates on the logit scale:

* logit λ_iden = logit(``lambda_iden``) + ``iden_effects[(d, i)]`` + u_persona,
  for either reveal condition;
* logit λ_base = logit(``lambda_base``) + ``base_reveal_effects[(d, i)]`` (revealed
  cells only) + v_persona;

(an effect keyed (system, d, i) applies to that system only, and adds to one keyed
(d, i)), with u, v ~ Normal(0, ``persona_sd``) drawn once per (system, benchmark, persona) and
shared by every demographic, so a contrast between demographics is exactly zero within
a persona when no effect is planted. With ``persona_sd = 0`` the planted contrasts are
plain differences of the planted λ's, e.g. ΔDemo λ_iden(d, ∅, i) =
expit(logit λ_iden + e(d, i)) − λ_iden.

A persona × demographics interaction (``interaction_sd`` τ > 0) adds w ~ Normal(0, τ),
drawn once per (system, benchmark, persona, demographics) and agent, to logit λ_iden (any
reveal) and to logit λ_base in revealed cells: the baseline agent's reaction to a revealed
identity then differs between personas, so a per-persona contrast such as ΔDemoΔRC
λ_base varies between personas even without binomial noise (its variance grows by about
τ² Σ_d (λ_d(1 − λ_d))², summed over the contrast's revealed demographics). With τ = 0
nothing is drawn, so every other draw is unchanged.

:func:`simulate_conv_counts` draws counts directly: per cell ``conversations`` ×
``transitions`` transitions, disagreements ~ Binomial(·, ``p_disagree``) (the same for
both agents, as in real transcripts without missing opinions), shifts ~
Binomial(disagreements, λ). :func:`simulate_conv_opinions` draws opinion sequences
instead (one conversation at a time, vectorised over conversations).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.special import expit, logit

from cuegap.designs.conversation.stats._frame import AI, ANONYMOUS, CELL, HUMAN, NULL, REVEALED

__all__ = ["ConvSimulation", "conv_design", "simulate_conv_counts", "simulate_conv_opinions"]

#: Seed 003 §5: benchmarks and their numbers of categories (BBQ 9, Difference-Awareness 8,
#: Discrim-Eval 2), MAC-Fairness ``source_dataset`` names.
BENCHMARKS = {"BBQ": 9, "DifferenceAwareness": 8, "DiscrimEval": 2}
DEMOGRAPHICS = (NULL, "black", "white", "older", "young", "female", "male")
PERSONAS = (NULL, "software engineer", "teacher", "physician", "farmer", "machine operator")


@dataclass(frozen=True)
class ConvSimulation:
    """Simulated conversation data and the truth it was drawn from.

    Attributes
    ----------
    counts : DataFrame
        The transition count frame (one row per cell).
    truth : DataFrame
        One row per cell: the keys, ``lambda_iden``, ``lambda_base``, ``p_disagree``.
    """

    counts: pd.DataFrame
    truth: pd.DataFrame


def conv_design(
    *,
    systems: Sequence[str] = ("sys0",),
    benchmarks: Mapping[str, int] | Mapping[str, Sequence[str]] = BENCHMARKS,
    demographics: Sequence[str] = DEMOGRAPHICS,
    personas: Sequence[str] = PERSONAS,
    instantiations: Sequence[str] = (HUMAN, AI),
    reveals: Sequence[str] = (REVEALED, ANONYMOUS),
) -> pd.DataFrame:
    """The full factorial of cells (columns :data:`CELL`); categories ``c1``, ``c2``, … when
    a benchmark is given by its number of categories."""
    rows = []
    for bench, cats in benchmarks.items():
        names = [f"c{k + 1}" for k in range(cats)] if isinstance(cats, int) else list(cats)
        rows += [(bench, c) for c in names]
    bc = pd.DataFrame(rows, columns=["benchmark", "category"])
    grid = pd.MultiIndex.from_product(
        [systems, range(len(bc)), demographics, personas, instantiations, reveals],
        names=["system", "_bc", "demographics", "persona", "instantiation", "reveal"],
    ).to_frame(index=False)
    grid = grid.join(bc, on="_bc").drop(columns="_bc")
    return grid[list(CELL)]


def _effect(cells: pd.DataFrame, effects: Mapping[tuple[str, ...], float]) -> np.ndarray:
    """The planted logit effect of each cell: keys (demographics, instantiation) apply to
    every system, keys (system, demographics, instantiation) to one; both add up."""
    total = np.zeros(len(cells))
    for n, cols in ((2, ["demographics", "instantiation"]),
                    (3, ["system", "demographics", "instantiation"])):  # fmt: skip
        sub = {k: v for k, v in effects.items() if len(k) == n}
        if not sub:
            continue
        table = pd.Series(
            list(sub.values()), index=pd.MultiIndex.from_tuples(list(sub), names=cols), dtype=float
        )
        key = pd.MultiIndex.from_frame(cells[cols])
        total += table.reindex(key).fillna(0.0).to_numpy()
    bad = [k for k in effects if len(k) not in (2, 3)]
    if bad:
        raise ValueError(
            f"effect keys must be (demographics, instantiation) or (system, demographics, "
            f"instantiation), but got {bad[0]!r}"
        )
    return total


def _planted(
    cells: pd.DataFrame,
    rng: np.random.Generator,
    *,
    lambda_iden: float,
    lambda_base: float,
    iden_effects: Mapping[tuple[str, ...], float],
    base_reveal_effects: Mapping[tuple[str, ...], float],
    persona_sd: float,
    interaction_sd: float = 0.0,
) -> pd.DataFrame:
    for name, v in (("lambda_iden", lambda_iden), ("lambda_base", lambda_base)):
        if not 0 < v < 1:
            raise ValueError(f"{name} must be in (0, 1), but got {v!r}")
    if persona_sd < 0:
        raise ValueError(f"persona_sd must be >= 0, but got {persona_sd!r}")
    if not interaction_sd >= 0:
        raise ValueError(f"interaction_sd must be >= 0, but got {interaction_sd!r}")
    out = cells.copy()
    e_iden = _effect(out, iden_effects)
    e_base = _effect(out, base_reveal_effects)
    e_base = np.where(out["reveal"].to_numpy() == REVEALED, e_base, 0.0)
    codes = out.groupby(["system", "benchmark", "persona"], sort=False).ngroup().to_numpy()
    k = int(codes.max()) + 1 if len(codes) else 0
    u = rng.normal(0.0, persona_sd, size=(2, k)) if persona_sd > 0 else np.zeros((2, k))
    if interaction_sd > 0:
        keys = ["system", "benchmark", "persona", "demographics"]
        inter = out.groupby(keys, sort=False).ngroup().to_numpy()
        w = rng.normal(0.0, interaction_sd, size=(2, int(inter.max()) + 1))
        revealed = out["reveal"].to_numpy() == REVEALED
        e_iden = e_iden + w[0][inter]
        e_base = e_base + np.where(revealed, w[1][inter], 0.0)
    out["lambda_iden"] = expit(logit(lambda_iden) + e_iden + u[0][codes])
    out["lambda_base"] = expit(logit(lambda_base) + e_base + u[1][codes])
    return out


def simulate_conv_counts(
    *,
    cells: pd.DataFrame | None = None,
    conversations: int = 200,
    transitions: int = 2,
    p_disagree: float = 0.3,
    lambda_iden: float = 0.3,
    lambda_base: float = 0.3,
    iden_effects: Mapping[tuple[str, ...], float] | None = None,
    base_reveal_effects: Mapping[tuple[str, ...], float] | None = None,
    persona_sd: float = 0.0,
    seed: int = 0,
    interaction_sd: float = 0.0,
) -> ConvSimulation:
    """Transition counts per cell with planted shift rates.

    Parameters
    ----------
    cells : DataFrame, optional
        The cells (columns :data:`CELL`); default :func:`conv_design` ().
    conversations : int, default 200
        Conversations per cell.
    transitions : int, default 2
        Cross-round transitions per conversation (seed 003: 3 rounds, so 2).
    p_disagree : float, default 0.3
        Probability that a transition starts from disagreement.
    lambda_iden, lambda_base : float, default 0.3
        Shift rates of a cell without planted effect.
    iden_effects : mapping (demographics, instantiation) -> float, optional
        Logit effect on λ_iden (any reveal); a key (system, demographics, instantiation)
        plants it in one system only.
    base_reveal_effects : mapping, optional
        Logit effect on λ_base under ``revealed`` only, keyed like ``iden_effects``.
    persona_sd : float, default 0
        SD of per-(system, benchmark, persona) logit offsets.
    seed : int, default 0
    interaction_sd : float, default 0
        SD of the persona × demographics interaction (module docstring): logit offsets
        per (system, benchmark, persona, demographics) on λ_iden and on revealed λ_base.

    Returns
    -------
    ConvSimulation
    """
    if conversations < 0 or transitions < 0:
        raise ValueError("conversations and transitions must be >= 0")
    if not 0 <= p_disagree <= 1:
        raise ValueError(f"p_disagree must be in [0, 1], but got {p_disagree!r}")
    rng = np.random.default_rng(seed)
    cells = conv_design() if cells is None else cells[list(CELL)]
    truth = _planted(
        cells.reset_index(drop=True),
        rng,
        lambda_iden=lambda_iden,
        lambda_base=lambda_base,
        iden_effects=iden_effects or {},
        base_reveal_effects=base_reveal_effects or {},
        persona_sd=persona_sd,
        interaction_sd=interaction_sd,
    )
    truth["p_disagree"] = p_disagree
    n = len(truth)
    dis = rng.binomial(conversations * transitions, p_disagree, size=n)
    counts = truth[list(CELL)].copy()
    counts["iden_disagree"] = dis
    counts["iden_shift"] = rng.binomial(dis, truth["lambda_iden"].to_numpy())
    counts["base_disagree"] = dis
    counts["base_shift"] = rng.binomial(dis, truth["lambda_base"].to_numpy())
    counts["conversations"] = conversations
    return ConvSimulation(counts=counts, truth=truth)


def simulate_conv_opinions(
    truth: pd.DataFrame,
    *,
    conversations: int = 20,
    rounds: int = 3,
    options: int = 3,
    p_agree0: float = 0.4,
    p_third: float = 0.1,
    p_drift: float = 0.05,
    seed: int = 0,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Opinion sequences of two-agent conversations with planted shift rates.

    Round 0: the identity agent picks one of ``options`` labels (``"A"``, ``"B"``, …)
    uniformly; the baseline agrees with probability ``p_agree0``, else picks another
    label. Round r: an agent that disagreed with its peer in round r − 1 takes the peer's
    previous opinion with probability λ (its cell's), moves to a third label with
    probability ``p_third`` (when ``options`` ≥ 3), else keeps its own; an agent that
    agreed switches to another label with probability ``p_drift``. So λ is exactly
    P(take the peer's previous opinion | prior disagreement), as in Eqs. 1-2.

    Parameters
    ----------
    truth : DataFrame
        One row per cell: the :data:`CELL` keys, ``lambda_iden`` and ``lambda_base``
        (e.g. ``simulate_conv_counts(...).truth``).
    conversations : int, default 20
        Conversations per cell.

    Returns
    -------
    (opinions, conversations) : tuple of DataFrame
        The inputs of :func:`conv_transition_counts`.
    """
    if options < 2 or rounds < 1:
        raise ValueError("options must be >= 2 and rounds >= 1")
    if not 0 <= p_third <= 1 or (truth[["lambda_iden", "lambda_base"]].max().max() + p_third > 1):
        raise ValueError("p_third must be in [0, 1] with λ + p_third <= 1")
    rng = np.random.default_rng(seed)
    cells = truth.reset_index(drop=True)
    cell = np.repeat(np.arange(len(cells)), conversations)
    n = len(cell)
    lam = {
        "i": cells["lambda_iden"].to_numpy()[cell],
        "b": cells["lambda_base"].to_numpy()[cell],
    }
    third = p_third if options >= 3 else 0.0

    def other(x: np.ndarray, *avoid: np.ndarray) -> np.ndarray:
        # a uniformly drawn label different from every label in ``avoid``
        y = rng.integers(0, options, size=len(x))
        for _ in range(64):
            bad = np.zeros(len(x), bool)
            for a in avoid:
                bad |= y == a
            if not bad.any():
                break
            y = np.where(bad, rng.integers(0, options, size=len(x)), y)
        return y

    o_i = rng.integers(0, options, size=n)
    o_b = np.where(rng.random(n) < p_agree0, o_i, other(o_i, o_i))
    hist = [(o_i, o_b)]
    for _ in range(1, rounds):
        pi, pb = hist[-1]
        dis = pi != pb
        new = {}
        for me, peer, key in ((pi, pb, "i"), (pb, pi, "b")):
            u = rng.random(n)
            moved = np.where(
                u < lam[key], peer, np.where(u < lam[key] + third, other(me, me, peer), me)
            )
            drift = np.where(rng.random(n) < p_drift, other(me, me), me)
            new[key] = np.where(dis, moved, drift)
        hist.append((new["i"], new["b"]))
    labels = np.array([chr(ord("A") + k) for k in range(options)])
    conv_id = np.arange(n)
    parts = []
    for r, (a, b) in enumerate(hist):
        for role, o in (("identity", a), ("baseline", b)):
            parts.append(
                pd.DataFrame(
                    {"conversation": conv_id, "round": r, "role": role, "opinion": labels[o]}
                )
            )
    opinions = pd.concat(parts, ignore_index=True)
    convs = cells.loc[cell, list(CELL)].reset_index(drop=True)
    convs.insert(0, "conversation", conv_id)
    return opinions, convs
