"""Scheduled re-analysis of the conversation design (``cuegap reanalyze --design
conversation``).

The same contract as :mod:`cuegap.designs.prompt_variance._reanalysis` and
:mod:`cuegap.designs.qa._reanalysis`: under
the store's ``reanalyze`` lock, compare each system's fingerprint of the transition count
frame (exactly as :func:`cuegap.designs.conversation._analysis.analyze_conversation` stores it) with
the newest reported conversation analysis; when nothing changed, write nothing; otherwise
re-analyse, compare with the last signed conversation report, and render a new version of
the conversation report with a "what changed" section.

What is compared, per system: the verdict records of the two analyses
(:func:`cuegap.changes.changes_since_signed`): the decision and the estimate of the
deciding condition of the policy's contrast (the mean over benchmarks of its unit means in
``conv_tests``), with the verdict's (1 − 2α) interval as its uncertainty (the interval
spans every benchmark, so the test of "moved beyond its uncertainty" is conservative).
When the deciding condition changed, the note says so.

With ``--bayes`` the hierarchical model is refitted too (it pools all systems, so one
joint refit). Each side of the comparison uses the verdicts its report shows: those of the
Bayesian fit of the same data and settings (the posterior mean of the deciding condition
averaged over benchmarks as the estimate; every verdict inconclusive when the fit missed
its gate), else the t-test verdicts.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from sqlalchemy import select
from sqlalchemy.engine import Engine

from cuegap.changes import changes_since_signed
from cuegap.compliance import store_lock
from cuegap.designs import BayesSettings
from cuegap.designs.conversation._analysis import (
    KIND,
    ConvSettings,
    _system_fingerprints,
    analyze_conversation,
    load_conv_counts,
)
from cuegap.models import Policy
from cuegap.reanalysis import Reanalysis, publish_report, what_changed
from cuegap.schema import Analysis, Report, SignOff


def settings_from_stored(stored: dict[str, Any], policy: Policy | None = None) -> ConvSettings:
    """The :class:`ConvSettings` an analysis was stored with (:meth:`ConvSettings.from_dict`:
    unit, correction, α, contrast and policy), the policy replaced by ``policy`` when
    given."""
    settings = ConvSettings.from_dict(stored)
    return settings if policy is None else dataclasses.replace(settings, policy=policy)


def conv_fingerprints(engine: Engine, settings: ConvSettings) -> dict[str, str]:
    """Each system's fingerprint of the count frame a conversation analysis with
    ``settings`` reads, as :func:`~cuegap.designs.conversation._analysis.analyze_conversation`
    stores it.

    Raises
    ------
    ValueError
        When the store holds no conversations.
    """
    return _system_fingerprints(load_conv_counts(engine, unit=settings.unit))


def _newest(engine: Engine, *, reported: bool = False, signed: bool = False) -> int | None:
    stmt = select(Analysis.id).where(Analysis.kind == KIND).order_by(Analysis.id.desc())
    if reported or signed:
        stmt = select(Report.analysis_id).join(Analysis, Analysis.id == Report.analysis_id)
        stmt = stmt.where(Analysis.kind == KIND)
        if signed:
            stmt = stmt.join(SignOff, SignOff.report_id == Report.id)
            stmt = stmt.order_by(SignOff.seq.desc())
        else:
            stmt = stmt.order_by(Report.analysis_id.desc())
    with engine.connect() as conn:
        found = conn.execute(stmt.limit(1)).scalar()
    return None if found is None else int(found)


def _stored_settings(engine: Engine, analysis_id: int | None) -> dict[str, Any]:
    from cuegap.designs import stored_settings as _stored_settings

    return {} if analysis_id is None else _stored_settings(engine, analysis_id)


def reanalyze_conv(
    engine: Engine,
    out_dir: Path | str,
    *,
    settings: ConvSettings | None = None,
    policy: Policy | None = None,
    render: bool = True,
    holder: str | None = None,
    bayes: BayesSettings | None = None,
) -> Reanalysis:
    """Re-analyse the conversation design when its data changed since the last reported
    conversation analysis.

    Parameters
    ----------
    engine : Engine
    out_dir : path
        Where a new report version is written (when ``render``).
    settings : ConvSettings, optional
        Default: those of the newest reported (else newest) conversation analysis, with
        ``policy`` when given; :class:`ConvSettings` defaults when there is none.
    policy : Policy, optional
        The verdict policy (only without ``settings``).
    render : bool
        Write and register a new version of the conversation report (HTML and PDF).
    holder : str, optional
        Who holds the lock (default: this host and process).
    bayes : BayesSettings, optional
        Refit the hierarchical model with these settings (also taken from
        ``settings.bayes``); its analysis id is ``bayes_analysis_id``.

    Returns
    -------
    Reanalysis

    Raises
    ------
    cuegap.compliance.LockHeld
        When another re-analysis holds the store's ``reanalyze`` lock.
    ValueError
        When the store holds no conversations.
    """
    with store_lock(engine, "reanalyze", holder=holder):
        previous = _newest(engine, reported=True) or _newest(engine)
        if settings is None:
            settings = settings_from_stored(_stored_settings(engine, previous), policy)
        if bayes is not None:
            settings = dataclasses.replace(settings, bayes=bayes)
        result = what_changed(engine, previous, conv_fingerprints(engine, settings))
        if not result.changed:
            return result
        analysis = analyze_conversation(engine, settings)
        result.analysis_id, result.bayes_analysis_id = analysis.id, analysis.bayes_id
        result.changes = changes_since_signed(engine, analysis.id)
        if render:
            published = publish_report(engine, analysis.id, out_dir, changes=result.changes)
            result.reports = [path for path, _ in published.values()]
        return result
