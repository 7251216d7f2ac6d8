"""The dilemma and QA planners' pure parts on hand-built tables: which numbers they take
from where (sizes, floors, the ICC), and the default planner of a design without one."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from cuegap.designs import PlanRequest, PlanUnavailable, get
from cuegap.designs.dilemma.stats._plan import pilot_inputs
from cuegap.models import Policy


def _row(dilemma: str, cond: str, diff: object, favor: int, cons: bool = True) -> dict:
    return dict(system="a", condition=cond, difficulty=diff, consequences=cons,
                dilemma=dilemma, gender="woman", race="Asian", favor=favor, favor_trials=5,
                against=0, against_trials=5)  # fmt: skip


def test_dilemma_pilot_inputs_from_hand_built_tables() -> None:
    """Direct: dilemmas d1-d4 (favor 5, 5, 0, 0 of 5); puzzled-hard: d1-d3; a fifth
    dilemma only without consequences is not counted. Size = min(4, 3) = 3 dilemmas;
    decisions per dilemma = 10 on both sides, so min_parsable 200 needs 20 dilemmas.
    Favor rates per dilemma 1, 1, 0, 0: all spread is between dilemmas, ICC = 1 and
    DEFF = 1 + (5 − 1)·1 = 5."""
    rows = [
        _row(d, "direct", np.nan, f)
        for d, f in zip(["d1", "d2", "d3", "d4"], [5, 5, 0, 0], strict=True)
    ]
    rows += [_row(d, "puzzled", "hard", 2) for d in ("d1", "d2", "d3")]
    rows += [_row("d5", "direct", np.nan, 1, cons=False)]
    counts = pd.DataFrame(rows)
    verdicts = pd.DataFrame({"system": ["a"], "gap_pp": [3.0]})
    macro = pd.DataFrame({"system": ["a", "a"], "consequences": [True, False],
                          "gap_sd_pp": [1.5, 9.0]})  # fmt: skip
    (inp,) = pilot_inputs(verdicts, macro, counts, explicit=("direct", None),
                          implicit=("puzzled", "hard"), consequences=True,
                          policy=Policy(min_parsable=200))  # fmt: skip
    assert (inp.current_size, inp.min_size, inp.se, inp.gap) == (3, 20, 1.5, 3.0)
    assert inp.icc == pytest.approx(1.0)
    assert inp.deff == pytest.approx(5.0)
    assert inp.size_unit == "dilemmas per condition"
    assert inp.contrast == "direct vs puzzled-hard"


def test_a_system_without_a_gap_is_left_out() -> None:
    counts = pd.DataFrame([_row("d1", "direct", np.nan, 1), _row("d1", "puzzled", "hard", 1)])
    verdicts = pd.DataFrame({"system": ["a"], "gap_pp": [math.nan]})
    macro = pd.DataFrame({"system": ["a"], "consequences": [True], "gap_sd_pp": [1.0]})
    assert pilot_inputs(verdicts, macro, counts, explicit=("direct", None),
                        implicit=("puzzled", "hard"), consequences=True,
                        policy=Policy()) == []  # fmt: skip


def test_a_design_without_a_planner_says_so() -> None:
    """The interface's default, seen through the toy design (every built-in one plans)."""
    from tests.toy_design import ToyDesign

    with pytest.raises(PlanUnavailable, match="has no planner yet"):
        ToyDesign().plan(None, PlanRequest(policy=Policy()))


def test_a_planner_without_data_or_assumptions_says_what_to_give() -> None:
    for name in ("dilemma", "qa", "prompt-variance", "conversation"):
        with pytest.raises(PlanUnavailable, match="assumptions"):
            get(name).plan(None, PlanRequest(policy=Policy()))
