"""Pure statistics of the dilemma design (seed 000): decision-bias rates, net bias, the Cue
Visibility Gap, the bootstrap, sign tests, system-level statistics, data quality, item-bank
agreement, format sensitivity and the hierarchical Bayesian model.

Depends only on pandas, numpy, scipy, statsmodels, pymc and arviz, and on the shared
statistics in :mod:`cuegap.models`; never on the store, the readers or the templates.
The names below load their module on first use (PEP 562).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cuegap.designs.dilemma.stats._agreement import annotator_agreement
    from cuegap.designs.dilemma.stats._bayes import BayesFit, fit_bayes
    from cuegap.designs.dilemma.stats._bayes_model import METHODS, MODEL_VERSION, PRIORS
    from cuegap.designs.dilemma.stats._bayes_post import prior_predictive
    from cuegap.designs.dilemma.stats._bayes_tables import bayes_tables
    from cuegap.designs.dilemma.stats._bootstrap import bootstrap
    from cuegap.designs.dilemma.stats._quality import (
        abstention_rates,
        exclusions,
        recovery_accuracy,
        status_bias,
    )
    from cuegap.designs.dilemma.stats._rates import (
        condition_label,
        condition_mask,
        cue_visibility_gap,
        decision_bias,
        group_rates,
        macro_average,
    )
    from cuegap.designs.dilemma.stats._signtest import direction_of_change
    from cuegap.designs.dilemma.stats._systems import (
        GapRegression,
        RankComparison,
        formal_named_share,
        gap_regression,
        rankings,
    )

_HOME = {
    "annotator_agreement": "cuegap.designs.dilemma.stats._agreement",
    "BayesFit": "cuegap.designs.dilemma.stats._bayes",
    "fit_bayes": "cuegap.designs.dilemma.stats._bayes",
    "METHODS": "cuegap.designs.dilemma.stats._bayes_model",
    "MODEL_VERSION": "cuegap.designs.dilemma.stats._bayes_model",
    "PRIORS": "cuegap.designs.dilemma.stats._bayes_model",
    "prior_predictive": "cuegap.designs.dilemma.stats._bayes_post",
    "bayes_tables": "cuegap.designs.dilemma.stats._bayes_tables",
    "bootstrap": "cuegap.designs.dilemma.stats._bootstrap",
    "abstention_rates": "cuegap.designs.dilemma.stats._quality",
    "exclusions": "cuegap.designs.dilemma.stats._quality",
    "recovery_accuracy": "cuegap.designs.dilemma.stats._quality",
    "status_bias": "cuegap.designs.dilemma.stats._quality",
    "condition_label": "cuegap.designs.dilemma.stats._rates",
    "condition_mask": "cuegap.designs.dilemma.stats._rates",
    "cue_visibility_gap": "cuegap.designs.dilemma.stats._rates",
    "decision_bias": "cuegap.designs.dilemma.stats._rates",
    "group_rates": "cuegap.designs.dilemma.stats._rates",
    "macro_average": "cuegap.designs.dilemma.stats._rates",
    "direction_of_change": "cuegap.designs.dilemma.stats._signtest",
    "formal_named_share": "cuegap.designs.dilemma.stats._systems",
    "gap_regression": "cuegap.designs.dilemma.stats._systems",
    "GapRegression": "cuegap.designs.dilemma.stats._systems",
    "RankComparison": "cuegap.designs.dilemma.stats._systems",
    "rankings": "cuegap.designs.dilemma.stats._systems",
}

__all__ = [
    "METHODS",
    "MODEL_VERSION",
    "PRIORS",
    "BayesFit",
    "GapRegression",
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
    "gap_regression",
    "group_rates",
    "macro_average",
    "prior_predictive",
    "rankings",
    "recovery_accuracy",
    "status_bias",
]


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_HOME))
