"""The prompt-variance design's planner: reads the newest prompt-variance analysis's
``verdicts`` and hands them to :mod:`cuegap.designs.prompt_variance.stats._plan`."""

from __future__ import annotations

from sqlalchemy.engine import Engine

from cuegap.designs import PlanRequest, PlanUnavailable, policy_from_stored, stored_settings
from cuegap.designs.prompt_variance.stats import _plan as stats_plan
from cuegap.models import PlanInput, Policy

_KIND = "prompt_variance"


def plan(engine: Engine | None, request: PlanRequest) -> list[PlanInput]:
    """The prompt-variance design's plan inputs (:meth:`cuegap.designs.Design.plan`); under
    ``request.policy``, or when it is None the policy stored with the analysis."""
    if request.assumptions is not None:
        return stats_plan.assumed_inputs(request.assumptions, request.policy or Policy())
    from cuegap.audit import latest_analysis_id, load_table

    if engine is None:
        raise PlanUnavailable(
            "give a store or an assumptions file to plan the prompt-variance design"
        )
    found = latest_analysis_id(engine, _KIND)
    if found is None:
        raise PlanUnavailable(
            "no prompt-variance analysis is stored to plan from: run cuegap analyze "
            "--design prompt-variance on a pilot, or give --assumptions FILE"
        )
    policy = request.policy or policy_from_stored(stored_settings(engine, found))
    return stats_plan.pilot_inputs(
        load_table(engine, "verdicts", found), policy, source=f"prompt-variance analysis {found}"
    )
