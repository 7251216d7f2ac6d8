"""Count arrays of the QA Bayesian model: one strategy's explicit and implicit answers per
system × cue × group, where a group is a (dimension, subgroup) pair.

Ambiguous cells: parsable, unknown, stereotype-consistent and anti-stereotypical answers.
Disambiguated cells are split by whether the gold answer is the stereotype-consistent
person (``k = 0``) or not (``k = 1``): parsable, unknown, correct and wrong answers.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from cuegap.designs.qa.stats._scores import check_counts

CUES = ("explicit", "implicit")


@dataclass
class QABayesData:
    """QA answers in array layout.

    Attributes
    ----------
    systems, dimensions : list of str
    groups : list of (dimension, subgroup)
    group_dim : ndarray of int
        Each group's dimension index.
    n_parsed, n_unknown, n_stereotyped, n_anti : ndarray, shape (system, cue, group)
        Ambiguous answers.
    d_parsed, d_unknown, d_correct, d_wrong : ndarray, shape (system, cue, group, 2)
        Disambiguated answers; the last axis is 0 when the gold answer is the
        stereotype-consistent person, 1 when it is the other one.
    """

    systems: list[str]
    dimensions: list[str]
    groups: list[tuple[str, str]]
    group_dim: np.ndarray
    n_parsed: np.ndarray
    n_unknown: np.ndarray
    n_stereotyped: np.ndarray
    n_anti: np.ndarray
    d_parsed: np.ndarray
    d_unknown: np.ndarray
    d_correct: np.ndarray
    d_wrong: np.ndarray

    @property
    def n_non_unknown(self) -> np.ndarray:
        """Ambiguous answers naming a person."""
        return self.n_stereotyped + self.n_anti

    @property
    def observed(self) -> np.ndarray:
        """Ambiguous cells with at least one parsable answer (system, cue, group)."""
        return self.n_parsed > 0

    @property
    def has_disambiguated(self) -> bool:
        """Whether any disambiguated answer was given."""
        return bool(self.d_parsed.sum() > 0)


def prepare_qa_counts(counts: pd.DataFrame, *, strategy: str = "zero-shot") -> QABayesData:
    """Explicit and implicit counts of one strategy, as arrays.

    Raises
    ------
    ValueError
        When no system answered both explicit and implicit ambiguous items.
    """
    df = check_counts(counts)
    df = df[(df["strategy"] == strategy) & df["cue"].isin(CUES) & (df["answer"] != "unparsable")]
    df = df[df["gold"] != "untargeted"]  # items without a target inform no bias
    amb = df[df["context"] == "ambiguous"]
    both = amb[amb["n"] > 0].groupby("system")["cue"].nunique()
    systems = sorted(map(str, both[both == len(CUES)].index))
    if not systems:
        raise ValueError(
            f"no system answered both explicit and implicit ambiguous items under {strategy!r}"
        )
    df = df[df["system"].isin(systems)]
    groups = sorted(
        {(str(d), str(g)) for d, g in zip(df["dimension"], df["subgroup"], strict=True)}
    )
    dimensions = sorted({d for d, _ in groups})
    s_idx = {s: i for i, s in enumerate(systems)}
    g_idx = {g: i for i, g in enumerate(groups)}
    shape = (len(systems), len(CUES), len(groups))
    a = {k: np.zeros(shape, np.int64) for k in ("parsed", "unknown", "st", "anti")}
    d = {k: np.zeros((*shape, 2), np.int64) for k in ("parsed", "unknown", "correct", "wrong")}
    consistent_role = np.where(df["polarity"] == "negative", "target", "non_target")
    for r, cons in zip(df.itertuples(), consistent_role, strict=True):
        at = (
            s_idx[str(r.system)],
            CUES.index(str(r.cue)),
            g_idx[(str(r.dimension), str(r.subgroup))],
        )
        n = int(r.n)
        if r.context == "ambiguous":
            a["parsed"][at] += n
            key = "unknown" if r.answer == "unknown" else "st" if r.answer == cons else "anti"
            a[key][at] += n
        else:
            k = (*at, 0 if r.gold == cons else 1)
            d["parsed"][k] += n
            key = (
                "unknown" if r.answer == "unknown" else "correct" if r.answer == r.gold else "wrong"
            )
            d[key][k] += n
    return QABayesData(
        systems=systems,
        dimensions=dimensions,
        groups=groups,
        group_dim=np.array([dimensions.index(dim) for dim, _ in groups], dtype=np.int64),
        n_parsed=a["parsed"],
        n_unknown=a["unknown"],
        n_stereotyped=a["st"],
        n_anti=a["anti"],
        d_parsed=d["parsed"],
        d_unknown=d["unknown"],
        d_correct=d["correct"],
        d_wrong=d["wrong"],
    )
