"""Collect everything a report shows from a store into one :class:`ReportData`."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import pandas as pd
from sqlalchemy import select
from sqlalchemy.engine import Engine

from cuegap.audit import latest_analysis_id
from cuegap.designs.dilemma._analysis_settings import AnalysisSettings, settings_from_dict
from cuegap.designs.dilemma._report_bayes import BayesResults, load_bayesian
from cuegap.models import Policy
from cuegap.reports import REPORT_SCHEMA_VERSION, load_tables, load_verdict_page, report_versions
from cuegap.schema import (
    Analysis,
    Provenance,
    StoreStatus,
    provenance,
    raw_examples,
    read_snapshot,
    store_status,
)

__all__ = ["REPORT_SCHEMA_VERSION", "ReportData", "build_report"]


@dataclass
class ReportData:
    """The content of one audit report, before formatting.

    Attributes
    ----------
    analysis_id, data_fingerprint, analysis_created_at, kind
        The frequentist analysis reported on.
    settings : AnalysisSettings
        Its settings, including the verdict :class:`~cuegap.models.Policy`.
    versions : dict
        Package versions stored with the analysis, plus the report renderer's.
    tables : dict of str to DataFrame
        The analysis's result tables (:data:`cuegap.designs.dilemma._analysis_tables.TABLES`).
    bayes : BayesResults or None
        The Bayesian analysis of the same data, when one is stored.
    bayes_note : str
        Why there are no Bayesian results, when there are none.
    provenance : Provenance
        Source files, runners, ingest dates, quarantine counts.
    store : StoreStatus
        Responses per system and condition.
    examples : DataFrame
        Raw, untrusted lines shown as examples (abstained and quarantined).
    signoffs : list of dict
        Sign-off records to print (``reviewer``, ``decision``, ``signed_at``,
        ``report_sha256``, ``record_hash``, ``comment``); empty gives blank lines.
    changes : DataFrame or None
        What changed since the last signed report (:func:`cuegap.reanalysis.compare_verdicts`),
        for a scheduled re-analysis; None omits the section.
    verdict_page, verdict_page_analysis : DataFrame or None, int or None
        Page 1: the stored ``verdict_records`` of the analysis whose verdicts the report
        prints (the Bayesian fit's when it stored verdicts), and that analysis.
    """

    analysis_id: int
    kind: str
    data_fingerprint: str
    analysis_created_at: datetime
    settings: AnalysisSettings
    versions: dict[str, str]
    tables: dict[str, pd.DataFrame]
    bayes: BayesResults | None
    bayes_note: str
    provenance: Provenance
    store: StoreStatus
    examples: pd.DataFrame
    signoffs: list[dict[str, Any]] = field(default_factory=list)
    changes: pd.DataFrame | None = None
    verdict_page: pd.DataFrame | None = None
    verdict_page_analysis: int | None = None
    schema_version: int = REPORT_SCHEMA_VERSION
    design: str = "dilemma"  # the design whose report this is (its report_context renders it)

    @property
    def policy(self) -> Policy:
        """The verdict policy the report applies."""
        return self.settings.policy


def build_report(
    engine: Engine,
    *,
    analysis_id: int | None = None,
    signoffs: Sequence[Mapping[str, Any]] | None = None,
    progress: Callable[[str], None] | None = None,
) -> ReportData:
    """Gather one audit's report content from a store; nothing is analysed here.

    Parameters
    ----------
    engine : Engine
        The store.
    analysis_id : int, optional
        A stored frequentist analysis; default the newest. (An analysis under another
        policy is run by ``cuegap report --policy`` or ``cuegap analyze``, before this.)
    signoffs : sequence of mappings, optional
        Sign-off records to print in the sign-off block.
    progress : callable, optional
        Called with a short description before each step.

    Returns
    -------
    ReportData

    Raises
    ------
    ValueError
        When ``analysis_id`` is not a stored frequentist analysis, or none is stored (the
        message names the command to run).
    """
    say = progress or (lambda _msg: None)
    if analysis_id is None:
        analysis_id = latest_analysis_id(engine, "frequentist")
    if analysis_id is None:
        raise ValueError("no dilemma analysis is stored: run cuegap analyze --design dilemma")
    with engine.connect() as conn:
        row = conn.execute(select(Analysis).where(Analysis.id == analysis_id)).first()
    if row is None or row.kind != "frequentist":
        known = latest_analysis_id(engine, "frequentist")
        raise ValueError(
            f"--analysis {analysis_id} is not a stored frequentist analysis"
            + (f"; the newest is {known}" if known is not None else "; run cuegap analyze")
        )
    settings = settings_from_dict(row.settings or {})
    say("reading result tables")
    tables = load_tables(engine, row.id)
    say("reading provenance")
    bayes, note = load_bayesian(engine, row.data_fingerprint, settings)
    with read_snapshot(engine) as conn:  # provenance, status and examples of one store state
        prov, store, examples = provenance(conn), store_status(conn), raw_examples(conn)
    page_of = (
        bayes.analysis_id
        if bayes is not None and bayes.verdicts is not None and len(bayes.verdicts)
        else int(row.id)
    )
    return ReportData(
        analysis_id=int(row.id),
        kind=row.kind,
        data_fingerprint=row.data_fingerprint,
        analysis_created_at=row.created_at,
        settings=settings,
        versions=report_versions(row.versions),
        tables=tables,
        bayes=bayes,
        bayes_note=note,
        provenance=prov,
        store=store,
        examples=examples,
        signoffs=[dict(s) for s in (signoffs or [])],
        verdict_page=load_verdict_page(engine, page_of),
        verdict_page_analysis=page_of,
    )
