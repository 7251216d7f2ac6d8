"""What a QA audit's size gives: the plan inputs of the verdict's gap G = S_amb(implicit) −
S_amb(explicit).

Pure: stored result tables and count frames in, :class:`cuegap.models.PlanInput` out. The
size unit is questions per category (bias dimension) and context: the verdict's gap
averages the dimensions' ambiguous-context bias scores, and its bootstrap resamples
answers within each cell, so its standard error scales with the root of the questions
asked per dimension.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from cuegap.models import (
    PlanAssumptions,
    PlanInput,
    Policy,
    assumed_input,
    design_effect,
    icc_anova,
)

__all__ = ["SIZE_UNIT", "assumed_inputs", "pilot_inputs"]

SIZE_UNIT = "questions per category and context"
CONTRAST = "S_amb implicit vs explicit"
_DESIGN = "qa"


def _icc(counts: pd.DataFrame) -> tuple[float, float]:
    """ICC between questions (templates) of giving a non-unknown answer in ambiguous
    contexts under the explicit cue, and its design effect; NaN without templates."""
    if counts.empty or "template" not in counts.columns:
        return math.nan, math.nan
    amb = counts[(counts["context"] == "ambiguous") & (counts["answer"] != "unparsable")]
    if amb.empty:
        return math.nan, math.nan
    biased = amb["n"].where(amb["answer"] != "unknown", 0)
    per = pd.DataFrame({"events": biased, "trials": amb["n"], "t": amb["template"]})
    per = per.groupby("t")[["events", "trials"]].sum()
    icc = icc_anova(per["events"], per["trials"])
    if not math.isfinite(icc):
        return icc, math.nan
    return icc, design_effect(per["trials"].to_numpy(dtype=float), min(max(icc, 0.0), 1.0))


def pilot_inputs(
    verdicts: pd.DataFrame,
    cue_gap: pd.DataFrame,
    dimension_gap: pd.DataFrame,
    counts: pd.DataFrame | None,
    *,
    delta: float,
    policy: Policy,
    metric: str = "s_amb",
    source: str = "",
) -> list[PlanInput]:
    """One plan input per (system, strategy) verdict with a gap and a bootstrap SD.

    Parameters
    ----------
    verdicts, cue_gap, dimension_gap : DataFrame
        The stored ``verdicts``, ``qa_cue_gap`` and ``qa_dimension_gap`` tables of one QA
        analysis.
    counts : DataFrame, optional
        :func:`cuegap.schema.qa_counts` of the store, for the intra-question correlation
        (informational: the bootstrap SD already carries the spread between questions).
    delta : float
        The QA δ on the bias-score scale; ``policy`` gives the probability and
        ``min_parsable`` (parsable answers per side, summed over dimensions).

    Returns
    -------
    list of PlanInput
        ``current_size`` = the mean over dimensions of the fewer parsable ambiguous answers
        of the two cues; ``min_size`` = ``min_parsable`` over the number of dimensions.
    """
    gaps = cue_gap[(cue_gap["metric"] == metric) & (cue_gap["context"] == "ambiguous")]
    dims = dimension_gap[
        (dimension_gap["metric"] == metric) & (dimension_gap["context"] == "ambiguous")
    ]
    out = []
    for row in verdicts.itertuples(index=False):
        mine = gaps[(gaps["system"] == row.system) & (gaps["strategy"] == row.strategy)]
        if mine.empty or not math.isfinite(row.gap):
            continue
        se = float(mine["gap_sd"].iloc[0])
        d = dims[(dims["system"] == row.system) & (dims["strategy"] == row.strategy)]
        if d.empty or not math.isfinite(se):
            continue
        size = float(np.minimum(d["n_explicit"], d["n_implicit"]).mean())
        icc, deff = math.nan, math.nan
        if counts is not None:
            own = counts[
                (counts["system"] == row.system)
                & (counts["strategy"] == row.strategy)
                & (counts["cue"] == "explicit")
            ]
            icc, deff = _icc(own)
        out.append(
            PlanInput(
                system=str(row.system),
                design=_DESIGN,
                contrast=f"{CONTRAST} ({row.strategy})",
                gap=float(row.gap),
                se=se,
                current_size=size,
                size_unit=SIZE_UNIT,
                delta=delta,
                probability=policy.probability,
                min_size=float(max(1, math.ceil(policy.min_parsable / len(d)))),
                scale="bias score",
                source=source,
                icc=float(icc),
                deff=float(deff),
            )
        )
    return out


def assumed_inputs(
    assumptions: PlanAssumptions, policy: Policy, *, categories: int = 1
) -> list[PlanInput]:
    """Plan inputs from stated assumptions: the rates of a non-unknown (biased) answer in
    ambiguous contexts under each cue, the gap on the bias-score scale (a bias score moves
    one for one with that rate when the unknown answer is rare; a stated ``gap`` is taken as
    it is). ``items`` is questions per category and context."""
    return [
        assumed_input(
            assumptions,
            system,
            design=_DESIGN,
            contrast=CONTRAST,
            size_unit=SIZE_UNIT,
            delta=policy.delta_bias,
            probability=policy.probability,
            scale_factor=1.0,
            scale="bias score",
            min_size=float(max(1, math.ceil(policy.min_parsable / categories))),
        )
        for system in assumptions.systems
    ]
