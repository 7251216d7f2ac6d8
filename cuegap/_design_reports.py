"""The report data of a stored analysis of a study design other than the dilemma design
(used by :func:`cuegap.reanalysis.publish_report`): a QA analysis gives the QA report, a
prompt-variance analysis the prompt-variance report, a conversation analysis the
conversation report. Under another verdict policy the
analysis is re-run with it first (reused when unchanged).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from sqlalchemy import select
from sqlalchemy.engine import Engine

from cuegap.models import Policy
from cuegap.schema import Analysis

#: Analysis kinds with their own report.
KINDS = ("qa", "prompt_variance", "conversation")


def analysis_kind(engine: Engine, analysis_id: int) -> str | None:
    """The kind of a stored analysis, or None when there is none with this id."""
    with engine.connect() as conn:
        return conn.execute(select(Analysis.kind).where(Analysis.id == analysis_id)).scalar()


def _stored_settings(engine: Engine, analysis_id: int) -> dict[str, Any]:
    with engine.connect() as conn:
        stored = conn.execute(select(Analysis.settings).where(Analysis.id == analysis_id)).scalar()
    if isinstance(stored, str):  # a JSON column read back as text
        stored = json.loads(stored)
    return dict(stored or {})


def design_report_data(
    engine: Engine,
    analysis_id: int,
    kind: str,
    policy: Policy | None,
    progress: Callable[[str], None] | None,
) -> Any:
    """The report data of a QA or prompt-variance analysis.

    Parameters
    ----------
    engine : Engine
    analysis_id : int
    kind : {"qa", "prompt_variance"}
    policy : Policy, optional
        A different verdict policy: the analysis is re-run with it first.
    progress : callable, optional

    Returns
    -------
    QAReportData or PVReportData
    """
    if kind == "qa":
        from cuegap.audit import QASettings, analyze_qa
        from cuegap.reports import build_qa_report

        if policy is not None:
            stored = _stored_settings(engine, analysis_id)
            keep = {k: stored[k] for k in ("strategy", "n_boot", "seed") if k in stored}
            settings = replace(QASettings(**keep), policy=policy)
            analysis_id = analyze_qa(engine, settings, progress=progress).id
        return build_qa_report(engine, analysis_id=analysis_id, progress=progress)
    if kind == "conversation":
        from cuegap.reports._conv_report import conv_report_data

        return conv_report_data(engine, analysis_id, policy, progress)
    if kind == "prompt_variance":
        from cuegap.audit.prompt_variance import analyze_prompt_variance
        from cuegap.reanalysis_pv import settings_from_stored
        from cuegap.reports import build_pv_report

        if policy is not None:
            settings = replace(
                settings_from_stored(_stored_settings(engine, analysis_id)), policy=policy
            )
            analysis_id = analyze_prompt_variance(engine, settings, progress=progress).id
        return build_pv_report(engine, analysis_id=analysis_id, progress=progress)
    raise ValueError(f"kind should be one of {', '.join(KINDS)} but got {kind!r}")
