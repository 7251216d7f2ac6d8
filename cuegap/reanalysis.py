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

from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
from sqlalchemy import select
from sqlalchemy.engine import Engine

from cuegap._publish import Renderer, default_renderer, publish_report, publish_signed
from cuegap.audit import latest_analysis_id
from cuegap.changes import changes_since_signed, compare_records, last_signed
from cuegap.compliance import (
    store_lock,
)
from cuegap.designs import BayesSettings
from cuegap.designs.dilemma._analysis import analyze, analyze_bayes
from cuegap.designs.dilemma._analysis_settings import AnalysisSettings, resolve_conditions
from cuegap.designs.dilemma._analysis_tables import fingerprints, load_store_data
from cuegap.schema import Analysis, Report

EXIT_UNCHANGED, EXIT_CHANGED, EXIT_FAILED = 0, 1, 2

__all__ = [
    "EXIT_CHANGED", "EXIT_FAILED", "EXIT_UNCHANGED", "Reanalysis", "Renderer",
    "changes_since_signed", "compare_records", "default_renderer", "publish_report",
    "publish_signed", "reanalyze", "what_changed",
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


def last_signed_analysis(engine: Engine) -> int | None:
    """The dilemma analysis behind the newest signed dilemma report, or None when none was
    signed."""
    return last_signed(engine, ("frequentist", "bayesian"))


def _reference_analysis(engine: Engine) -> int | None:
    """The newest analysis that has a registered report, else the newest analysis.

    Comparing against the last *reported* analysis means a run whose rendering failed is
    redone by the next scheduled run instead of being forgotten.
    """
    stmt = select(Report.analysis_id).order_by(Report.analysis_id.desc()).limit(1)
    with engine.connect() as conn:
        found = conn.execute(stmt).scalar()
    return int(found) if found is not None else latest_analysis_id(engine, "frequentist")


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
        if bayes is not None:  # the hierarchical model pools all systems: one joint refit
            result.bayes_analysis_id = analyze_bayes(engine, settings, bayes).id
        result.changes = changes_since_signed(engine, analysis.id)
        if render is not None:
            result.reports = render(engine, analysis, Path(out_dir), result.changes)
        return result
