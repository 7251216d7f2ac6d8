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
from cuegap.models._plan import (
    contrast_se,
    decision_probability,
    design_effect,
    icc_anova,
    min_detectable_gap,
    pass_bound,
    required_size,
)
from cuegap.models._plan_assumptions import PlanAssumptions, assumed_input, load_assumptions
from cuegap.models._plan_table import (
    PLAN_COLUMNS,
    PlanInput,
    answer_line,
    decision_curve,
    plan_table,
)
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
    "PLAN_COLUMNS",
    "PRIORS",
    "VERDICTS",
    "BayesFit",
    "GapRegression",
    "PlanAssumptions",
    "PlanInput",
    "Policy",
    "RankComparison",
    "abstention_rates",
    "annotator_agreement",
    "answer_line",
    "assumed_input",
    "bayes_tables",
    "bootstrap",
    "condition_label",
    "condition_mask",
    "contrast_se",
    "cue_visibility_gap",
    "decision_bias",
    "decision_curve",
    "decision_probability",
    "design_effect",
    "direction_of_change",
    "exclusions",
    "fit_bayes",
    "formal_named_share",
    "gap_probabilities",
    "gap_regression",
    "group_rates",
    "icc_anova",
    "idata_from_bytes",
    "idata_to_bytes",
    "load_assumptions",
    "load_policy",
    "macro_average",
    "min_detectable_gap",
    "pass_bound",
    "plan_table",
    "prior_predictive",
    "rankings",
    "recovery_accuracy",
    "required_size",
    "status_bias",
    "verdicts",
]
