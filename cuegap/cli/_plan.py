"""``cuegap plan``: how likely each system's audit is to reach a decision, and what it would
take. Asks every design the store holds (or the one named) for its plan inputs
(:meth:`cuegap.designs.Design.plan`); names no design."""

from __future__ import annotations

import hashlib
import math
from dataclasses import asdict
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from cuegap.cli._analyze import DesignOption
from cuegap.cli.common import _engine, console, friendly, safe

PLAN_TABLE = "plan"
PLAN_KIND = "plan"
PLAN_DESCRIPTION = (
    "Audit plan: one row per system x headline contrast x decision (flag, pass): "
    "current_size in size_unit, p_decide (probability of that decision at the current size "
    "if the true gap is the estimate; 0 for pass), required_size for the target probability "
    "(empty: not reachable up to max_size), mde (smallest gap flagged with the target "
    "probability now), and the gap, standard error, policy, icc and deff it rests on."
)


def _size(x: float) -> str:
    return "" if not math.isfinite(x) else f"{x:,.0f}"


def _inputs(design: str | None, assumptions: Path | None, policy: Any) -> tuple[list, Any]:
    from cuegap.designs import DESIGNS, PlanRequest, PlanUnavailable, designs_in_store, get
    from cuegap.models import load_assumptions

    if assumptions is not None:
        stated = load_assumptions(assumptions)
        if design is None:
            raise ValueError("stated assumptions are in one design's units: give --design "
                             f"({', '.join(DESIGNS)})")  # fmt: skip
        chosen = get(design)
        return chosen.plan(None, PlanRequest(policy=policy, assumptions=stated)), None
    engine = _engine(create=False)
    names = [design] if design is not None else designs_in_store(engine)
    inputs: list = []
    for name in names:
        try:
            inputs.extend(get(name).plan(engine, PlanRequest(policy=policy)))
        except PlanUnavailable as exc:
            if design is not None:
                raise
            console.print(f"{safe(name)}: {safe(str(exc))}")
    return inputs, engine


def _store(engine: Any, table: Any, settings: dict[str, Any]) -> int:
    from cuegap.audit import save_analysis

    digest = hashlib.sha256(table.to_csv(index=False).encode("utf-8")).hexdigest()
    return save_analysis(
        engine,
        kind=PLAN_KIND,
        status="ok",
        data_fingerprint=digest,
        system_fingerprints={},
        settings=settings,
        tables={PLAN_TABLE: table},
        descriptions={PLAN_TABLE: PLAN_DESCRIPTION},
    )


@friendly
def plan(
    design: DesignOption = None,
    assumptions: Annotated[
        Path | None,
        typer.Option(
            "--assumptions",
            help="Stated assumptions (TOML, a [plan] table: items, rates, icc, gap; or the "
            "prompt-variance or conversation keys, docs/analysis.md) instead of a pilot "
            "store; the plan is printed, not stored.",
        ),
    ] = None,
    policy: Annotated[
        Path | None,
        typer.Option(
            "--policy",
            help="Verdict policy TOML file (default: the policy each analysis was run "
            "under; the built-in one with --assumptions).",
        ),
    ] = None,
    target: Annotated[
        float,
        typer.Option("--target", min=0.5, max=0.99, help="Decision probability to plan for."),
    ] = 0.8,
    max_factor: Annotated[
        float,
        typer.Option(
            "--max-factor",
            min=1.0,
            help="Largest realistic size, as a multiple of the audit's size; beyond it a "
            "decision is called not reachable.",
        ),
    ] = 100.0,
    figure: Annotated[
        Path | None,
        typer.Option("--figure", help="Also draw decision probability against size (PNG)."),
    ] = None,
) -> None:
    """How likely each system's audit is to reach a decision, and the size it would take.

    Per system and headline contrast: the probability of a flag (if the true gap is the
    estimate) and of a pass (if it is 0) at the audit's size, the size for --target, and
    the minimum detectable gap. From the store's newest analysis of each design (a pilot
    or a finished audit), stored as the `plan` table (`cuegap export plan`); or from
    --assumptions before any data exist.
    """
    from cuegap.models import answer_line, load_policy, plan_table

    chosen = load_policy(policy) if policy is not None or assumptions is not None else None
    inputs, engine = _inputs(design, assumptions, chosen)
    if not inputs:
        raise ValueError("nothing to plan: no design the store holds has a planner with data")
    table = plan_table(inputs, target=target, max_factor=max_factor)
    shown = Table("system", "design", "contrast", "decision", "now", "P(decide)", "needed",
                  "unit", "mde", title=f"Audit plan (target {100 * target:.0f}%)")  # fmt: skip
    for r in table.itertuples():
        shown.add_row(safe(r.system), safe(r.design), safe(r.contrast), r.decision,
                      _size(r.current_size), f"{r.p_decide:.2f}", _size(r.required_size) or "-",
                      safe(r.size_unit), f"{r.mde:.3g}")  # fmt: skip
    console.print(shown)
    for _, row in table.iterrows():
        console.print(safe(answer_line(row)))
    if figure is not None:
        from cuegap.reports import plan_figure

        plan_figure(inputs, target=target, out=figure, max_factor=max_factor)
        console.print(f"Wrote {safe(str(figure))}")
    if engine is not None:
        settings = {
            "target": target,
            "max_factor": max_factor,
            "policy": asdict(chosen) if chosen is not None else "as stored with each analysis",
            "designs": sorted({i.design for i in inputs}),
        }
        found = _store(engine, table, settings)
        console.print(f"Stored as table {PLAN_TABLE!r} of plan analysis {found} "
                      f"(cuegap export {PLAN_TABLE} --out FILE.csv)")  # fmt: skip
