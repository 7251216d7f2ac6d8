"""Collect everything a report shows from a store into one :class:`ReportData`."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from importlib import metadata
from typing import Any

import pandas as pd
from sqlalchemy import select
from sqlalchemy.engine import Engine

from cuegap.audit import latest_analysis_id, load_table
from cuegap.designs import BayesSettings
from cuegap.designs.dilemma._analysis import analyze, analyze_bayes
from cuegap.designs.dilemma._analysis_settings import AnalysisSettings, settings_from_dict
from cuegap.models import Policy
from cuegap.reports._bayes import BayesResults, load_bayesian
from cuegap.schema import (
    Analysis,
    AnalysisTable,
    Provenance,
    StoreStatus,
    provenance,
    raw_examples,
    read_snapshot,
    store_status,
)

REPORT_SCHEMA_VERSION = 1


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
    schema_version: int = REPORT_SCHEMA_VERSION

    @property
    def policy(self) -> Policy:
        """The verdict policy the report applies."""
        return self.settings.policy


def _renderer_versions() -> dict[str, str]:
    out = {}
    for pkg in ("adjustText", "jinja2", "matplotlib", "weasyprint"):
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:  # pragma: no cover - a hard dependency
            out[pkg] = "unknown"
    return out


def _load_tables(engine: Engine, analysis_id: int) -> dict[str, pd.DataFrame]:
    with engine.connect() as conn:
        names = conn.execute(
            select(AnalysisTable.name)
            .where(AnalysisTable.analysis_id == analysis_id)
            .order_by(AnalysisTable.name)
        ).scalars()
        names = list(names)
    return {name: load_table(engine, name, analysis_id) for name in names}


_BAYES_FIELDS = frozenset(BayesSettings.__dataclass_fields__)


def _rederive_bayes(
    engine: Engine, settings: AnalysisSettings, data_fingerprint: str, say: Callable
) -> None:
    """Under a new policy, recompute the newest Bayesian fit's verdicts from its posterior
    (no sampling; nothing happens when that fit would need resampling)."""
    with engine.connect() as conn:
        stored = conn.execute(
            select(Analysis.settings)
            .where(Analysis.kind == "bayesian", Analysis.data_fingerprint == data_fingerprint)
            .order_by(Analysis.id.desc())
            .limit(1)
        ).scalar()
    if not stored or not stored.get("bayes"):
        return
    bayes = BayesSettings(**{k: v for k, v in stored["bayes"].items() if k in _BAYES_FIELDS})
    say("Bayesian verdicts under the new policy, from the stored posterior")
    analyze_bayes(engine, settings, bayes, progress=say, sample=False)


def build_report(
    engine: Engine,
    *,
    policy: Policy | None = None,
    analysis_id: int | None = None,
    signoffs: Sequence[Mapping[str, Any]] | None = None,
    progress: Callable[[str], None] | None = None,
) -> ReportData:
    """Gather one audit's report content from a store.

    Parameters
    ----------
    engine : Engine
        The store.
    policy : Policy, optional
        Verdict policy. When it differs from the analysis's stored policy, the analysis is
        re-run with it (:func:`cuegap.designs.dilemma._analysis.analyze` reuses a stored analysis
        with the same
        data and settings). Default: the analysis's own policy.
    analysis_id : int, optional
        A frequentist analysis; default the newest. With no analysis stored, one is run
        with default settings (and ``policy``).
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
        When ``analysis_id`` is not a stored frequentist analysis, or the store has no data.
    """
    say = progress or (lambda _msg: None)
    if analysis_id is None:
        analysis_id = latest_analysis_id(engine, "frequentist")
    if analysis_id is None:
        say("no analysis stored: analysing the store")
        result = analyze(engine, AnalysisSettings(policy=policy or Policy()), progress=say)
        analysis_id = result.id
    with engine.connect() as conn:
        row = conn.execute(select(Analysis).where(Analysis.id == analysis_id)).first()
    if row is None or row.kind != "frequentist":
        known = latest_analysis_id(engine, "frequentist")
        raise ValueError(
            f"--analysis {analysis_id} is not a stored frequentist analysis"
            + (f"; the newest is {known}" if known is not None else "; run cuegap analyze")
        )
    settings = settings_from_dict(row.settings or {})
    if policy is not None and policy != settings.policy:
        say("policy differs from the analysis's: re-running the analysis with it")
        settings = replace(settings, policy=policy)
        result = analyze(engine, settings, progress=say)
        with engine.connect() as conn:
            row = conn.execute(select(Analysis).where(Analysis.id == result.id)).one()
        _rederive_bayes(engine, settings, row.data_fingerprint, say)
    say("reading result tables")
    tables = _load_tables(engine, row.id)
    say("reading provenance")
    bayes, note = load_bayesian(engine, row.data_fingerprint, settings)
    versions = {**(row.versions or {}), **_renderer_versions()}
    with read_snapshot(engine) as conn:  # provenance, status and examples of one store state
        prov, store, examples = provenance(conn), store_status(conn), raw_examples(conn)
    return ReportData(
        analysis_id=int(row.id),
        kind=row.kind,
        data_fingerprint=row.data_fingerprint,
        analysis_created_at=row.created_at,
        settings=settings,
        versions=dict(sorted(versions.items())),
        tables=tables,
        bayes=bayes,
        bayes_note=note,
        provenance=prov,
        store=store,
        examples=examples,
        signoffs=[dict(s) for s in (signoffs or [])],
    )
