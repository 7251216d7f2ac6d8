"""The QA design's planner: reads the newest QA analysis and the store's counts, and hands
them to :mod:`cuegap.designs.qa.stats._plan`."""

from __future__ import annotations

from sqlalchemy.engine import Engine

from cuegap.designs import PlanRequest, PlanUnavailable, policy_from_stored, stored_settings
from cuegap.designs.qa.stats import _plan as stats_plan
from cuegap.models import PlanInput, Policy

_KIND = "qa"


def plan(engine: Engine | None, request: PlanRequest) -> list[PlanInput]:
    """The QA design's plan inputs (:meth:`cuegap.designs.Design.plan`); under
    ``request.policy``, or when it is None the policy and δ stored with the analysis."""
    if request.assumptions is not None:
        return stats_plan.assumed_inputs(request.assumptions, request.policy or Policy())
    from cuegap.audit import latest_analysis_id, load_table
    from cuegap.schema import qa_counts

    if engine is None:
        raise PlanUnavailable("give a store or an assumptions file to plan the QA design")
    found = latest_analysis_id(engine, _KIND)
    if found is None:
        raise PlanUnavailable(
            "no QA analysis is stored to plan from: run cuegap analyze --design qa on a "
            "pilot, or give --assumptions FILE"
        )
    st = stored_settings(engine, found)
    policy = request.policy or policy_from_stored(st)
    delta = policy.delta_bias if request.policy else float(st.get("delta", policy.delta_bias))
    return stats_plan.pilot_inputs(
        load_table(engine, "verdicts", found),
        load_table(engine, "qa_cue_gap", found),
        load_table(engine, "qa_dimension_gap", found),
        qa_counts(engine),
        delta=delta,
        policy=policy,
        source=f"QA analysis {found}",
    )
