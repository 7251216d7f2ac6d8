"""Pure statistics over DataFrames: rates, gaps, tests, prompt variance, Bayesian models.

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
from cuegap.models.prompt_variance import (
    PV_METRIC_DIRECTION,
    PV_METRICS,
    PVSimulation,
    RankDiscordance,
    extreme_ratio,
    kendall_w,
    pv_anova,
    pv_anova_summary,
    pv_components,
    pv_extremes,
    pv_format_sensitivity,
    pv_format_spread,
    pv_rank_discordance,
    pv_scores,
    simulate_pv_counts,
)
from cuegap.models.qa import (
    QA_METRICS,
    QA_MODEL_VERSION,
    QABayesFit,
    fit_qa_bayes,
    qa_bayes_tables,
    qa_bayes_verdicts,
    qa_bootstrap,
    qa_controls,
    qa_cue_gap,
    qa_group_means,
    qa_mitigation,
    qa_scores,
    qa_system_scores,
    qa_verdicts,
)

__all__ = [
    "DEFAULT_POLICY",
    "GATE",
    "METHODS",
    "MODEL_VERSION",
    "PRIORS",
    "PV_METRICS",
    "PV_METRIC_DIRECTION",
    "QA_METRICS",
    "QA_MODEL_VERSION",
    "VERDICTS",
    "BayesFit",
    "GapRegression",
    "PVSimulation",
    "Policy",
    "QABayesFit",
    "RankComparison",
    "RankDiscordance",
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
    "extreme_ratio",
    "fit_bayes",
    "fit_qa_bayes",
    "formal_named_share",
    "gap_probabilities",
    "gap_regression",
    "group_rates",
    "idata_from_bytes",
    "idata_to_bytes",
    "kendall_w",
    "load_policy",
    "macro_average",
    "prior_predictive",
    "pv_anova",
    "pv_anova_summary",
    "pv_components",
    "pv_extremes",
    "pv_format_sensitivity",
    "pv_format_spread",
    "pv_rank_discordance",
    "pv_scores",
    "qa_bayes_tables",
    "qa_bayes_verdicts",
    "qa_bootstrap",
    "qa_controls",
    "qa_cue_gap",
    "qa_group_means",
    "qa_mitigation",
    "qa_scores",
    "qa_system_scores",
    "qa_verdicts",
    "rankings",
    "recovery_accuracy",
    "simulate_pv_counts",
    "status_bias",
    "verdicts",
]
