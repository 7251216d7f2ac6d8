"""Scheduled re-analysis of the QA design (``cuegap reanalyze --design qa``).

The same contract as :mod:`cuegap.reanalysis` for the dilemma design: under the store's
``reanalyze`` lock, compare each system's fingerprint of the QA count table with the
newest reported QA analysis; when nothing changed, write nothing; otherwise re-analyse
(and refit the Bayesian model when asked), compare the verdict records each report shows
with those of the last signed QA report (:func:`cuegap.changes.changes_since_signed`), and
render a new report version with a "what changed" section.
"""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import select
from sqlalchemy.engine import Engine

from cuegap.changes import changes_since_signed
from cuegap.compliance import store_lock
from cuegap.designs import BayesSettings
from cuegap.designs.qa._analysis import (
    QASettings,
    _read_counts,
    _system_fingerprints,
    analyze_qa,
    analyze_qa_bayes,
    check_strategy,
)
from cuegap.reanalysis import Reanalysis, publish_report, what_changed
from cuegap.schema import Analysis, Report

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
        if bayes is not None:
            result.bayes_analysis_id = analyze_qa_bayes(engine, settings, bayes).id
        # the verdicts each report shows: a fit's, passed or missed (then inconclusive)
        result.changes = changes_since_signed(engine, analysis.id)
        if render:
            published = publish_report(engine, analysis.id, out_dir, changes=result.changes)
            result.reports = [path for path, _ in published.values()]
        return result
