"""Scheduled re-analysis of the dilemma design (``cuegap reanalyze --design dilemma``): the
contract of :mod:`cuegap.reanalysis`, with the dilemma's joint Bayesian refit."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy.engine import Engine

from cuegap.changes import changes_since_signed
from cuegap.compliance import store_lock
from cuegap.designs import BayesSettings
from cuegap.designs.dilemma._analysis import analyze, analyze_bayes
from cuegap.designs.dilemma._analysis_settings import AnalysisSettings, resolve_conditions
from cuegap.designs.dilemma._analysis_tables import fingerprints, load_store_data
from cuegap.reanalysis import Reanalysis, Renderer, reference_analysis, what_changed


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
        previous = reference_analysis(engine, "frequentist")
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
