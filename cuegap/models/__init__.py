"""Pure statistics over DataFrames: rates, gaps, tests, hierarchical Bayesian models.

Depends only on pandas, numpy, scipy, statsmodels, pymc and arviz; never touches the
database, the ingest readers or the templates.
"""

from cuegap.models._policy import DEFAULT_POLICY, Policy, load_policy
from cuegap.models._quality import abstention_rates, exclusions, recovery_accuracy, status_bias
from cuegap.models._rates import (
    cue_visibility_gap,
    decision_bias,
    group_rates,
    macro_average,
)
from cuegap.models._signtest import direction_of_change

__all__ = [
    "DEFAULT_POLICY",
    "Policy",
    "abstention_rates",
    "cue_visibility_gap",
    "decision_bias",
    "direction_of_change",
    "exclusions",
    "group_rates",
    "load_policy",
    "macro_average",
    "recovery_accuracy",
    "status_bias",
]
