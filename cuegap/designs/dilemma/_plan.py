"""The dilemma design's planner: reads the newest frequentist analysis and the store's
counts, and hands them to :mod:`cuegap.designs.dilemma.stats._plan`."""

from __future__ import annotations

from sqlalchemy.engine import Engine

from cuegap.designs import PlanRequest, PlanUnavailable, policy_from_stored, stored_settings
from cuegap.designs.dilemma.stats import _plan as stats_plan
from cuegap.models import PlanInput, Policy

_KIND = "frequentist"


def plan(engine: Engine | None, request: PlanRequest) -> list[PlanInput]:
    """The dilemma design's plan inputs (:meth:`cuegap.designs.Design.plan`); under
    ``request.policy``, or when it is None the policy stored with the analysis."""
    if request.assumptions is not None:
        return stats_plan.assumed_inputs(request.assumptions, request.policy or Policy())
    from cuegap.audit import latest_analysis_id, load_table
    from cuegap.schema import decision_counts

    if engine is None:
        raise PlanUnavailable("give a store or an assumptions file to plan the dilemma design")
    found = latest_analysis_id(engine, _KIND)
    if found is None:
        raise PlanUnavailable(
            "no dilemma analysis is stored to plan from: run cuegap analyze --design dilemma "
            "on a pilot, or give --assumptions FILE"
        )
    st = stored_settings(engine, found)
    explicit = tuple(st.get("explicit", ("direct", None)))
    implicit = tuple(st.get("implicit", ("puzzled", "hard")))
    return stats_plan.pilot_inputs(
        load_table(engine, "verdicts", found),
        load_table(engine, "macro_gap", found),
        decision_counts(engine),
        explicit=explicit,
        implicit=implicit,
        consequences=bool(st.get("consequences", True)),
        policy=request.policy or policy_from_stored(st),
        source=f"dilemma analysis {found}",
    )
