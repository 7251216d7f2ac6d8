"""What changed since the last signed report: one comparison of verdict records, for every
design.

Every stored analysis with verdicts stores its ``verdict_records`` (:mod:`cuegap.designs.
_verdicts`), in the same columns for every design. ``cuegap reanalyze`` compares the records
a new report shows with those the last signed report of the same design showed. Which
analysis's records a report shows is the design's choice
(:meth:`cuegap.designs.Design.shown_analysis`: a Bayesian fit of the same data and
question when there is one, else the analysis itself). A record of a fit that missed its
convergence gate counts as *inconclusive*, whatever else it says.
"""

from __future__ import annotations

import math
from statistics import NormalDist

import pandas as pd
from sqlalchemy import select
from sqlalchemy.engine import Engine

from cuegap.schema import Analysis, AnalysisTable, Report, SignOff

__all__ = [
    "CHANGE_COLUMNS",
    "changes_since_signed",
    "compare_records",
    "last_signed",
    "shown_records",
    "verdict_records_of",
]

#: The columns of a changes table (what the reports' "what changed" section reads).
CHANGE_COLUMNS = (
    "system", "compared", "old_verdict", "new_verdict", "verdict_changed", "old_gap_pp",
    "new_gap_pp", "gap_change_pp", "gap_moved", "note",
)  # fmt: skip


def verdict_records_of(engine: Engine, analysis_id: int) -> pd.DataFrame:
    """The stored verdict records of an analysis.

    An analysis stored before verdict records existed gets them built now from its stored
    ``verdicts`` table by its design, as the store would have written them.

    Raises
    ------
    KeyError
        When the analysis stored no verdicts at all.
    """
    from cuegap.audit import load_table, table_from_json
    from cuegap.designs import for_kind

    try:
        return load_table(engine, "verdict_records", analysis_id)
    except KeyError:
        pass
    with engine.connect() as conn:
        row = conn.execute(
            select(Analysis.kind, Analysis.status, Analysis.settings).where(
                Analysis.id == analysis_id
            )
        ).one()
        stored = conn.execute(
            select(AnalysisTable.name, AnalysisTable.data).where(
                AnalysisTable.analysis_id == analysis_id
            )
        ).all()
    tables = {name: table_from_json(text) for name, text in stored}
    records = None
    if "verdicts" in tables:
        records = for_kind(row.kind).verdict_records(
            row.kind, dict(row.settings or {}), tables, row.status
        )
    if records is None:
        raise KeyError(f"analysis {analysis_id} ({row.kind}) stored no verdicts")
    return records


def shown_records(engine: Engine, analysis_id: int) -> pd.DataFrame:
    """The verdict records a report of analysis ``analysis_id`` shows.

    Those of the analysis its design's report takes its verdicts from
    (:meth:`~cuegap.designs.Design.shown_analysis`); a record whose Bayesian fit missed
    the convergence gate reads *inconclusive*.
    """
    from cuegap.designs import for_kind, gate_applied

    with engine.connect() as conn:
        kind = conn.execute(select(Analysis.kind).where(Analysis.id == analysis_id)).scalar_one()
    shown = for_kind(kind).shown_analysis(engine, analysis_id)
    return gate_applied(verdict_records_of(engine, shown))


def _z(level: float) -> float:
    """The normal quantile of a two-sided interval of ``level`` (1.645 for 90 %, as before
    the records had a level)."""
    if not math.isfinite(level) or round(level, 6) == 0.9:
        return 1.645
    return NormalDist().inv_cdf((1 + level) / 2)


def _se(low: float, high: float, level: float) -> float:
    return (high - low) / (2 * _z(level))


def _num(x: object) -> float:
    try:
        return float(x)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return math.nan


def _text(x: object) -> str | None:
    return x if isinstance(x, str) else None


def compare_records(old: pd.DataFrame, new: pd.DataFrame, *, z: float = 2.0) -> pd.DataFrame:
    """What changed between two sets of verdict records.

    Parameters
    ----------
    old, new : DataFrame
        Verdict records (:data:`cuegap.designs._verdicts.RECORD_COLUMNS`), as a report
        showed them (:func:`shown_records`).
    z : float
        An estimate "moved beyond its uncertainty" when |new − old| > z · sqrt(se_old² +
        se_new²), each se taken from its record's interval and level: (high − low) /
        (2 · z_level), z_level = 1.645 for a 90 % interval.

    Returns
    -------
    DataFrame
        One row per verdict in either set (:data:`CHANGE_COLUMNS`): ``system``,
        ``compared``, ``old_verdict``, ``new_verdict``, ``verdict_changed``,
        ``old_gap_pp`` and ``new_gap_pp`` (the estimates, on the records' scale),
        ``gap_change_pp``, ``gap_moved`` (bool) and ``note`` (a sentence).

    Notes
    -----
    Records are matched by system. Where a system has several verdicts (the
    prompt-variance design gives one per headline score) they are matched by system and
    ``compared``, and each note starts with what was compared. Where one verdict per system
    compared something else than before (the conversation design's deciding condition),
    the note says so.
    """
    several = any(
        frame["system"].astype(str).duplicated().any() for frame in (old, new) if len(frame)
    )
    keys = ["system", "compared"] if several else ["system"]
    cols = ["system", "compared", "decision", "estimate", "low", "high", "level", "scale"]
    left, right = old.reindex(columns=cols), new.reindex(columns=cols)
    for frame in (left, right):
        frame["system"] = frame["system"].astype(str)
        frame["compared"] = frame["compared"].fillna("").astype(str)
    m = left.merge(right, on=keys, how="outer", suffixes=("_old", "_new"))
    if not several:
        m["compared"] = m["compared_new"].where(m["compared_new"].notna(), m["compared_old"])
    rows = []
    for r in m.sort_values(keys).to_dict("records"):
        before, now = _num(r["estimate_old"]), _num(r["estimate_new"])
        se = [
            _se(_num(r[f"low_{s}"]), _num(r[f"high_{s}"]), _num(r[f"level_{s}"]))
            for s in ("old", "new")
        ]
        change = now - before
        spread = math.sqrt(sum(s * s for s in se)) if all(map(math.isfinite, se)) else math.nan
        moved = bool(math.isfinite(change) and math.isfinite(spread) and abs(change) > z * spread)
        old_v, new_v = _text(r["decision_old"]), _text(r["decision_new"])
        scale = _text(r["scale_new"]) or _text(r["scale_old"]) or ""
        was, is_ = (_text(r.get(f"compared_{s}")) for s in ("old", "new"))
        if old_v is None:
            note = f"new system: {new_v}" if not several else f"new: {new_v}"
        elif new_v is None:
            note = "no longer in the data"
        elif old_v != new_v:
            note = f"verdict changed from {old_v} to {new_v}"
        elif not several and was and is_ and was != is_:
            note = f"what was compared changed from {was} to {is_}"
        elif moved:
            moved_by = f"{change:+.1f} pp" if scale == "pp" else f"{change:+.3f} ({scale})"
            note = f"gap moved by {moved_by}, beyond its uncertainty"
        else:
            note = "no material change"
        if several and r["compared"]:
            note = f"{r['compared']}: {note}"
        rows.append(
            {
                "system": r["system"],
                "compared": r["compared"],
                "old_verdict": old_v,
                "new_verdict": new_v,
                "verdict_changed": old_v != new_v,
                "old_gap_pp": before,
                "new_gap_pp": now,
                "gap_change_pp": change,
                "gap_moved": moved,
                "note": note,
            }
        )
    return pd.DataFrame(rows, columns=list(CHANGE_COLUMNS))


def last_signed(engine: Engine, kinds: tuple[str, ...]) -> int | None:
    """The analysis of one of ``kinds`` behind the newest signed report that shows one
    (None when no such report was signed).

    A report shows the analysis it is registered under and, for a board report, every
    other design's analysis it lists with its content digest
    (:func:`cuegap.compliance.listed_analyses`): signing a board report signs each
    design's part of it.
    """
    from cuegap.compliance import listed_analyses

    signed = (
        select(Report.id, Report.analysis_id, SignOff.seq)
        .join(SignOff, SignOff.report_id == Report.id)
        .order_by(SignOff.seq.desc())
    )
    with engine.connect() as conn:
        seen: set[int] = set()
        for report_id, analysis_id, _seq in conn.execute(signed):
            if report_id in seen:
                continue
            seen.add(report_id)
            html = conn.execute(select(Report.html).where(Report.id == report_id)).scalar()
            shown = [int(analysis_id), *sorted(listed_analyses(html), reverse=True)]
            found = conn.execute(
                select(Analysis.id, Analysis.kind).where(Analysis.id.in_(shown))
            ).all()
            kind_of = {int(i): k for i, k in found}
            for a in shown:
                if kind_of.get(a) in kinds:
                    return a
    return None


def changes_since_signed(engine: Engine, analysis_id: int) -> pd.DataFrame | None:
    """What a report of ``analysis_id`` shows changed since the last signed report of the
    same design (:func:`compare_records` of the two :func:`shown_records`); None when no
    report of that design was signed."""
    from cuegap.designs import for_kind

    with engine.connect() as conn:
        kind = conn.execute(select(Analysis.kind).where(Analysis.id == analysis_id)).scalar_one()
    signed = last_signed(engine, for_kind(kind).kinds)
    if signed is None:
        return None
    return compare_records(shown_records(engine, signed), shown_records(engine, analysis_id))
