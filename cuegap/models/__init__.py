"""Pure statistics every design shares, over DataFrames: the policy and the verdict rule,
the Bayesian fit runner with its convergence gate, resampling helpers, and audit planning
(each design's own statistics are in ``cuegap/designs/<name>/stats/``).

Depends only on pandas, numpy, scipy, statsmodels, pymc and arviz; never touches the
database, the ingest readers or the templates.

The names below load their module on first use (PEP 562), so that reading a policy or
registering a design does not import the statistics stack.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cuegap.models._board import (
        BOARD_KEYS,
        board_cells,
        board_rule,
        cell_decision,
        overall_verdicts,
    )
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
    from cuegap.models._resample import summarise, system_rng
    from cuegap.models._sampling import GATE, gate_summary, idata_from_bytes, idata_to_bytes, quiet
    from cuegap.models._verdict import VERDICTS, gap_probabilities, verdicts

_HOME = {
    "board_cells": "cuegap.models._board",
    "BOARD_KEYS": "cuegap.models._board",
    "board_rule": "cuegap.models._board",
    "cell_decision": "cuegap.models._board",
    "overall_verdicts": "cuegap.models._board",
    "check_sampler": "cuegap.models._fit_runner",
    "chosen_sampler": "cuegap.models._fit_runner",
    "run_gated": "cuegap.models._fit_runner",
    "sample_nuts": "cuegap.models._fit_runner",
    "SAMPLERS": "cuegap.models._fit_runner",
    "jax_available": "cuegap.models._jax_nuts",
    "jax_fits": "cuegap.models._jax_nuts",
    "JaxFitInfo": "cuegap.models._jax_nuts",
    "last_jax_fit": "cuegap.models._jax_nuts",
    "sample_jax_model": "cuegap.models._jax_nuts",
    "contrast_se": "cuegap.models._plan",
    "decision_probability": "cuegap.models._plan",
    "design_effect": "cuegap.models._plan",
    "icc_anova": "cuegap.models._plan",
    "min_detectable_gap": "cuegap.models._plan",
    "pass_bound": "cuegap.models._plan",
    "required_size": "cuegap.models._plan",
    "assumed_input": "cuegap.models._plan_assumptions",
    "load_assumptions": "cuegap.models._plan_assumptions",
    "PlanAssumptions": "cuegap.models._plan_assumptions",
    "answer_line": "cuegap.models._plan_table",
    "decision_curve": "cuegap.models._plan_table",
    "PLAN_COLUMNS": "cuegap.models._plan_table",
    "plan_table": "cuegap.models._plan_table",
    "PlanInput": "cuegap.models._plan_table",
    "declare_section": "cuegap.models._policy",
    "DEFAULT_POLICY": "cuegap.models._policy",
    "load_policy": "cuegap.models._policy",
    "Policy": "cuegap.models._policy",
    "PolicyKey": "cuegap.models._policy",
    "Range": "cuegap.models._policy",
    "sections": "cuegap.models._policy",
    "set_section_loader": "cuegap.models._policy",
    "withdraw_section": "cuegap.models._policy",
    "summarise": "cuegap.models._resample",
    "system_rng": "cuegap.models._resample",
    "GATE": "cuegap.models._sampling",
    "gate_summary": "cuegap.models._sampling",
    "idata_from_bytes": "cuegap.models._sampling",
    "idata_to_bytes": "cuegap.models._sampling",
    "quiet": "cuegap.models._sampling",
    "gap_probabilities": "cuegap.models._verdict",
    "VERDICTS": "cuegap.models._verdict",
    "verdicts": "cuegap.models._verdict",
}

__all__ = [
    "BOARD_KEYS",
    "DEFAULT_POLICY",
    "GATE",
    "PLAN_COLUMNS",
    "SAMPLERS",
    "VERDICTS",
    "JaxFitInfo",
    "PlanAssumptions",
    "PlanInput",
    "Policy",
    "PolicyKey",
    "Range",
    "answer_line",
    "assumed_input",
    "board_cells",
    "board_rule",
    "cell_decision",
    "check_sampler",
    "chosen_sampler",
    "contrast_se",
    "decision_curve",
    "decision_probability",
    "declare_section",
    "design_effect",
    "gap_probabilities",
    "gate_summary",
    "icc_anova",
    "idata_from_bytes",
    "idata_to_bytes",
    "jax_available",
    "jax_fits",
    "last_jax_fit",
    "load_assumptions",
    "load_policy",
    "min_detectable_gap",
    "overall_verdicts",
    "pass_bound",
    "plan_table",
    "quiet",
    "required_size",
    "run_gated",
    "sample_jax_model",
    "sample_nuts",
    "sections",
    "set_section_loader",
    "summarise",
    "system_rng",
    "verdicts",
    "withdraw_section",
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
