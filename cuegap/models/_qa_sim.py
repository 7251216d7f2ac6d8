"""Planted-truth QA count tables for checking the QA statistics (tests and benchmarks).

:func:`planted_qa_counts` draws the ambiguous answers of simulated systems straight from
known answer probabilities, so the gap G = S_amb(implicit) − S_amb(explicit) of every
system is known exactly (as the mean over dimensions of the planted cell biases).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

DIMENSIONS = ("age", "caste", "gender", "religion")


def _rows(system: str, cue: str, dim: str, counts: np.ndarray, strategy: str) -> list[dict]:
    base = dict(system=system, strategy=strategy, cue=cue, context="ambiguous", dimension=dim,
                subgroup="g", polarity="negative", gold="unknown")  # fmt: skip
    return [
        base | {"answer": answer, "n": int(n)}
        for answer, n in zip(("unknown", "target", "non_target"), counts, strict=True)
    ]


def planted_qa_counts(
    gaps: list[float | None],
    *,
    n: int = 300,
    dimensions: tuple[str, ...] = DIMENSIONS,
    seed: int = 0,
    strategy: str = "zero-shot",
) -> tuple[pd.DataFrame, dict[str, float]]:
    """Ambiguous-context answers of one simulated audit with planted gaps.

    Parameters
    ----------
    gaps : list of float or None
        One entry per system: None plants seed 001's Table 2 ranges (explicit accuracy
        0.76-0.95 and bias 0.02-0.08, implicit 0.16-0.39 and 0.26-0.40); a number plants
        that gap on top of the explicit bias (implicit answers otherwise like explicit).
    n : int
        Answers per system × cue × dimension cell.
    dimensions : tuple of str
    seed : int
    strategy : str

    Returns
    -------
    counts : DataFrame
        The QA count contract (:mod:`cuegap.models.qa`), ambiguous items only.
    truth : dict
        System -> planted G (mean over dimensions of the planted cell biases).
    """
    rng = np.random.default_rng(seed)
    rows, truth = [], {}
    for s, gap in enumerate(gaps):
        system = f"sys-{s}"
        acc_e, bias_e = rng.uniform(0.76, 0.95), rng.uniform(0.02, 0.08)
        if gap is None:
            acc_i, bias_i = rng.uniform(0.16, 0.39), rng.uniform(0.26, 0.40)
        else:
            acc_i, bias_i = acc_e, bias_e + gap
        planted = {"explicit": [], "implicit": []}
        for dim in dimensions:
            shift_a, shift_b = rng.normal(0, 0.03, size=2)
            for cue, (acc, bias) in (("explicit", (acc_e, bias_e)), ("implicit", (acc_i, bias_i))):
                a = float(np.clip(acc + shift_a, 0.05, 0.97))
                b = float(np.clip(bias + shift_b, -0.9 * (1 - a), 0.9 * (1 - a)))
                raw = b / (1 - a)
                p = [a, (1 - a) * (1 + raw) / 2, (1 - a) * (1 - raw) / 2]
                rows += _rows(system, cue, dim, rng.multinomial(n, p), strategy)
                planted[cue].append(b)
        truth[system] = float(np.mean(planted["implicit"]) - np.mean(planted["explicit"]))
    return pd.DataFrame(rows), truth
