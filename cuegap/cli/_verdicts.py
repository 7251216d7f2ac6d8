"""``cuegap verdicts``: every design's newest verdicts, as one verdict record each."""

from __future__ import annotations

import math
from typing import Annotated, Any

import typer
from rich.table import Table

from cuegap._terminal import safe
from cuegap.cli._analyze import DesignOption
from cuegap.cli._common import _engine, console, friendly


def _num(x: Any) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return ""
    return f"{x:+.3g}"


@friendly
def verdicts(
    design: DesignOption = None,
    analysis: Annotated[
        int | None,
        typer.Option(
            "--analysis",
            help="One analysis's verdict records (default: the newest "
            "analysis of each kind of every design the store holds).",
        ),
    ] = None,
) -> None:
    """List verdicts as one record per system and design: decision, estimate, rule, reason.

    Reads the stored `verdict_records` table, which every design's analysis writes in the
    same columns (`cuegap export verdict_records` writes it to a file).
    """
    from cuegap.audit import latest_analysis_id, load_table
    from cuegap.designs import designs_in_store, get

    engine = _engine(create=False)
    if analysis is not None:
        found = [(analysis, load_table(engine, "verdict_records", analysis))]
    else:
        names = [design] if design is not None else designs_in_store(engine)
        found = []
        for name in names:
            for kind in get(name).kinds:
                newest = latest_analysis_id(engine, kind)
                if newest is None:
                    continue
                try:
                    found.append((newest, load_table(engine, "verdict_records", newest)))
                except KeyError:  # stored by an older cuegap: no verdict records
                    console.print(f"analysis {newest} ({safe(kind)}) has no verdict records: "
                                  "re-run `cuegap analyze --force` to write them")  # fmt: skip
    if not found:
        raise ValueError("no verdicts are stored: run cuegap analyze")
    table = Table("system", "design", "analysis", "decision", "estimate [interval]", "method",
                  "reason", title="Verdicts")  # fmt: skip
    for analysis_id, frame in found:
        for r in frame.itertuples():
            est = _num(r.estimate)
            interval = f"[{_num(r.low)}, {_num(r.high)}]" if _num(r.low) else ""
            gate = "" if r.gate_passed is None or r.gate_passed != r.gate_passed else (
                ", gate passed" if r.gate_passed else ", gate missed")  # fmt: skip
            table.add_row(safe(r.system), safe(r.design), f"{analysis_id} ({safe(r.kind)})",
                          safe(r.decision),
                          safe(f"{est} {interval} {r.scale}" if est or interval else ""),
                          safe(f"{r.method}{gate}"), safe(r.reason))  # fmt: skip
    console.print(table)
