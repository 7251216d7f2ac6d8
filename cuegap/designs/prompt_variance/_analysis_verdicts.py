"""The prompt-variance design's ``verdicts`` table: per system and headline score, does the
score survive the prompt format? (issue 26; rule:
:mod:`cuegap.designs.prompt_variance.stats._verdict`).

A headline score's value per run (system × prompt combination × replicate) is the
unweighted mean over the categories that run scored, as the QA design averages
dimensions: s_BBQ_dis and s_BBQ_amb from ``pv_scores``, and, when the store's BBQ items
come under both an explicit and an implicit cue, the per-run cue gap of
:func:`cuegap.designs.prompt_variance.sensitivity.cue_gap_runs`.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from cuegap.designs.prompt_variance.sensitivity import cue_gap_runs
from cuegap.designs.prompt_variance.stats._verdict import pv_verdicts
from cuegap.models import Policy

#: The signed bias scores (0 = no bias) that get a verdict.
HEADLINE_METRICS = ("s_bbq_dis", "s_bbq_amb")


def headline_runs(
    scores: pd.DataFrame,
    *,
    factors: Sequence[str],
    by_cue: pd.DataFrame | None = None,
    strategy: str = "zero-shot",
) -> pd.DataFrame:
    """Per-run values of every headline score.

    Parameters
    ----------
    scores : DataFrame
        ``pv_scores`` (per system × category × combination × replicate × metric).
    factors : sequence of str
    by_cue : DataFrame, optional
        The per-cue counts (:func:`cuegap.schema.pv_counts` with a ``cue`` key); gives
        the ``cue_gap`` score when it has an explicit vs implicit contrast.
    strategy : str, default "zero-shot"
        The prompting strategy of the cue gap.

    Returns
    -------
    DataFrame
        ``system``, ``score``, the factors, ``replicate``, ``value``.
    """
    factors = list(factors)
    keys = ["system", "metric", *factors, "replicate"]
    s = scores[scores["metric"].isin(HEADLINE_METRICS) & scores["score"].notna()]
    parts = [
        s.groupby(keys, as_index=False, dropna=False)["score"]
        .mean()
        .rename(columns={"metric": "score", "score": "value"})
    ]
    if by_cue is not None:
        gap = cue_gap_runs(by_cue, factors=factors, strategy=strategy)
        if gap is not None:
            parts.append(gap.rename(columns={"gap": "value"}).assign(score="cue_gap"))
    cols = ["system", "score", *factors, "replicate", "value"]
    return pd.concat([p[cols] for p in parts], ignore_index=True)


def pv_verdict_table(
    scores: pd.DataFrame,
    *,
    factors: Sequence[str],
    policy: Policy,
    by_cue: pd.DataFrame | None = None,
    strategy: str = "zero-shot",
) -> pd.DataFrame:
    """The stored ``verdicts`` table: :func:`cuegap.models.pv_verdicts` of
    :func:`headline_runs` under the policy's ``delta_bias`` and ``[prompt_variance]``
    keys."""
    runs = headline_runs(scores, factors=factors, by_cue=by_cue, strategy=strategy)
    return pv_verdicts(
        runs,
        factors=list(factors),
        delta=policy.delta_bias,
        probability=policy.format_probability,
        min_combinations=policy.min_combinations,
        min_replicates=policy.min_replicates,
    )
