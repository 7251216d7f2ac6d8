"""Pure statistics every design shares, over DataFrames: rates, gaps, the bootstrap, sign
tests, the policy and the verdict engine, and the Bayesian sampling with its convergence
gate (each design's own statistics are in ``cuegap/designs/<name>/stats/``).

Depends only on pandas, numpy, scipy, statsmodels, pymc and arviz; never touches the
database, the ingest readers or the templates.

The names below load their module on first use (PEP 562), so that reading a policy or
registering a design does not import the statistics stack.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cuegap.models._agreement import annotator_agreement
    from cuegap.models._bayes import BayesFit, fit_bayes, idata_from_bytes, idata_to_bytes
    from cuegap.models._bayes_model import GATE, METHODS, MODEL_VERSION, PRIORS
    from cuegap.models._bayes_post import prior_predictive
    from cuegap.models._bayes_tables import bayes_tables
    from cuegap.models._bootstrap import bootstrap
    from cuegap.models._fit_runner import (
        SAMPLERS,
        check_sampler,
        chosen_sampler,
        run_gated,
        sample_nuts,
    )
    from cuegap.models._jax_nuts import (
        JaxFitInfo,
        jax_available,
        jax_fits,
        last_jax_fit,
        sample_jax_model,
    )
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
    from cuegap.models._policy import (
        DEFAULT_POLICY,
        Policy,
        PolicyKey,
        Range,
        declare_section,
        load_policy,
        sections,
        set_section_loader,
        withdraw_section,
    )
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

_HOME = {
    "contrast_se": "cuegap.models._plan",
    "decision_probability": "cuegap.models._plan",
    "design_effect": "cuegap.models._plan",
    "icc_anova": "cuegap.models._plan",
    "min_detectable_gap": "cuegap.models._plan",
    "pass_bound": "cuegap.models._plan",
    "required_size": "cuegap.models._plan",
    "PlanAssumptions": "cuegap.models._plan_assumptions",
    "assumed_input": "cuegap.models._plan_assumptions",
    "load_assumptions": "cuegap.models._plan_assumptions",
    "PLAN_COLUMNS": "cuegap.models._plan_table",
    "PlanInput": "cuegap.models._plan_table",
    "answer_line": "cuegap.models._plan_table",
    "decision_curve": "cuegap.models._plan_table",
    "plan_table": "cuegap.models._plan_table",
    "SAMPLERS": "cuegap.models._fit_runner",
    "check_sampler": "cuegap.models._fit_runner",
    "chosen_sampler": "cuegap.models._fit_runner",
    "JaxFitInfo": "cuegap.models._jax_nuts",
    "jax_available": "cuegap.models._jax_nuts",
    "jax_fits": "cuegap.models._jax_nuts",
    "last_jax_fit": "cuegap.models._jax_nuts",
    "sample_jax_model": "cuegap.models._jax_nuts",
    "run_gated": "cuegap.models._fit_runner",
    "sample_nuts": "cuegap.models._fit_runner",
    "annotator_agreement": "cuegap.models._agreement",
    "BayesFit": "cuegap.models._bayes",
    "fit_bayes": "cuegap.models._bayes",
    "idata_from_bytes": "cuegap.models._bayes",
    "idata_to_bytes": "cuegap.models._bayes",
    "GATE": "cuegap.models._bayes_model",
    "METHODS": "cuegap.models._bayes_model",
    "MODEL_VERSION": "cuegap.models._bayes_model",
    "PRIORS": "cuegap.models._bayes_model",
    "prior_predictive": "cuegap.models._bayes_post",
    "bayes_tables": "cuegap.models._bayes_tables",
    "bootstrap": "cuegap.models._bootstrap",
    "DEFAULT_POLICY": "cuegap.models._policy",
    "Policy": "cuegap.models._policy",
    "PolicyKey": "cuegap.models._policy",
    "Range": "cuegap.models._policy",
    "declare_section": "cuegap.models._policy",
    "load_policy": "cuegap.models._policy",
    "sections": "cuegap.models._policy",
    "set_section_loader": "cuegap.models._policy",
    "withdraw_section": "cuegap.models._policy",
    "abstention_rates": "cuegap.models._quality",
    "exclusions": "cuegap.models._quality",
    "recovery_accuracy": "cuegap.models._quality",
    "status_bias": "cuegap.models._quality",
    "condition_label": "cuegap.models._rates",
    "condition_mask": "cuegap.models._rates",
    "cue_visibility_gap": "cuegap.models._rates",
    "decision_bias": "cuegap.models._rates",
    "group_rates": "cuegap.models._rates",
    "macro_average": "cuegap.models._rates",
    "direction_of_change": "cuegap.models._signtest",
    "GapRegression": "cuegap.models._systems",
    "RankComparison": "cuegap.models._systems",
    "formal_named_share": "cuegap.models._systems",
    "gap_regression": "cuegap.models._systems",
    "rankings": "cuegap.models._systems",
    "VERDICTS": "cuegap.models._verdict",
    "gap_probabilities": "cuegap.models._verdict",
    "verdicts": "cuegap.models._verdict",
}

__all__ = [
    "DEFAULT_POLICY",
    "GATE",
    "METHODS",
    "MODEL_VERSION",
    "PLAN_COLUMNS",
    "PRIORS",
    "SAMPLERS",
    "VERDICTS",
    "BayesFit",
    "GapRegression",
    "JaxFitInfo",
    "PlanAssumptions",
    "PlanInput",
    "Policy",
    "PolicyKey",
    "Range",
    "RankComparison",
    "abstention_rates",
    "annotator_agreement",
    "answer_line",
    "assumed_input",
    "bayes_tables",
    "bootstrap",
    "check_sampler",
    "chosen_sampler",
    "condition_label",
    "condition_mask",
    "contrast_se",
    "cue_visibility_gap",
    "decision_bias",
    "decision_curve",
    "decision_probability",
    "declare_section",
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
    "jax_available",
    "jax_fits",
    "last_jax_fit",
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
    "run_gated",
    "sample_jax_model",
    "sample_nuts",
    "sections",
    "set_section_loader",
    "status_bias",
    "verdicts",
    "withdraw_section",
]


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module 'cuegap.models' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_HOME))
