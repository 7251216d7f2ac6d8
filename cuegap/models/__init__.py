"""Pure statistics over DataFrames: rates, gaps, tests, prompt variance, conversations, Bayesian
models.

Depends only on pandas, numpy, scipy, statsmodels, pymc and arviz; never touches the
database, the ingest readers or the templates.
"""

from cuegap.models._agreement import annotator_agreement
from cuegap.models._bayes import BayesFit, fit_bayes, idata_from_bytes, idata_to_bytes
from cuegap.models._bayes_model import GATE, METHODS, MODEL_VERSION, PRIORS, prior_predictive
from cuegap.models._bayes_tables import bayes_tables
from cuegap.models._bootstrap import bootstrap
from cuegap.models._policy import DEFAULT_POLICY, Policy, load_policy
from cuegap.models._quality import abstention_rates, exclusions, recovery_accuracy, status_bias
from cuegap.models._rates import (
    condition_label,
    condition_mask,
    cue_visibility_gap,
    decision_bias,
    group_rates,
    macro_average,
)
from cuegap.models._signtest import direction_of_change
from cuegap.models._systems import (
    GapRegression,
    RankComparison,
    formal_named_share,
    gap_regression,
    rankings,
)
from cuegap.models._verdict import VERDICTS, gap_probabilities, verdicts

__all__ = [
    "DEFAULT_POLICY",
    "GATE",
    "METHODS",
    "MODEL_VERSION",
    "PRIORS",
    "VERDICTS",
    "BayesFit",
    "GapRegression",
    "Policy",
    "RankComparison",
    "abstention_rates",
    "annotator_agreement",
    "bayes_tables",
    "bootstrap",
    "condition_label",
    "condition_mask",
    "cue_visibility_gap",
    "decision_bias",
    "direction_of_change",
    "exclusions",
    "fit_bayes",
    "formal_named_share",
    "gap_probabilities",
    "gap_regression",
    "group_rates",
    "idata_from_bytes",
    "idata_to_bytes",
    "load_policy",
    "macro_average",
    "prior_predictive",
    "rankings",
    "recovery_accuracy",
    "status_bias",
    "verdicts",
]
