"""Scheduled re-analysis of the QA design (``cuegap reanalyze --design qa``).

The same contract as :mod:`cuegap.reanalysis` for the dilemma design: under the store's
``reanalyze`` lock, compare each system's fingerprint of the QA count table with the
newest reported QA analysis; when nothing changed, write nothing; otherwise re-analyse
(and refit the Bayesian model when asked), compare the verdicts with those of the last
signed QA report, and render a new report version with a "what changed" section.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from sqlalchemy import select
from sqlalchemy.engine import Engine

from cuegap.compliance import store_lock
from cuegap.designs.dilemma._analysis_settings import BayesSettings
from cuegap.designs.qa._analysis import (
    QASettings,
    _read_counts,
    _system_fingerprints,
    analyze_qa,
    analyze_qa_bayes,
    check_strategy,
)
from cuegap.reanalysis import Reanalysis, compare_verdicts, publish_report, what_changed
from cuegap.schema import Analysis, Report, SignOff

KIND = "qa"


def _reference(engine: Engine) -> int | None:
    """The newest QA analysis with a registered report, else the newest QA analysis."""
    reported = (
        select(Report.analysis_id)
        .join(Analysis, Analysis.id == Report.analysis_id)
        .where(Analysis.kind == KIND)
        .order_by(Report.analysis_id.desc())
        .limit(1)
    )
    newest = select(Analysis.id).where(Analysis.kind == KIND).order_by(Analysis.id.desc())
    with engine.connect() as conn:
        found = conn.execute(reported).scalar() or conn.execute(newest.limit(1)).scalar()
    return None if found is None else int(found)


def _last_signed(engine: Engine) -> int | None:
    """The QA analysis behind the newest signed QA report."""
    stmt = (
        select(Report.analysis_id)
        .join(SignOff, SignOff.report_id == Report.id)
        .join(Analysis, Analysis.id == Report.analysis_id)
        .where(Analysis.kind == KIND)
        .order_by(SignOff.seq.desc())
        .limit(1)
    )
    with engine.connect() as conn:
        found = conn.execute(stmt).scalar()
    return None if found is None else int(found)


def _shown_verdicts(engine: Engine, analysis_id: int) -> pd.DataFrame:
    """The verdicts a report of this QA analysis showed (the Bayesian fit's when the report
    used one, as :func:`cuegap.designs.qa._report.build_qa_report` picks it)."""
    from cuegap.designs.qa._report import build_qa_report

    data = build_qa_report(engine, analysis_id=analysis_id)
    return data.bayes["verdicts"] if data.bayes else data.tables["verdicts"]


def reanalyze_qa(
    engine: Engine,
    out_dir: Path | str,
    *,
    settings: QASettings | None = None,
    bayes: BayesSettings | None = None,
    render: bool = True,
    holder: str | None = None,
) -> Reanalysis:
    """Re-analyse the QA design when its data changed since the last reported analysis.

    Parameters
    ----------
    engine : Engine
    out_dir : path
        Where a new report version is written (when ``render``).
    settings, bayes
        The analysis (and Bayesian fit) settings; None skips the fit.
    render : bool
        Write and register a new report version (HTML and PDF).
    holder : str, optional
        Who holds the lock (default: this host and process).

    Raises
    ------
    cuegap.compliance.LockHeld
        When another re-analysis holds the store's ``reanalyze`` lock.
    """
    settings = settings or QASettings()
    with store_lock(engine, "reanalyze", holder=holder):
        previous = _reference(engine)
        counts, _ = _read_counts(engine, lambda _msg: None)
        check_strategy(counts, settings.strategy)  # also when nothing changed
        result = what_changed(engine, previous, _system_fingerprints(counts))
        if not result.changed:
            return result
        analysis = analyze_qa(engine, settings)
        result.analysis_id = analysis.id
        verdicts = analysis.tables["verdicts"]
        if bayes is not None:
            fit = analyze_qa_bayes(engine, settings, bayes)
            result.bayes_analysis_id = fit.id
            if fit.tables["qa_bayes_diagnostics"]["passed"].iloc[-1]:
                verdicts = fit.tables["verdicts"]
        signed = _last_signed(engine)
        if signed is not None:
            old = _shown_verdicts(engine, signed)
            result.changes = compare_verdicts(old, verdicts, unit="bias score")
        if render:
            published = publish_report(engine, analysis.id, out_dir, changes=result.changes)
            result.reports = [path for path, _ in published.values()]
        return result
