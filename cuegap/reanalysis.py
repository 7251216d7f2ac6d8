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
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

import pandas as pd
from sqlalchemy import select
from sqlalchemy.engine import Engine

from cuegap._files import remove_files
from cuegap.audit import (
    AnalysisResult,
    AnalysisSettings,
    BayesSettings,
    analyze,
    analyze_bayes,
    bayes_answering,
    fingerprints,
    latest_analysis_id,
    load_store_data,
    load_table,
    settings_from_dict,
)
from cuegap.compliance import (
    ComplianceError,
    check_report,
    find_report,
    register_report,
    signed_records,
    store_lock,
)
from cuegap.models import Policy
from cuegap.schema import Analysis, Report, SignOff

EXIT_UNCHANGED, EXIT_CHANGED, EXIT_FAILED = 0, 1, 2

#: Renders the report of an analysis into a directory; returns the written files.
Renderer = Callable[[Engine, AnalysisResult, Path, pd.DataFrame | None], list[Path]]


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


def publish_report(
    engine: Engine,
    analysis_id: int,
    out_dir: Path | str,
    *,
    formats: tuple[str, ...] = ("html", "pdf"),
    policy: Policy | None = None,
    signed: int | str | Path | None = None,
    changes: pd.DataFrame | None = None,
    progress: Callable[[str], None] | None = None,
) -> dict[str, tuple[Path, int]]:
    """Render an analysis's report, write it and register every file.

    Every format is rendered before anything is written; the files are written without
    replacing any existing file and registered in one transaction. If anything fails,
    nothing is left written or registered.

    Parameters
    ----------
    signed : report id, path or hash, optional
        Write a signed copy of this registered report (:func:`publish_signed`) instead.
    changes : DataFrame, optional
        The "what changed since the last signed report" table.

    Returns
    -------
    dict
        Format -> (path, registered report id).
    """
    from cuegap.reports import build_report, render_files, render_html

    if signed is not None:
        if policy is not None:
            raise ValueError(
                "--policy cannot be used with --signed: a signed copy shows exactly the "
                "content that was reviewed"
            )
        return publish_signed(engine, signed, out_dir, formats=formats, progress=progress)
    from cuegap._design_reports import KINDS, analysis_kind, design_report_data

    kind = analysis_kind(engine, analysis_id) if analysis_id is not None else None
    if kind in KINDS:  # the QA, prompt-variance and conversation designs' own reports
        data = design_report_data(engine, analysis_id, kind, policy, progress)
    else:
        data = build_report(engine, policy=policy, analysis_id=analysis_id, progress=progress)
    data.changes = changes
    if progress:
        progress("rendering")
    rendered = render_html(data)
    files = render_files(rendered.html, formats)  # type: ignore[arg-type]
    return _publish(
        engine,
        out_dir,
        f"cuegap-report-{data.analysis_id}",
        files,
        html=rendered.html,
        analysis_id=data.analysis_id,
        supersedes=None,
    )


def publish_signed(
    engine: Engine,
    report: int | str | Path,
    out_dir: Path | str,
    *,
    formats: tuple[str, ...] = ("html", "pdf"),
    progress: Callable[[str], None] | None = None,
) -> dict[str, tuple[Path, int]]:
    """Write a signed copy of a registered report: exactly the HTML that was reviewed
    (kept in the store and checked against the ledger), its sign-off block filled in.

    Nothing is rebuilt from the store's current results: a later analysis or ingest cannot
    change what a signed copy shows.

    Raises
    ------
    ComplianceError
        When the report has no sign-offs, was registered before cuegap kept reviewed
        content, or its file, registry record, analysis or sign-offs were altered.
    """
    from cuegap.reports import render_files, render_signed

    rep = find_report(engine, report)
    problems = check_report(engine, rep.id)
    if problems:
        raise ComplianceError(
            f"report {rep.id} cannot be reproduced as signed: {'; '.join(problems)}"
        )
    records = signed_records(engine, rep.id)
    if not records:
        raise ComplianceError(f"report {rep.id} has no sign-offs to fill in")
    with engine.connect() as conn:
        html = conn.execute(select(Report.html).where(Report.id == rep.id)).scalar()
    if html is None:
        raise ComplianceError(
            f"report {rep.id} was registered before cuegap kept the reviewed content, so "
            "its signed copy cannot be reproduced exactly; render a new report and sign it"
        )
    if progress:
        progress("filling in the sign-off block of the reviewed report")
    signed_html = render_signed(
        html, [asdict(r) for r in records], report_id=rep.id, report_sha256=rep.sha256
    )
    files = render_files(signed_html, formats)  # type: ignore[arg-type]
    return _publish(
        engine,
        out_dir,
        f"{Path(rep.path).stem}-signed",
        files,
        html=signed_html,
        analysis_id=rep.analysis_id,
        supersedes=rep.id,
    )


def _publish(
    engine: Engine,
    out_dir: Path | str,
    stem: str,
    files: dict[str, bytes],
    *,
    html: str,
    analysis_id: int,
    supersedes: int | None,
) -> dict[str, tuple[Path, int]]:
    from cuegap.reports import write_files

    paths = write_files(out_dir, stem, files)
    try:
        with engine.begin() as conn:
            ids = {
                fmt: register_report(
                    engine,
                    path,
                    analysis_id=analysis_id,
                    supersedes_id=supersedes,
                    html=html,
                    conn=conn,
                )
                for fmt, path in paths.items()
            }
    except BaseException:
        remove_files(paths.values())
        raise
    return {fmt: (paths[fmt], ids[fmt]) for fmt in paths}


def default_renderer(formats: tuple[str, ...] = ("html", "pdf")) -> Renderer:
    """The renderer ``cuegap reanalyze`` uses: both formats, registered."""

    def render(
        engine: Engine, analysis: AnalysisResult, out_dir: Path, changes: pd.DataFrame | None
    ) -> list[Path]:
        published = publish_report(engine, analysis.id, out_dir, formats=formats, changes=changes)
        return [path for path, _ in published.values()]

    return render


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
        _, now = fingerprints(load_store_data(engine))
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
