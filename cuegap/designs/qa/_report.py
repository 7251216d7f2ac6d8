"""The QA-design audit report (seed 001): data collected from a store, and the context
its templates render.

Same house style and compliance machinery as the dilemma report (content hash, report id,
sign-off block), its own wording: explicit labels vs implicit cues, ambiguous and
disambiguated contexts, accuracy and bias scores. Page 1 is the verdict summary; findings
follow; data quality, provenance and methods come last, then the sign-off.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, ClassVar

import pandas as pd
from sqlalchemy.engine import Engine

from cuegap.designs.prompt_variance.report_sections import load_pv
from cuegap.reports import (
    REPORT_SCHEMA_VERSION,
    load_stored,
    load_tables,
    load_verdict_page,
    matching_fit,
)
from cuegap.schema import Provenance

KIND = "qa"
#: The QA design's own verdict wording (never the dilemma design's).
VERDICT_LABELS = {
    "flagged": "flagged: more stereotyped when implied",
    "passed": "passed",
    "inconclusive": "inconclusive",
    "format-sensitive": "format-sensitive: depends on the prompt format",
}
CONTROL_LABELS = {"control_neutral": "neutral characteristic", "control_none": "no characteristic"}


@dataclass
class QAReportData:
    """The content of one QA audit report, before formatting.

    Attributes
    ----------
    analysis_id, data_fingerprint, analysis_created_at, kind
        The stored QA analysis (kind ``qa``).
    settings : dict
        Its stored settings (policy, δ, deciding strategy, bootstrap).
    versions : dict
        Package versions stored with the analysis, plus the renderer's.
    tables : dict of str to DataFrame
        The analysis's tables (``qa_scores``, ``qa_system_scores``, ``qa_cue_gap``, …).
    provenance : Provenance
        Item banks, ingest passes and quarantine counts of the store.
    bayes : dict of str to DataFrame or None
        The tables of the newest converged Bayesian fit of the same data and settings.
    bayes_note : str
        Why there are no Bayesian results, when there are none.
    signoffs : list of dict
        Sign-off records to print; empty gives blank lines.
    changes : DataFrame or None
        Not used by QA reports yet (kept for the publishing interface).
    pv : dict or None
        The newest prompt-variance analysis of the store
        (:func:`cuegap.designs.prompt_variance.report_sections.load_pv`), for its section.
    verdicts_of_record : DataFrame or None
        The stored verdicts the report prints, the same table ``cuegap analyze`` printed
        last and ``cuegap export verdicts`` writes: those of the newest Bayesian fit of
        the same data and policy, converged or not (a fit that missed the gate stores
        every verdict as inconclusive), else the bootstrap's (``None``: ``tables``).
    verdicts_analysis : int or None
        The analysis that stored them, when it is not ``analysis_id``.
    verdict_page, verdict_page_analysis : DataFrame or None, int or None
        Page 1: the stored ``verdict_records`` of the analysis of record (that Bayesian
        fit, else ``analysis_id``), and that analysis.
    """

    design: ClassVar[str] = KIND
    analysis_id: int
    kind: str
    data_fingerprint: str
    analysis_created_at: datetime
    settings: dict[str, Any]
    versions: dict[str, str]
    tables: dict[str, pd.DataFrame]
    provenance: Provenance
    bayes: dict[str, pd.DataFrame] | None = None
    bayes_note: str = (
        "no Bayesian fit of this data and policy is stored (cuegap analyze --design qa --bayes)"
    )
    signoffs: list[dict[str, Any]] = field(default_factory=list)
    changes: pd.DataFrame | None = None
    pv: dict[str, Any] | None = None
    verdicts_of_record: pd.DataFrame | None = None
    verdicts_analysis: int | None = None
    verdict_page: pd.DataFrame | None = None
    verdict_page_analysis: int | None = None
    schema_version: int = REPORT_SCHEMA_VERSION


def build_qa_report(
    engine: Engine,
    *,
    analysis_id: int | None = None,
    signoffs: Sequence[Mapping[str, Any]] | None = None,
    progress: Callable[[str], None] | None = None,
) -> QAReportData:
    """Gather one QA audit's report content from a store.

    Parameters
    ----------
    engine : Engine
    analysis_id : int, optional
        A stored QA analysis; default the newest.
    signoffs : sequence of mappings, optional
    progress : callable, optional

    Raises
    ------
    ValueError
        When there is no such QA analysis.
    """
    stored = load_stored(engine, KIND, analysis_id, label="QA", design="qa",
                         signoffs=signoffs, progress=progress)  # fmt: skip
    bayes, note, record = _bayes(engine, stored.row)
    pv = load_pv(engine)
    page_of = record[0] if record else int(stored.row.id)
    return QAReportData(
        **stored.common(),
        bayes=bayes,
        bayes_note=note,
        pv=pv,
        verdicts_of_record=record[1] if record else None,
        verdicts_analysis=record[0] if record else None,
        verdict_page=load_verdict_page(engine, page_of),
        verdict_page_analysis=page_of,
    )


_FIT_KEYS = ("delta", "strategy", "policy")


def _bayes(
    engine: Engine, row: Any
) -> tuple[dict[str, pd.DataFrame] | None, str, tuple[int, pd.DataFrame] | None]:
    """The newest Bayesian fit of the same data and verdict settings (or why there is
    none), and the stored verdicts of that fit, converged or not: the verdicts of record.

    A report never recomputes a verdict: when the fit missed the convergence gate its
    stored verdicts (all inconclusive, with the gate's reason) are the ones printed, as the
    CLI printed them and ``cuegap export verdicts`` writes them.
    """
    fit = matching_fit(engine, row, "qa_bayesian", _FIT_KEYS)
    if fit is not None:
        tables = load_tables(engine, fit.id)
        record = (int(fit.id), tables["verdicts"]) if "verdicts" in tables else None
        if fit.status != "ok":
            why = f"the Bayesian fit (analysis {fit.id}) did not converge: {fit.message}"
            return None, why, record
        return tables, "", record
    return None, QAReportData.bayes_note, None
