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

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
from sqlalchemy import select
from sqlalchemy.engine import Engine

from cuegap.audit import latest_analysis_id
from cuegap.changes import changes_since_signed, compare_records
from cuegap.compliance import (
    store_lock,
)
from cuegap.publish import (
    Renderer,
    default_renderer,
    publish_board,
    publish_report,
    publish_signed,
)
from cuegap.schema import Analysis, Report

EXIT_UNCHANGED, EXIT_CHANGED, EXIT_FAILED = 0, 1, 2

__all__ = [
    "EXIT_CHANGED", "EXIT_FAILED", "EXIT_UNCHANGED", "Reanalysis", "Renderer",
    "changes_since_signed", "compare_records", "default_renderer", "publish_board",
    "publish_report",
    "publish_signed", "reanalyze_board", "reanalyze_design", "reference_analysis",
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


def reference_analysis(engine: Engine, kind: str) -> int | None:
    """The newest analysis of ``kind`` that has a registered report, else the newest one.

    Comparing against the last *reported* analysis means a run whose rendering failed is
    redone by the next scheduled run instead of being forgotten.
    """
    reported = (
        select(Report.analysis_id)
        .join(Analysis, Analysis.id == Report.analysis_id)
        .where(Analysis.kind == kind)
        .order_by(Report.analysis_id.desc())
        .limit(1)
    )
    with engine.connect() as conn:
        found = conn.execute(reported).scalar()
    return int(found) if found is not None else latest_analysis_id(engine, kind)


def reanalyze_design(
    engine: Engine,
    design: Any,
    out_dir: Path | str,
    *,
    fingerprints: Callable[[], dict[str, str]],
    analyze: Callable[[], int],
    render: bool = True,
    holder: str | None = None,
) -> Reanalysis:
    """Re-analyse any design when its data changed since its last reported analysis.

    The contract every design's ``cuegap reanalyze`` keeps, for a design that needs nothing
    more: under the store's ``reanalyze`` lock, compare each system's fingerprint now with
    the reference analysis (:func:`reference_analysis` of the design's report kind); when
    nothing changed, write nothing; otherwise run ``analyze``, compare the verdict records
    with those of the last signed report of the design
    (:func:`cuegap.changes.changes_since_signed`) and publish a new report version with a
    "what changed" section.

    Parameters
    ----------
    engine : Engine
    design : Design
        The registered design.
    out_dir : path
        Where a new report version is written (when ``render``).
    fingerprints : callable
        System -> fingerprint of its data in the store now.
    analyze : callable
        Runs (or reuses) the design's analysis and returns its id.
    render : bool
        Write and register a new report version (HTML and PDF).
    holder : str, optional
        Who holds the lock (default: this host and process).

    Raises
    ------
    cuegap.compliance.LockHeld
        When another re-analysis holds the store's ``reanalyze`` lock.
    """
    with store_lock(engine, "reanalyze", holder=holder):
        previous = reference_analysis(engine, design.report_kind())
        result = what_changed(engine, previous, fingerprints())
        if not result.changed:
            return result
        analysis_id = analyze()
        result.analysis_id = analysis_id
        result.changes = changes_since_signed(engine, analysis_id)
        if render:
            published = publish_report(engine, analysis_id, out_dir, changes=result.changes)
            result.reports = [path for path, _ in published.values()]
        return result


def reanalyze_board(
    engine: Engine,
    designs: list[Any],
    out_dir: Path | str,
    options: Callable[[Any], Any],
    *,
    policy: Any = None,
    formats: tuple[str, ...] = ("html", "pdf"),
    holder: str | None = None,
) -> Reanalysis:
    """Re-analyse every design a store holds, and publish one board report when any
    design's data changed (``cuegap reanalyze`` on a store holding several designs).

    Each design re-analyses as its own ``reanalyze`` does (under the store's
    ``reanalyze`` lock, only when its data changed) without rendering; then, when any
    changed, one new board report version is published, each changed design's "what
    changed since the last signed report" table after its verdict page.

    Parameters
    ----------
    designs : list of Design
        The designs the store holds (the board's columns).
    out_dir : path
        Where the new board report version is written.
    options : callable
        A design -> its ``AnalyzeOptions``.
    policy : Policy, optional
        Whose ``[board]`` rule decides the overall line (default: the analyses' own).
    holder : str, optional
        Who holds the board's lock (default: this host and process).

    Returns
    -------
    Reanalysis
        The systems that changed, appeared or disappeared in any design; ``analysis_id``
        the newest analysis written; ``changes`` every changed design's table (with a
        ``design`` column); ``reports`` the board report's files.

    Raises
    ------
    cuegap.compliance.LockHeld
        When another re-analysis holds the store's lock.
    """
    with store_lock(engine, "reanalyze-board", holder=holder):
        results = [(d, d.reanalyze(engine, Path(out_dir), options(d), render=False))
                   for d in designs]  # fmt: skip
        changed = [(d, r) for d, r in results if r.changed]

        def union(attr: str) -> list[str]:
            return sorted({s for _d, r in changed for s in getattr(r, attr)})

        merged = Reanalysis(union("changed_systems"), union("new_systems"),
                            union("removed_systems"))  # fmt: skip
        if not changed:
            return merged
        ids = [r.analysis_id for _d, r in changed if r.analysis_id is not None]
        merged.analysis_id = max(ids) if ids else None
        tables = {d.name: r.changes for d, r in changed if r.changes is not None}
        if tables:
            merged.changes = pd.concat([t.assign(design=name) for name, t in tables.items()],
                                       ignore_index=True)  # fmt: skip
        published = publish_board(engine, designs, out_dir, formats=formats, policy=policy,
                                   changes=tables)  # fmt: skip
        merged.reports = [path for path, _ in published.values()]
        return merged
