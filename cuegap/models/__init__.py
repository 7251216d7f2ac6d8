"""Pure statistics over DataFrames: rates, gaps, tests, hierarchical Bayesian models.

Depends only on pandas, numpy, scipy, statsmodels, pymc and arviz; never touches the
database, the ingest readers or the templates.
"""

from cuegap.models._rates import (
    cue_visibility_gap,
    decision_bias,
    group_rates,
    macro_average,
)
from cuegap.models._signtest import direction_of_change

__all__ = [
    "cue_visibility_gap",
    "decision_bias",
    "direction_of_change",
    "group_rates",
    "macro_average",
]
