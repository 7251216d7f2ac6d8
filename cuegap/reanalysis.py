"""Scheduled re-analysis: detect changed data, re-analyse, write a new report version.

``cuegap reanalyze`` (for cron or a systemd timer) compares each system's data fingerprint
with the newest stored analysis. When nothing changed it exits 0 and writes nothing. When
something changed it re-analyses (frequentist tables; systems whose data did not change get
identical numbers, since every bootstrap stream is seeded by the system's name), renders a
new report version with a "what changed since the last signed report" section, registers
it, and exits 1. Any failure exits 2, as does finding another re-analysis holding the lock:
the ``diff`` convention (0 same, 1 different, 2 trouble).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
from sqlalchemy import select
from sqlalchemy.engine import Engine

from cuegap._publish import Renderer, default_renderer, publish_report, publish_signed
from cuegap.audit import latest_analysis_id, load_table
from cuegap.compliance import (
    store_lock,
)
from cuegap.designs.dilemma._analysis import analyze, analyze_bayes, bayes_answering
from cuegap.designs.dilemma._analysis_settings import (
    AnalysisSettings,
    BayesSettings,
    resolve_conditions,
    settings_from_dict,
)
from cuegap.designs.dilemma._analysis_tables import fingerprints, load_store_data
from cuegap.schema import Analysis, Report, SignOff

EXIT_UNCHANGED, EXIT_CHANGED, EXIT_FAILED = 0, 1, 2

__all__ = [
    "EXIT_CHANGED", "EXIT_FAILED", "EXIT_UNCHANGED", "Reanalysis", "Renderer",
    "compare_verdicts", "default_renderer", "publish_report", "publish_signed", "reanalyze",
    "what_changed",
]  # fmt: skip


@dataclass(slots=True)
class Reanalysis:
    """What a re-analysis found and did."""

    changed_systems: list[str]
    new_systems: list[str] = field(default_factory=list)
    removed_systems: list[str] = field(default_factory=list)
    analysis_id: int | None = None
    bayes_analysis_id: int | None = None
    previous_analysis_id: int | None = None
    reports: list[Path] = field(default_factory=list)
    changes: pd.DataFrame | None = None

    @property
    def changed(self) -> bool:
        """True when any system's data changed, appeared or disappeared."""
        return bool(self.changed_systems or self.new_systems or self.removed_systems)

    @property
    def exit_code(self) -> int:
        """0 when nothing changed, 1 when a new analysis (and report) was written."""
        return EXIT_CHANGED if self.changed else EXIT_UNCHANGED


def compare_verdicts(
    old: pd.DataFrame, new: pd.DataFrame, *, z: float = 2.0, unit: str = "pp"
) -> pd.DataFrame:
    """What changed between two ``verdicts`` tables.

    Parameters
    ----------
    old, new : DataFrame
        ``verdicts`` tables (system, verdict, gap_pp, gap_low_pp, gap_high_pp, ...).
    z : float
        A gap "moved beyond its uncertainty" when |new − old| > z · sqrt(se_old² + se_new²),
        each SE taken as the interval's width / (2 · 1.645) (a 90% interval).
    unit : str
        The gap's unit in the notes: ``pp`` (the dilemma design), or ``bias score`` (the
        QA design's ``verdicts`` with ``gap``, ``gap_low``, ``gap_high``, which are read
        into the ``*_pp`` columns).

    Returns
    -------
    DataFrame
        One row per system in either table: ``system``, ``old_verdict``, ``new_verdict``,
        ``verdict_changed``, ``old_gap_pp``, ``new_gap_pp``, ``gap_change_pp``,
        ``gap_moved`` (bool) and ``note`` (a sentence).
    """
    cols = ["system", "verdict", "gap_pp", "gap_low_pp", "gap_high_pp"]
    if unit != "pp":
        names = {"gap": "gap_pp", "gap_low": "gap_low_pp", "gap_high": "gap_high_pp"}
        old, new = old.rename(columns=names), new.rename(columns=names)
    m = old[cols].merge(new[cols], on="system", how="outer", suffixes=("_old", "_new"))
    rows = []
    for r in m.sort_values("system").itertuples(index=False):
        se = [
            (hi - lo) / (2 * 1.645)
            for lo, hi in (
                (r.gap_low_pp_old, r.gap_high_pp_old),
                (r.gap_low_pp_new, r.gap_high_pp_new),
            )
        ]
        change = r.gap_pp_new - r.gap_pp_old
        spread = math.sqrt(sum(s * s for s in se)) if all(map(math.isfinite, se)) else math.nan
        moved = bool(math.isfinite(change) and math.isfinite(spread) and abs(change) > z * spread)
        old_v = r.verdict_old if isinstance(r.verdict_old, str) else None
        new_v = r.verdict_new if isinstance(r.verdict_new, str) else None
        if old_v is None:
            note = f"new system: {new_v}"
        elif new_v is None:
            note = "no longer in the data"
        elif old_v != new_v:
            note = f"verdict changed from {old_v} to {new_v}"
        elif moved:
            moved_by = f"{change:+.1f} pp" if unit == "pp" else f"{change:+.3f} ({unit})"
            note = f"gap moved by {moved_by}, beyond its uncertainty"
        else:
            note = "no material change"
        rows.append(
            {
                "system": r.system,
                "old_verdict": old_v,
                "new_verdict": new_v,
                "verdict_changed": old_v != new_v,
                "old_gap_pp": r.gap_pp_old,
                "new_gap_pp": r.gap_pp_new,
                "gap_change_pp": change,
                "gap_moved": moved,
                "note": note,
            }
        )
    return pd.DataFrame(rows)


def last_signed_analysis(engine: Engine) -> int | None:
    """The analysis behind the newest signed report, or None when nothing was signed."""
    stmt = (
        select(Report.analysis_id)
        .join(SignOff, SignOff.report_id == Report.id)
        .order_by(SignOff.seq.desc())
        .limit(1)
    )
    with engine.connect() as conn:
        found = conn.execute(stmt).scalar()
    return None if found is None else int(found)


def _reference_analysis(engine: Engine) -> int | None:
    """The newest analysis that has a registered report, else the newest analysis.

    Comparing against the last *reported* analysis means a run whose rendering failed is
    redone by the next scheduled run instead of being forgotten.
    """
    stmt = select(Report.analysis_id).order_by(Report.analysis_id.desc()).limit(1)
    with engine.connect() as conn:
        found = conn.execute(stmt).scalar()
    return int(found) if found is not None else latest_analysis_id(engine, "frequentist")


def _shown_verdicts(engine: Engine, analysis_id: int) -> pd.DataFrame:
    """The verdicts a report of this frequentist analysis showed: those of the Bayesian
    analysis that answered its question (as the report picks it), else the bootstrap ones."""
    with engine.connect() as conn:
        row = conn.execute(
            select(Analysis.data_fingerprint, Analysis.settings).where(Analysis.id == analysis_id)
        ).one()
    bayes_id, _ = bayes_answering(
        engine, row.data_fingerprint, settings_from_dict(row.settings or {})
    )
    return load_table(engine, "verdicts", bayes_id if bayes_id is not None else analysis_id)


def what_changed(engine: Engine, previous: int | None, now: dict[str, str]) -> Reanalysis:
    """Which systems' data changed, appeared or disappeared since analysis ``previous``.

    Parameters
    ----------
    previous : int or None
        The analysis compared against (None: every system is new).
    now : dict
        System -> fingerprint of its data in the store now.
    """
    before: dict[str, str] = {}
    if previous is not None:
        with engine.connect() as conn:
            stored = conn.execute(
                select(Analysis.system_fingerprints).where(Analysis.id == previous)
            ).scalar()
        before = dict(stored or {})
    return Reanalysis(
        changed_systems=sorted(s for s in now if s in before and before[s] != now[s]),
        new_systems=sorted(set(now) - set(before)),
        removed_systems=sorted(set(before) - set(now)),
        previous_analysis_id=previous,
    )


def reanalyze(
    engine: Engine,
    out_dir: Path | str,
    *,
    settings: AnalysisSettings | None = None,
    bayes: BayesSettings | None = None,
    render: Renderer | None = None,
    holder: str | None = None,
) -> Reanalysis:
    """Re-analyse when the data changed since the newest analysis; see the module docstring.

    With ``bayes`` settings the hierarchical model is refitted too. It pools all systems
    (partial pooling), so it is refitted jointly rather than per changed system; the
    frequentist tables of unchanged systems come out identical because each system's
    bootstrap stream is seeded by its name.

    Raises
    ------
    cuegap.compliance.LockHeld
        When another re-analysis holds the store's ``reanalyze`` lock.
    """
    with store_lock(engine, "reanalyze", holder=holder):
        previous = _reference_analysis(engine)
        data = load_store_data(engine)
        if settings is not None:  # an unknown --explicit/--implicit also when nothing changed
            resolve_conditions(data.decisions, settings)
        _, now = fingerprints(data)
        result = what_changed(engine, previous, now)
        if not result.changed:
            return result
        analysis = analyze(engine, settings)
        result.analysis_id = analysis.id
        verdicts = analysis.tables["verdicts"]
        if bayes is not None:  # the hierarchical model pools all systems: one joint refit
            fit = analyze_bayes(engine, settings, bayes)
            result.bayes_analysis_id = fit.id
            verdicts = fit.tables["verdicts"]
        signed = last_signed_analysis(engine)
        if signed is not None:
            result.changes = compare_verdicts(_shown_verdicts(engine, signed), verdicts)
        if render is not None:
            result.reports = render(engine, analysis, Path(out_dir), result.changes)
        return result
