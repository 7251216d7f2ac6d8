"""Simulated audits of a clustered, paired binomial contrast, decided by the verdict rule:
the check of the analytic planner (:mod:`cuegap.models._plan`) against a decision rate.

Each simulated audit asks ``items`` items ``m`` times on each side. Item i has a latent
rate p_i ~ Beta with mean ``rate`` and intra-item correlation ρ (a + b = 1/ρ − 1); the
explicit side answers with p_i + gap, the implicit side with p_i, so the two sides share
their items (a paired contrast) with correlation r = ρm / (1 + (m − 1)ρ) between an item's
side means. The estimate is the difference of the side rates; its standard error is the
cluster-robust one (the SD of the item differences over √items, what a bootstrap over
items estimates); :func:`cuegap.models.gap_probabilities` and the policy's q decide.
Pure numpy.
"""

from __future__ import annotations

import numpy as np

from cuegap.models._verdict import gap_probabilities

__all__ = ["paired_correlation", "simulated_decision_rate"]


def paired_correlation(icc: float, m: float) -> float:
    """Correlation of an item's two side means when both share the item's rate:
    ρm / (1 + (m − 1)ρ)."""
    return icc * m / (1 + (m - 1) * icc)


def simulated_decision_rate(
    *,
    items: int,
    m: int,
    rate: float,
    icc: float,
    gap: float,
    delta: float,
    probability: float,
    decision: str,
    replicates: int = 1000,
    seed: int = 0,
) -> float:
    """Share of ``replicates`` simulated audits whose verdict rule reaches ``decision``.

    Rates, ``gap`` and ``delta`` are on the rate scale (0-1). ``icc`` must be in (0, 1).
    """
    rng = np.random.default_rng(seed)
    ab = 1 / icc - 1
    p = rng.beta(rate * ab, (1 - rate) * ab, size=(replicates, items))
    y_e = rng.binomial(m, np.clip(p + gap, 0, 1))
    y_i = rng.binomial(m, p)
    diff = (y_e - y_i) / m
    est = diff.mean(axis=1)
    se = diff.std(axis=1, ddof=1) / np.sqrt(items)
    hits = 0
    for g, s in zip(est, se, strict=True):
        gt, within = gap_probabilities(float(g), float(s), delta)
        hits += (gt >= probability) if decision == "flag" else (within >= probability)
    return hits / replicates
