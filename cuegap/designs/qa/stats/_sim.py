"""Planted-truth QA count tables for checking the QA statistics (tests and benchmarks).

:func:`planted_qa_counts` draws the ambiguous answers of simulated systems straight from
known answer probabilities, so the gap G = S_amb(implicit) − S_amb(explicit) of every
system is known exactly (as the mean over dimensions of the planted cell biases).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

DIMENSIONS = ("age", "caste", "gender", "religion")


def _rows(
    system: str, cue: str, dim: str, counts: np.ndarray, strategy: str, subgroup: str
) -> list[dict]:
    base = dict(system=system, strategy=strategy, cue=cue, context="ambiguous", dimension=dim,
                subgroup=subgroup, polarity="negative", gold="unknown")  # fmt: skip
    return [
        base | {"answer": answer, "n": int(n)}
        for answer, n in zip(("unknown", "target", "non_target"), counts, strict=True)
    ]


def _disambiguated(
    rng: np.random.Generator, base: dict, n: int, acc: float, beta: float
) -> list[dict]:
    """n answers to negative disambiguated items, half with the stereotyped person (the
    target) as gold: unknown 2 %, else correct with probability acc ± beta."""
    rows = []
    for gold, p_correct in (("target", acc + beta), ("non_target", acc - beta)):
        other = "non_target" if gold == "target" else "target"
        p = [0.02, 0.98 * p_correct, 0.98 * (1 - p_correct)]
        for answer, k in zip(("unknown", gold, other), rng.multinomial(n // 2, p), strict=True):
            rows.append(base | {"context": "disambiguated", "gold": gold, "answer": answer,
                                "n": int(k)})  # fmt: skip
    return rows


def planted_qa_counts(
    gaps: list[float | None],
    *,
    n: int = 300,
    dimensions: tuple[str, ...] = DIMENSIONS,
    subgroups: int = 1,
    disambiguated: bool = False,
    seed: int = 0,
    strategy: str = "zero-shot",
) -> tuple[pd.DataFrame, dict[str, float]]:
    """Answers of one simulated audit with planted explicit-vs-implicit gaps.

    Parameters
    ----------
    gaps : list of float or None
        One entry per system: None plants seed 001's Table 2 ranges (explicit accuracy
        0.76-0.95 and bias 0.02-0.08, implicit 0.16-0.39 and 0.26-0.40); a number plants
        that gap on top of the explicit bias (implicit answers otherwise like explicit).
    n : int
        Ambiguous (and, with ``disambiguated``, disambiguated) answers per system × cue ×
        sub-group cell.
    dimensions : tuple of str
    subgroups : int
        Sub-groups per dimension; each has its own small shift of accuracy and bias.
    disambiguated : bool
        Also answers to disambiguated items: accuracy 0.85-0.97 among answers naming a
        person, ± β (0-0.03) by whether the gold answer is the stereotyped person, so
        S_dis = 2β.
    seed : int
    strategy : str

    Returns
    -------
    counts : DataFrame
        The QA count contract (:mod:`cuegap.designs.qa.stats`).
    truth : dict
        System -> planted G (mean over dimensions of the answer-weighted mean of the
        planted sub-group biases; the sub-groups have equal numbers of answers).
        With ``disambiguated``, also ``"<system>:acc_dis"`` and ``"<system>:s_dis"`` per cue
        as ``{"explicit": ..., "implicit": ...}`` dicts under ``truth["_dis"]``.
    """
    rng = np.random.default_rng(seed)
    rows, truth, dis_truth = [], {}, {}
    for s, gap in enumerate(gaps):
        system = f"sys-{s}"
        acc_e, bias_e = rng.uniform(0.76, 0.95), rng.uniform(0.02, 0.08)
        if gap is None:
            acc_i, bias_i = rng.uniform(0.16, 0.39), rng.uniform(0.26, 0.40)
        else:
            acc_i, bias_i = acc_e, bias_e + gap
        dis = {
            cue: (rng.uniform(0.85, 0.97), rng.uniform(0.0, 0.03))
            for cue in ("explicit", "implicit")
        }
        planted = {"explicit": [], "implicit": []}
        for dim in dimensions:
            shift_a, shift_b = rng.normal(0, 0.03, size=2)
            dim_bias = {"explicit": [], "implicit": []}
            for sub in range(subgroups):
                sub_a, sub_b = rng.normal(0, 0.02, size=2) if subgroups > 1 else (0.0, 0.0)
                for cue, (acc, bias) in (
                    ("explicit", (acc_e, bias_e)),
                    ("implicit", (acc_i, bias_i)),
                ):
                    a = float(np.clip(acc + shift_a + sub_a, 0.05, 0.97))
                    b = float(np.clip(bias + shift_b + sub_b, -0.9 * (1 - a), 0.9 * (1 - a)))
                    raw = b / (1 - a)
                    p = [a, (1 - a) * (1 + raw) / 2, (1 - a) * (1 - raw) / 2]
                    label = f"g{sub}"
                    rows += _rows(system, cue, dim, rng.multinomial(n, p), strategy, label)
                    dim_bias[cue].append(b)
                    if disambiguated:
                        base = dict(system=system, strategy=strategy, cue=cue, dimension=dim,
                                    subgroup=label, polarity="negative")  # fmt: skip
                        rows += _disambiguated(rng, base, n, *dis[cue])
            for cue in planted:
                planted[cue].append(float(np.mean(dim_bias[cue])))
        truth[system] = float(np.mean(planted["implicit"]) - np.mean(planted["explicit"]))
        dis_truth[system] = {
            cue: {"acc_dis": acc, "s_dis": 2 * beta} for cue, (acc, beta) in dis.items()
        }
    if disambiguated:
        truth["_dis"] = dis_truth  # type: ignore[assignment]
    return pd.DataFrame(rows), truth
