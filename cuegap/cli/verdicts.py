"""``cuegap verdicts``: every design's newest verdicts, as one verdict record each."""

from __future__ import annotations

import math
from typing import Annotated, Any

import typer
from rich.table import Table

from cuegap.cli._analyze import DesignOption
from cuegap.cli.common import _engine, console, friendly
from cuegap.terminal import safe


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
    from cuegap.audit import load_table
    from cuegap.designs import analysis_kind, designs_in_store, get

    engine = _engine(create=False)
    if analysis is not None:
        found = [(analysis, load_table(engine, "verdict_records", analysis))]
    else:
        names = [design] if design is not None else designs_in_store(engine)
        found = []
        for name in names:
            for newest in get(name).current_analyses(engine):
                try:
                    found.append((newest, load_table(engine, "verdict_records", newest)))
                except KeyError:  # stored by an older cuegap: no verdict records
                    kind = analysis_kind(engine, newest)
                    console.print(f"analysis {newest} ({safe(kind)}) has no verdict records: "
                                  "re-run `cuegap analyze --force` to write them")  # fmt: skip
    if not found:
        raise ValueError("no verdicts are stored: run cuegap analyze")
    console.print(records_table(found, "Verdicts", listing=True))


def records_table(found: list[tuple[int, Any]], title: str, *, listing: bool = False) -> Table:
    """Verdict records as one table, the same for every design (untrusted text escaped).

    Parameters
    ----------
    found : list of (int, DataFrame)
        Analysis ids and their stored verdict records.
    title : str
    listing : bool
        Add the design and analysis columns (``cuegap verdicts`` across designs).

    Notes
    -----
    A verdict of a Bayesian fit that missed its gate reads *inconclusive*
    (:func:`cuegap.designs._verdicts.gate_applied`). Where an analysis gives a system
    several verdicts (one per score), a ``compared`` column tells them apart.
    """
    from cuegap.designs import gate_applied

    several = any(f["system"].duplicated().any() for _, f in found if len(f))
    head = ["system", *(["design", "analysis"] if listing else []),
            *(["compared"] if several else []), "decision", "estimate [interval]", "method",
            "reason"]  # fmt: skip
    table = Table(*head, title=title)
    for analysis_id, frame in found:
        for r in gate_applied(frame).itertuples():
            est = _num(r.estimate)
            interval = f"[{_num(r.low)}, {_num(r.high)}]" if _num(r.low) else ""
            gate = "" if r.gate_passed is None or r.gate_passed != r.gate_passed else (
                ", gate passed" if r.gate_passed else ", gate missed")  # fmt: skip
            row = [safe(r.system)]
            if listing:
                row += [safe(r.design), f"{analysis_id} ({safe(r.kind)})"]
            if several:
                row.append(safe(r.compared))
            shown = f"{est} {interval} {r.scale}" if est or interval else ""
            row += [safe(r.decision), safe(shown), safe(f"{r.method}{gate}"), safe(r.reason)]
            table.add_row(*row)
    return table


def print_verdicts(engine: Any, analysis_id: int, title: str, *, empty: str = "") -> None:
    """Print the stored verdict records of one analysis (``cuegap analyze`` of any design
    prints its verdicts this way, so that it shows what ``cuegap verdicts``, ``export`` and
    ``reanalyze`` read).

    Parameters
    ----------
    engine : Engine
    analysis_id : int
        The analysis just stored (or reused).
    title : str
        The table's title, e.g. "Verdicts (posterior)".
    empty : str, optional
        What to print when the analysis gave no verdict (nothing by default).
    """
    from cuegap.changes import verdict_records_of

    try:
        records = verdict_records_of(engine, analysis_id)
    except KeyError:  # an analysis without verdicts
        records = None
    if records is None or not len(records):
        if empty:
            console.print(empty)
        return
    console.print(records_table([(analysis_id, records)], title))
