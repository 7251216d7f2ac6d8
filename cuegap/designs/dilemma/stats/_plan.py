"""What a dilemma audit's size gives: the plan inputs of the macro Cue Visibility Gap.

Pure: count frames and stored result tables in, :class:`cuegap.models.PlanInput` out. The
size unit is the bootstrap's resampling unit, dilemmas per condition (each dilemma asked
under both compared conditions, so the contrast is paired and the stored bootstrap SD,
which resamples dilemmas jointly across conditions, already carries that pairing and the
clustering of decisions within dilemmas).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd

from cuegap.designs.dilemma.stats import condition_label, condition_mask
from cuegap.models import (
    PlanAssumptions,
    PlanInput,
    Policy,
    assumed_input,
    design_effect,
    icc_anova,
)

__all__ = ["SIZE_UNIT", "assumed_inputs", "pilot_inputs"]

SIZE_UNIT = "dilemmas per condition"
_DESIGN = "dilemma"


def _contrast(explicit: Sequence, implicit: Sequence) -> str:
    return f"{condition_label(explicit)} vs {condition_label(implicit)}"


def _side(counts: pd.DataFrame, cond: Sequence) -> pd.DataFrame:
    """Per dilemma: favor events and trials, and parsable decisions, under ``cond``."""
    side = counts[condition_mask(counts, cond)]
    per = side.groupby("dilemma")[["favor", "favor_trials", "against_trials"]].sum()
    per["decisions"] = per["favor_trials"] + per["against_trials"]
    return per[per["decisions"] > 0]


def pilot_inputs(
    verdicts: pd.DataFrame,
    macro_gap: pd.DataFrame,
    counts: pd.DataFrame,
    *,
    explicit: Sequence,
    implicit: Sequence,
    consequences: bool,
    policy: Policy,
    source: str = "",
) -> list[PlanInput]:
    """One plan input per system whose verdict has a gap and a bootstrap SD.

    Parameters
    ----------
    verdicts, macro_gap : DataFrame
        The stored ``verdicts`` and ``macro_gap`` tables of one frequentist analysis.
    counts : DataFrame
        :func:`cuegap.schema.decision_counts` of the store (one row per system, condition,
        difficulty, consequences, dilemma, individual).
    explicit, implicit : (condition, difficulty)
        The compared conditions of that analysis; ``consequences`` its setting.
    policy : Policy
        δ (``delta_pp``), the probability, and ``min_parsable`` (which sets the smallest
        size at which the rule can decide).

    Returns
    -------
    list of PlanInput
        ``gap`` = the estimate, ``se`` = its bootstrap SD, ``current_size`` = the fewer
        dilemmas with a parsable decision of the two conditions, ``min_size`` =
        ``min_parsable`` over the decisions per dilemma, ``icc`` of the Favor outcome
        between dilemmas under the explicit condition and its design effect.
    """
    mg = macro_gap[macro_gap["consequences"].astype(bool) == bool(consequences)]
    sd = mg.set_index("system")["gap_sd_pp"]
    cn = counts[counts["consequences"].astype(bool) == bool(consequences)]
    out = []
    for row in verdicts.itertuples(index=False):
        system = row.system
        if not (math.isfinite(row.gap_pp) and system in sd.index and math.isfinite(sd[system])):
            continue
        mine = cn[cn["system"] == system]
        sides = [_side(mine, explicit), _side(mine, implicit)]
        size = min(len(s) for s in sides)
        if size == 0:
            continue
        per_dilemma = min(s["decisions"].sum() / len(s) for s in sides)
        e = sides[0]
        icc = icc_anova(e["favor"], e["favor_trials"])
        trials = e["favor_trials"][e["favor_trials"] > 0].to_numpy(dtype=float)
        deff = (
            design_effect(trials, min(max(icc, 0.0), 1.0))
            if math.isfinite(icc) and trials.size
            else math.nan
        )
        out.append(
            PlanInput(
                system=str(system),
                design=_DESIGN,
                contrast=_contrast(explicit, implicit),
                gap=float(row.gap_pp),
                se=float(sd[system]),
                current_size=float(size),
                size_unit=SIZE_UNIT,
                delta=policy.delta_pp,
                probability=policy.probability,
                min_size=float(max(1, math.ceil(policy.min_parsable / per_dilemma))),
                scale="pp",
                source=source,
                icc=float(icc),
                deff=float(deff),
            )
        )
    return out


def assumed_inputs(
    assumptions: PlanAssumptions,
    policy: Policy,
    *,
    explicit: Sequence = ("direct", None),
    implicit: Sequence = ("puzzled", "hard"),
) -> list[PlanInput]:
    """Plan inputs from stated assumptions: rates of the decision the net differences,
    the gap in percentage points (a rate difference × 100), one per named system."""
    per_dilemma = assumptions.responses_per_item
    return [
        assumed_input(
            assumptions,
            system,
            design=_DESIGN,
            contrast=_contrast(explicit, implicit),
            size_unit=SIZE_UNIT,
            delta=policy.delta_pp,
            probability=policy.probability,
            scale_factor=100.0,
            scale="pp",
            min_size=float(max(1, np.ceil(policy.min_parsable / per_dilemma))),
        )
        for system in assumptions.systems
    ]
