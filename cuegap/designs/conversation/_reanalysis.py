"""Scheduled re-analysis of the conversation design (``cuegap reanalyze --design
conversation``).

The same contract as :mod:`cuegap.designs.prompt_variance._reanalysis` and
:mod:`cuegap.designs.qa._reanalysis`: under
the store's ``reanalyze`` lock, compare each system's fingerprint of the transition count
frame (exactly as :func:`cuegap.designs.conversation._analysis.analyze_conversation` stores it) with
the newest reported conversation analysis; when nothing changed, write nothing; otherwise
re-analyse, compare with the last signed conversation report, and render a new version of
the conversation report with a "what changed" section.

What is compared, per system: the verdict and the estimate of the deciding condition of
the policy's contrast (the mean over benchmarks of its unit means in ``conv_tests``), with
the verdict's (1 − 2α) interval as its uncertainty (the interval spans every benchmark,
so the test of "moved beyond its uncertainty" is conservative).

With ``--bayes`` the hierarchical model is refitted too (it pools all systems, so one
joint refit). Each side of the comparison uses the verdicts its report shows: the
posterior verdicts of a converged Bayesian fit of the same data and settings, with the
posterior mean of the deciding condition averaged over benchmarks as the estimate, else
the t-test verdicts.
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from typing import Any

import pandas as pd
from sqlalchemy import select
from sqlalchemy.engine import Engine

from cuegap.audit._store import load_table
from cuegap.compliance import store_lock
from cuegap.designs.conversation._analysis import (
    KIND,
    ConvSettings,
    _system_fingerprints,
    analyze_conversation,
    load_conv_counts,
)
from cuegap.designs.conversation.stats._verdict import condition_label
from cuegap.designs.dilemma._analysis_settings import BayesSettings
from cuegap.models import Policy
from cuegap.reanalysis import Reanalysis, compare_verdicts, publish_report, what_changed
from cuegap.schema import Analysis, Report, SignOff


def settings_from_stored(stored: dict[str, Any], policy: Policy | None = None) -> ConvSettings:
    """The :class:`ConvSettings` an analysis was stored with (unit, correction, α,
    contrast and policy), the policy replaced by ``policy`` when given."""
    pol = stored.get("policy") or {}
    if policy is None:
        policy = Policy.from_dict(pol)
    return ConvSettings(
        unit=stored.get("unit", "persona"),
        bh=stored.get("correction") == "bh",
        alpha=float(stored.get("alpha", 0.05)),
        contrast=str(stored.get("contrast", "demo_rc_base_pair")),
        policy=policy,
    )


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
    from cuegap.designs._settings import stored_settings as _stored_settings

    return {} if analysis_id is None else _stored_settings(engine, analysis_id)


def estimate_verdicts(verdicts: pd.DataFrame, tests: pd.DataFrame) -> pd.DataFrame:
    """The conversation ``verdicts`` table in the form :func:`cuegap.reanalysis.
    compare_verdicts` reads (with ``unit="shift rate"``).

    Parameters
    ----------
    verdicts : DataFrame
        ``system``, ``contrast``, ``verdict``, ``condition``, ``low``, ``high``.
    tests : DataFrame
        ``conv_tests``: ``system``, ``contrast``, ``demographic``, ``reference``,
        ``instantiation``, ``mean`` (one row per benchmark).

    Returns
    -------
    DataFrame
        ``system``, ``verdict``, ``condition``, ``gap`` (the deciding condition's mean of
        the unit means over benchmarks; NaN without a deciding condition), ``gap_low`` and
        ``gap_high`` (the verdict's interval).
    """
    t = tests.assign(
        condition=[
            condition_label(d, r, i)
            for d, r, i in zip(
                tests["demographic"], tests["reference"], tests["instantiation"], strict=True
            )
        ]
    )
    means = t.groupby(["system", "contrast", "condition"])["mean"].mean()
    gap = []
    for v in verdicts.itertuples(index=False):
        key = (v.system, v.contrast, v.condition)
        gap.append(float(means[key]) if isinstance(v.condition, str) and key in means else math.nan)
    return pd.DataFrame(
        {
            "system": verdicts["system"].astype(str).to_numpy(),
            "verdict": verdicts["verdict"].astype(str).to_numpy(),
            "condition": verdicts["condition"].to_numpy(),
            "gap": gap,
            "gap_low": pd.to_numeric(verdicts["low"], errors="coerce").to_numpy(float),
            "gap_high": pd.to_numeric(verdicts["high"], errors="coerce").to_numpy(float),
        }
    )


def _estimates(engine: Engine, analysis_id: int) -> pd.DataFrame:
    """The verdicts the report of analysis ``analysis_id`` shows, as estimates."""
    from cuegap.designs.conversation._report import _bayes

    with engine.connect() as conn:
        row = conn.execute(
            select(Analysis.id, Analysis.data_fingerprint, Analysis.settings).where(
                Analysis.id == analysis_id
            )
        ).one()
    fit, _note, _missed = _bayes(engine, row)
    if fit is not None:
        return estimate_verdicts(fit["verdicts"], fit["conv_bayes_contrasts"])
    return estimate_verdicts(
        load_table(engine, "verdicts", analysis_id), load_table(engine, "conv_tests", analysis_id)
    )


def conv_changes(old: pd.DataFrame, new: pd.DataFrame) -> pd.DataFrame:
    """:func:`cuegap.reanalysis.compare_verdicts` of two :func:`estimate_verdicts` tables;
    where the verdict stayed but the deciding condition changed, the note says so (the two
    estimates are then of different conditions)."""
    changes = compare_verdicts(old, new, unit="shift rate")
    conds = old.set_index("system")["condition"], new.set_index("system")["condition"]
    notes = []
    for r in changes.itertuples(index=False):
        was, now = (c.get(r.system) for c in conds)
        same = not isinstance(was, str) or not isinstance(now, str) or was == now
        if r.verdict_changed or same:
            notes.append(r.note)
        else:
            notes.append(f"deciding condition changed from {was} to {now}")
    return changes.assign(note=notes)


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
        signed = _newest(engine, signed=True)
        if signed is not None:
            if analysis.bayes_tables is not None and analysis.converged:
                b = analysis.bayes_tables
                new = estimate_verdicts(b["verdicts"], b["conv_bayes_contrasts"])
            else:
                new = estimate_verdicts(analysis.tables["verdicts"], analysis.tables["conv_tests"])
            result.changes = conv_changes(_estimates(engine, signed), new)
        if render:
            published = publish_report(engine, analysis.id, out_dir, changes=result.changes)
            result.reports = [path for path, _ in published.values()]
        return result
