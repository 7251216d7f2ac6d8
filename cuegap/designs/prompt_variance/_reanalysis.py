"""Scheduled re-analysis of the prompt-variance design
(``cuegap reanalyze --design prompt-variance``).

The same contract as :mod:`cuegap.reanalysis` and :mod:`cuegap.designs.qa._reanalysis`: under the
store's ``reanalyze`` lock, compare each system's fingerprint of the per-run count table
(the one :func:`cuegap.designs.prompt_variance._analysis.analyze_prompt_variance` stores) with the
newest reported prompt-variance analysis; when nothing changed, write nothing; otherwise
re-analyse, compare with the last signed prompt-variance report, and render a new version
of the prompt-variance report with a "what changed" section.

What is compared: the verdict records of the two analyses
(:func:`cuegap.changes.changes_since_signed`), one per system and headline score (does
the score survive the prompt format?): the decision, and the score's mean over prompt
combinations, which moved when it changed by more than twice the combined standard error
of the two (each from its record's interval).

With ``--bayes`` the variance-components model is refitted too, before the report is
rendered, so that the new report version shows the fit of the new data. The comparison
stays on the stored verdicts, which the report shows: those of the prompt-variance
analysis.
"""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import select
from sqlalchemy.engine import Engine

from cuegap.audit import frame_digest
from cuegap.changes import changes_since_signed
from cuegap.compliance import store_lock
from cuegap.designs import BayesSettings
from cuegap.designs.prompt_variance._analysis import (
    KIND,
    PVSettings,
    _factors,
    analyze_prompt_variance,
    runs_of,
)
from cuegap.reanalysis import Reanalysis, publish_report, what_changed
from cuegap.schema import Analysis, Report, SignOff


def pv_fingerprints(engine: Engine, settings: PVSettings) -> dict[str, str]:
    """Each system's fingerprint of the data a prompt-variance analysis reads, computed
    as :func:`~cuegap.designs.prompt_variance._analysis.analyze_prompt_variance` stores it."""
    from cuegap.schema import pv_counts, read_snapshot

    with read_snapshot(engine) as conn:
        factors = _factors(conn, settings)
        extra = [] if "strategy" in factors else ["strategy"]
        by_cue = pv_counts(conn, factors=[*factors, *extra], keys=["system", "category", "cue"])
    counts = runs_of(by_cue, factors=factors, strategy=settings.strategy)
    systems = sorted(set(counts["system"]))
    return {s: frame_digest(by_cue[by_cue["system"] == s]) for s in systems}


def _newest(engine: Engine, *, reported: bool = False, signed: bool = False) -> int | None:
    stmt = select(Analysis.id).where(Analysis.kind == KIND)
    if reported or signed:
        stmt = select(Report.analysis_id).join(Analysis, Analysis.id == Report.analysis_id)
        stmt = stmt.where(Analysis.kind == KIND)
    if signed:
        stmt = stmt.join(SignOff, SignOff.report_id == Report.id).order_by(SignOff.seq.desc())
    else:
        stmt = stmt.order_by(Analysis.id.desc())
    with engine.connect() as conn:
        found = conn.execute(stmt.limit(1)).scalar()
    return None if found is None else int(found)


def reanalyze_pv(
    engine: Engine,
    out_dir: Path | str,
    *,
    settings: PVSettings | None = None,
    render: bool = True,
    holder: str | None = None,
    bayes: BayesSettings | None = None,
) -> Reanalysis:
    """Re-analyse the prompt-variance design when its data changed since the last reported
    prompt-variance analysis.

    Parameters
    ----------
    engine : Engine
    out_dir : path
        Where a new report version is written (when ``render``).
    settings : PVSettings, optional
    render : bool
        Write and register a new version of the prompt-variance report (HTML and PDF).
    holder : str, optional
        Who holds the lock (default: this host and process).
    bayes : BayesSettings, optional
        Refit the variance-components model with these settings; its analysis id is
        ``bayes_analysis_id``.

    Returns
    -------
    Reanalysis

    Raises
    ------
    cuegap.compliance.LockHeld
        When another re-analysis holds the store's ``reanalyze`` lock.
    ValueError
        When the store holds no prompt-variance data.
    """
    settings = settings or PVSettings()
    with store_lock(engine, "reanalyze", holder=holder):
        previous = _newest(engine, reported=True) or _newest(engine)
        result = what_changed(engine, previous, pv_fingerprints(engine, settings))
        if not result.changed:
            return result
        analysis = analyze_prompt_variance(engine, settings)
        result.analysis_id = analysis.id
        if bayes is not None:
            from cuegap.designs.prompt_variance._analysis_bayes import analyze_pv_bayes

            result.bayes_analysis_id = analyze_pv_bayes(engine, settings, bayes).id
        result.changes = changes_since_signed(engine, analysis.id)
        if render:
            published = publish_report(engine, analysis.id, out_dir, changes=result.changes)
            result.reports = [path for path, _ in published.values()]
        return result
