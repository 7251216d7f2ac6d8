"""Inter-annotator agreement on an item bank: pairwise Cohen's kappa and Fleiss' kappa.

References
----------
Seed paper, "Moral Safety in LLMs: Exposing Performative Compliance with Puzzled Cues":
Section 3.1 and Appendix B (Table 7): pairwise Cohen's kappa with raw agreement and Fleiss'
kappa across three annotators, per annotated column.
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np
import pandas as pd
from statsmodels.stats.inter_rater import aggregate_raters, cohens_kappa, fleiss_kappa

__all__ = ["annotator_agreement"]

MISSING_LABEL = "<missing>"
_COLUMNS = ("dilemma", "annotator", "field", "value")
_OUTPUT = ["field", "pair", "kappa_kind", "kappa", "raw_agreement", "n"]


def _cohen(a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
    """Cohen's kappa and raw agreement of two aligned label arrays (no missing values)."""
    n = len(a)
    if n == 0:
        return math.nan, math.nan
    cats = pd.Index(sorted(set(a) | set(b), key=str))
    table = np.zeros((len(cats), len(cats)))
    np.add.at(table, (cats.get_indexer(a), cats.get_indexer(b)), 1.0)
    observed = float(np.trace(table)) / n
    expected = float(table.sum(axis=1) @ table.sum(axis=0)) / n**2
    if math.isclose(expected, 1.0):  # both annotators used one and the same label
        return math.nan, observed
    return float(cohens_kappa(table, return_results=False)), observed


def _fleiss(ratings: np.ndarray) -> tuple[float, float]:
    """Fleiss' kappa and mean per-item agreement of an (items, annotators) label array."""
    if ratings.shape[0] == 0:
        return math.nan, math.nan
    codes = pd.factorize(pd.Series(ratings.ravel()), sort=False)[0].reshape(ratings.shape)
    table, _ = aggregate_raters(codes)
    m = ratings.shape[1]
    per_item = ((table * (table - 1)).sum(axis=1)) / (m * (m - 1))
    shares = table.sum(axis=0) / table.sum()
    if math.isclose(float(shares @ shares), 1.0):
        return math.nan, float(per_item.mean())
    return float(fleiss_kappa(table, method="fleiss")), float(per_item.mean())


def annotator_agreement(
    annotations: pd.DataFrame,
    *,
    missing: Literal["drop", "category"] = "drop",
) -> pd.DataFrame:
    r"""Pairwise Cohen's kappa with raw agreement and Fleiss' kappa, per annotated field.

    Parameters
    ----------
    annotations : DataFrame
        Long table with columns ``dilemma``, ``annotator``, ``field``, ``value``: one row
        per (dilemma, annotator, field). Values are compared as given, so normalise labels
        first ("Option 1" and "option1" are different categories). NaN/None is missing.
    missing : {"drop", "category"}, default "drop"
        ``"drop"``: a pair's kappa uses the dilemmas both annotators labelled, Fleiss' kappa
        the dilemmas every annotator of the field labelled. ``"category"``: a missing or
        absent label is a category of its own (``"<missing>"``), so every dilemma of the
        field counts, and a missing label disagrees with every real one.

    Returns
    -------
    DataFrame
        For each field (in order of first appearance), one row per annotator pair (in
        sorted annotator order) and then one Fleiss row, with columns

        ``field``
            The annotated field.
        ``pair``
            ``"a–b"`` (annotator labels joined by an en dash) or ``"all"``.
        ``kappa_kind``
            ``"cohen"`` or ``"fleiss"``.
        ``kappa``
            The kappa; NaN when it is undefined (no dilemma, or chance agreement 1
            because a single label was used throughout).
        ``raw_agreement``
            Cohen rows: share of dilemmas with equal labels. Fleiss row: the mean over
            dilemmas of the share of agreeing annotator pairs, :math:`\bar P`, which equals
            the mean of the pairwise raw agreements over the same dilemmas.
        ``n``
            Number of dilemmas used.

    Raises
    ------
    ValueError
        If a column is missing, a (dilemma, annotator, field) appears twice, a field has
        fewer than two annotators, or ``missing`` is not "drop" or "category".

    Notes
    -----
    Cohen: :math:`\kappa = (p_o - p_e)/(1 - p_e)` with :math:`p_o` the raw agreement and
    :math:`p_e = \sum_k p_{1k} p_{2k}` from the two annotators' marginal label shares
    (``statsmodels.stats.inter_rater.cohens_kappa``). Fleiss, with *m* annotators and
    :math:`n_{ik}` of them giving item *i* label *k*: :math:`P_i = \sum_k n_{ik}(n_{ik}-1) /
    (m(m-1))`, :math:`\bar P = \operatorname{mean}_i P_i`, :math:`p_k` the share of all labels
    equal to *k*, :math:`P_e = \sum_k p_k^2` and :math:`\kappa = (\bar P - P_e)/(1 - P_e)`
    (``fleiss_kappa``).

    Worked example (2 x 2, ten dilemmas): A1 says yes on 7, A2 on 6; both yes on 5, both no
    on 2, A1 yes/A2 no on 2, A1 no/A2 yes on 1. Then :math:`p_o = 7/10`,
    :math:`p_e = 0.7 \cdot 0.6 + 0.3 \cdot 0.4 = 0.54` and
    :math:`\kappa = 0.16 / 0.46 = 8/23 \approx 0.348`.
    """
    if missing not in ("drop", "category"):
        raise ValueError(f"missing must be 'drop' or 'category', but got {missing!r}")
    absent = [c for c in _COLUMNS if c not in annotations.columns]
    if absent:
        raise ValueError(
            f"annotator_agreement needs columns {', '.join(absent)}; "
            f"got {', '.join(map(str, annotations.columns))}"
        )
    keys = ["dilemma", "annotator", "field"]
    dup = annotations.duplicated(subset=keys, keep=False)
    if dup.any():
        first = annotations.loc[dup, keys].iloc[0].tolist()
        raise ValueError(f"duplicate (dilemma, annotator, field) rows, e.g. {first}")

    rows: list[dict] = []
    for field in pd.unique(annotations["field"]):
        sub = annotations[annotations["field"] == field]
        wide = sub.pivot(index="dilemma", columns="annotator", values="value")
        wide = wide[sorted(wide.columns, key=str)].astype(object)
        if wide.shape[1] < 2:
            raise ValueError(
                f"field {field!r} has {wide.shape[1]} annotator(s); agreement needs two or more"
            )
        if missing == "category":
            wide = wide.where(wide.notna(), MISSING_LABEL)
        names = list(wide.columns)
        for i, first in enumerate(names):
            for second in names[i + 1 :]:
                pair = wide[[first, second]].dropna()
                kappa, raw = _cohen(pair[first].to_numpy(), pair[second].to_numpy())
                rows.append(
                    {
                        "field": field,
                        "pair": f"{first}–{second}",
                        "kappa_kind": "cohen",
                        "kappa": kappa,
                        "raw_agreement": raw,
                        "n": len(pair),
                    }
                )
        complete = wide.dropna()
        kappa, raw = _fleiss(complete.to_numpy())
        rows.append(
            {
                "field": field,
                "pair": "all",
                "kappa_kind": "fleiss",
                "kappa": kappa,
                "raw_agreement": raw,
                "n": len(complete),
            }
        )
    out = pd.DataFrame(rows, columns=_OUTPUT)
    out["n"] = out["n"].astype("int64")
    return out
