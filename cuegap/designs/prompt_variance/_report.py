"""The prompt-variance report on its own (``cuegap report --design prompt-variance``): one
stored ``prompt_variance`` analysis, its section
(:mod:`cuegap.designs.prompt_variance.report_sections`) after a
page-1 summary, then provenance, methods and the sign-off.

Same house style and compliance machinery as the other reports (content hash, report id,
sign-off block). The QA report keeps its own copy of the section; this one is for a
board that wants the prompt-construction findings alone.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, ClassVar

import pandas as pd
from sqlalchemy.engine import Engine

from cuegap.designs.prompt_variance import _report_figures as figs
from cuegap.designs.prompt_variance._report_bayes import load_pv_bayes
from cuegap.designs.prompt_variance._report_verdicts import pv_methods, verdict_rows
from cuegap.designs.prompt_variance.report_sections import pv_section
from cuegap.reports import (
    REPORT_SCHEMA_VERSION,
    change_rows,
    fmt_num,
    load_stored,
    load_verdict_page,
    provenance_rows,
    signoff_rows,
)
from cuegap.reports import fmt_date as _date
from cuegap.reports import fmt_text as _text
from cuegap.schema import Provenance

KIND = "prompt_variance"
DESIGN = "prompt-variance"


@dataclass
class PVReportData:
    """The content of one prompt-variance report, before formatting.

    Attributes
    ----------
    analysis_id, kind, data_fingerprint, analysis_created_at
        The stored analysis (kind ``prompt_variance``).
    settings : dict
        Its stored settings (factors, α, level, strategy, policy).
    versions : dict
        Package versions stored with the analysis, plus the renderer's.
    tables : dict of str to DataFrame
        ``pv_scores``, ``pv_anova``, ``pv_anova_summary``, ``pv_extremes``, …
    provenance : Provenance
        Item banks, ingest passes and quarantine counts of the store.
    signoffs : list of dict
        Sign-off records to print; empty gives blank lines.
    changes : DataFrame or None
        The "what changed since the last signed report" table of a scheduled re-analysis.
    bayes : dict or None
        The newest Bayesian variance-components analysis
        (:func:`cuegap.designs.prompt_variance._report_bayes.load_pv_bayes`), if any.
    verdict_page : DataFrame or None
        Page 1: the analysis's stored ``verdict_records``.
    """

    design: ClassVar[str] = DESIGN
    analysis_id: int
    kind: str
    data_fingerprint: str
    analysis_created_at: datetime
    settings: dict[str, Any]
    versions: dict[str, str]
    tables: dict[str, pd.DataFrame]
    provenance: Provenance
    signoffs: list[dict[str, Any]] = field(default_factory=list)
    changes: pd.DataFrame | None = None
    schema_version: int = REPORT_SCHEMA_VERSION
    bayes: dict[str, Any] | None = None
    verdict_page: pd.DataFrame | None = None


def build_pv_report(
    engine: Engine,
    *,
    analysis_id: int | None = None,
    signoffs: Sequence[Mapping[str, Any]] | None = None,
    progress: Callable[[str], None] | None = None,
) -> PVReportData:
    """Gather one prompt-variance report's content from a store.

    Parameters
    ----------
    engine : Engine
    analysis_id : int, optional
        A stored prompt-variance analysis; default the newest.
    signoffs : sequence of mappings, optional
    progress : callable, optional

    Raises
    ------
    ValueError
        When there is no such analysis.
    """
    stored = load_stored(engine, KIND, analysis_id, label="prompt-variance", design=DESIGN,
                         signoffs=signoffs, progress=progress)  # fmt: skip
    return PVReportData(
        **stored.common(),
        bayes=load_pv_bayes(engine, stored.row.data_fingerprint),
        verdict_page=load_verdict_page(engine, int(stored.row.id)),
    )


def _t(data: PVReportData, name: str) -> pd.DataFrame:
    return data.tables.get(name, pd.DataFrame())


def _summary(data: PVReportData) -> dict[str, Any]:
    """Page 1: the design's size and, per score, median η², BH count, sign flips and W."""
    scores, anova = _t(data, "pv_scores"), _t(data, "pv_anova")
    summary, extremes = _t(data, "pv_anova_summary"), _t(data, "pv_extremes")
    disc = _t(data, "pv_rank_discordance")
    rows = []
    for r in summary.itertuples():
        ext = extremes[extremes["metric"] == r.metric] if len(extremes) else extremes
        w = disc.loc[disc["metric"] == r.metric, "kendall_w"] if len(disc) else pd.Series()
        rows.append(
            {
                "metric": figs.METRIC_LABELS.get(str(r.metric), _text(r.metric)),
                "eta2": fmt_num(r.eta2_p50, 2),
                "bh": _text(r.bh),
                "flips": f"{int(ext['any_flip'].sum())}/{len(ext)}" if len(ext) else "–",
                "w": fmt_num(w.median(), 2) if w.notna().any() else "–",
            }
        )
    gaps = _t(data, "pv_cue_gap_formats")
    sensitive = int(gaps["format_sensitive"].fillna(False).astype(bool).sum()) if len(gaps) else 0
    n_comb = int(anova["n_combinations"].max()) if len(anova) else 0
    return {
        "rows": rows,
        "n_systems": int(scores["system"].nunique()) if len(scores) else 0,
        "n_categories": int(scores["category"].nunique()) if len(scores) else 0,
        "n_combinations": n_comb,
        "n_gaps": len(gaps),
        "n_sensitive": sensitive,
        "verdicts": verdict_rows(_t(data, "verdicts")),
    }


def pv_report_context(data: PVReportData) -> dict[str, Any]:
    """Everything ``pv_report.html.j2`` renders, formatted (untrusted text stays text)."""
    s = data.settings
    pv = {"id": data.analysis_id, "created_at": data.analysis_created_at, "settings": s,
          "tables": data.tables, "bayes": data.bayes}  # fmt: skip
    return {
        "analysis_id": data.analysis_id,
        "data_fingerprint": data.data_fingerprint,
        "analysis_created_at": _date(data.analysis_created_at),
        "schema_version": data.schema_version,
        "summary": _summary(data),
        "pv": pv_section(pv),
        "methods": pv_methods(s, data.tables),
        "provenance": provenance_rows(data),  # type: ignore[arg-type]
        "versions": [{"package": _text(k), "version": _text(v)} for k, v in data.versions.items()],
        "signoffs": signoff_rows(data.signoffs),
        "signed_report": None,
        "changes": change_rows(data.changes),
        "changes_gap_label": "G",
        "changes_gap_unit": "",
        "changes_gap_note": "G is the explicit vs implicit gap, mean over prompt formats; the "
        "verdict column says whether it is format-sensitive. ",
    }
