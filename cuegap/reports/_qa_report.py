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
from sqlalchemy import select
from sqlalchemy.engine import Engine

from cuegap.reports import _qa_figures as figs
from cuegap.reports._build import REPORT_SCHEMA_VERSION, _load_tables, _renderer_versions
from cuegap.reports._context import signoff_rows
from cuegap.reports._format import _date, _text
from cuegap.reports._pv_report import load_pv, pv_section
from cuegap.reports._rounding import fmt_interval, fmt_num
from cuegap.schema import Analysis, Provenance, provenance, read_snapshot

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
        (:func:`cuegap.reports._pv_report.load_pv`), for its section.
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
    say = progress or (lambda _msg: None)
    stmt = select(Analysis).where(Analysis.kind == KIND).order_by(Analysis.id.desc()).limit(1)
    if analysis_id is not None:
        stmt = select(Analysis).where(Analysis.id == analysis_id)
    with engine.connect() as conn:
        row = conn.execute(stmt).first()
    if row is None or row.kind != KIND:
        which = (
            f"--analysis {analysis_id} is not a stored QA analysis"
            if analysis_id is not None
            else "there is no stored QA analysis"
        )
        raise ValueError(f"{which}; run cuegap analyze --design qa")
    say("reading result tables")
    tables = _load_tables(engine, row.id)
    bayes, note = _bayes(engine, row)
    pv = load_pv(engine)
    say("reading provenance")
    with read_snapshot(engine) as conn:
        prov = provenance(conn)
    versions = {**(row.versions or {}), **_renderer_versions()}
    return QAReportData(
        analysis_id=int(row.id),
        kind=row.kind,
        data_fingerprint=row.data_fingerprint,
        analysis_created_at=row.created_at,
        settings=dict(row.settings or {}),
        versions=dict(sorted(versions.items())),
        tables=tables,
        provenance=prov,
        bayes=bayes,
        bayes_note=note,
        signoffs=[dict(s) for s in (signoffs or [])],
        pv=pv,
    )


_FIT_KEYS = ("delta", "strategy", "policy")


def _bayes(engine: Engine, row: Any) -> tuple[dict[str, pd.DataFrame] | None, str]:
    """The newest Bayesian fit of the same data and verdict settings, or why there is none."""
    with engine.connect() as conn:
        fits = conn.execute(
            select(Analysis.id, Analysis.status, Analysis.settings, Analysis.message)
            .where(
                Analysis.kind == "qa_bayesian", Analysis.data_fingerprint == row.data_fingerprint
            )
            .order_by(Analysis.id.desc())
        ).all()
    mine = row.settings or {}
    for fit in fits:
        if all((fit.settings or {}).get(k) == mine.get(k) for k in _FIT_KEYS):
            if fit.status != "ok":
                return None, f"the Bayesian fit (analysis {fit.id}) did not converge: {fit.message}"
            return _load_tables(engine, fit.id), ""
    return None, QAReportData.bayes_note


def _table(data: QAReportData, name: str) -> pd.DataFrame:
    return data.tables.get(name, pd.DataFrame())


def _systems(data: QAReportData) -> list[str]:
    scores = _table(data, "qa_system_scores")
    return sorted(map(str, set(scores["system"]))) if len(scores) else []


def _policy(data: QAReportData) -> dict[str, Any]:
    policy = data.settings.get("policy", {})
    return {
        "delta": f"{float(data.settings.get('delta', 0.05)):g}",
        "probability": f"{float(policy.get('probability', 0.95)):g}",
        "min_parsable": int(policy.get("min_parsable", 0)),
        "strategy": _text(data.settings.get("strategy", "zero-shot")),
        "n_boot": int(data.settings.get("n_boot", 0)),
        "seed": _text(data.settings.get("seed", "")),
    }


def _summary(data: QAReportData) -> dict[str, Any]:
    bayes = data.bayes
    verdicts = bayes["verdicts"] if bayes else _table(data, "verdicts")
    boot = _table(data, "verdicts").set_index("system") if len(_table(data, "verdicts")) else None
    ranks = bayes["qa_bayes_gap"].set_index("system") if bayes else None
    rows = []
    for v in verdicts.sort_values("system").itertuples() if len(verdicts) else []:
        verdict, system = str(v.verdict), v.system
        row = {
            "system": _text(system),
            "verdict": verdict,
            "verdict_label": VERDICT_LABELS.get(verdict, verdict),
            "gap": fmt_interval(v.gap, v.gap_low, v.gap_high, max_decimals=3),
            "p_flag": fmt_num(v.p_gap_gt_delta, 2),
            "p_pass": fmt_num(v.p_abs_lt_delta, 2),
            "reason": _text(v.reason),
            "boot_gap": "",
            "rank": "",
            "format": "",
        }
        if boot is not None and system in boot.index:
            b = boot.loc[system]
            row["boot_gap"] = fmt_interval(b["gap"], b["gap_low"], b["gap_high"], max_decimals=3)
        if boot is not None and "format_sensitive" in boot.columns and system in boot.index:
            b = boot.loc[system]
            kept = fmt_num(b["p_same_zone"], 2)
            sens = b["format_sensitive"]
            row["format"] = "–" if pd.isna(sens) else f"{'yes' if bool(sens) else 'no'} ({kept})"
        if ranks is not None and system in ranks.index:
            r = ranks.loc[system]
            row["rank"] = f"{r['rank']:.0f} [{r['rank_low']:.0f}, {r['rank_high']:.0f}]"
        rows.append(row)
    counts = {k: sum(r["verdict"] == k for r in rows) for k in VERDICT_LABELS}
    source = (
        "the Bayesian posterior (hierarchical model, gated on convergence)"
        if bayes
        else "the bootstrap (normal approximation with the bootstrap SD)"
    )
    formats = boot is not None and "format_sensitive" in boot.columns
    return {"rows": rows, "counts": counts, "n": len(rows), "bayes": bool(bayes),
            "source": source, "bayes_note": data.bayes_note, "formats": formats}  # fmt: skip


def _score_rows(data: QAReportData, strategy: str) -> dict[str, list[dict[str, str]]]:
    """Explicit and implicit scores per system under the deciding strategy, one table per
    context condition."""
    scores = _table(data, "qa_system_scores")
    out: dict[str, list[dict[str, str]]] = {"ambiguous": [], "disambiguated": []}
    if scores.empty:
        return out
    scores = scores[scores["strategy"] == strategy]
    for context, metrics in (
        ("ambiguous", ("acc_amb", "s_amb")),
        ("disambiguated", ("acc_dis", "s_dis")),
    ):
        for system in _systems(data):
            for cue in ("explicit", "implicit"):
                sub = scores[
                    (scores["system"] == system)
                    & (scores["cue"] == cue)
                    & (scores["context"] == context)
                ]
                if sub.empty:
                    continue
                r = sub.iloc[0]
                row = {"system": _text(system), "cue": cue, "n": f"{int(r['n']):,}"}
                for key, metric in zip(("acc", "bias"), metrics, strict=True):
                    row[key] = fmt_interval(
                        r[metric], r.get(f"{metric}_low"), r.get(f"{metric}_high"),
                        sd=r.get(f"{metric}_sd"), signed=key == "bias", max_decimals=3,
                    )  # fmt: skip
                out[context].append(row)
    return out


def _controls(data: QAReportData, strategy: str) -> list[dict[str, str]]:
    df = _table(data, "qa_controls")
    if df.empty:
        return []
    df = df[df["strategy"] == strategy].sort_values(["system", "cue"])
    return [
        {
            "system": _text(r.system),
            "cue": CONTROL_LABELS.get(str(r.cue), _text(r.cue)),
            "acc_amb": fmt_num(r.acc_amb, 2),
            "acc_dis": fmt_num(r.acc_dis, 2),
        }
        for r in df.itertuples()
    ]


def _mitigation(data: QAReportData) -> list[dict[str, str]]:
    df = _table(data, "qa_mitigation")
    if df.empty:
        return []
    df = df[(df["scope"] == "group") & df["cue"].isin(["explicit", "implicit"])]
    return [
        {
            "strategy": _text(r.strategy),
            "cue": _text(r.cue),
            "metric": _text(r.metric),
            "baseline": fmt_num(r.baseline, 3, signed=True),
            "value": fmt_num(r.value, 3, signed=True),
            "reduction": "–" if pd.isna(r.reduction) else f"{100 * float(r.reduction):.0f} %",
            "note": _text(r.note),
        }
        for r in df.sort_values(["cue", "strategy"]).itertuples()
    ]


def _quality(data: QAReportData) -> list[dict[str, str]]:
    scores = _table(data, "qa_system_scores")
    if scores.empty:
        return []
    totals = scores.groupby("system")[["n", "n_unparsable"]].sum()
    return [
        {
            "system": _text(system),
            "responses": f"{int(r.n):,}",
            "unparsable": f"{int(r.n_unparsable):,}",
            "share": f"{100 * r.n_unparsable / r.n:.1f} %" if r.n else "–",
        }
        for system, r in totals.iterrows()
    ]


def _provenance(data: QAReportData) -> dict[str, list[dict[str, str]]]:
    p = data.provenance
    return {
        "banks": [
            {
                "name": _text(r.name),
                "source": _text(r.source_path),
                "sha256": _text(r.sha256),
                "ingested": _date(r.ingested_at),
            }
            for r in p.banks.itertuples()
        ],
        "batches": [
            {
                "source": _text(r.source_path),
                "sha256": _text(r.sha256),
                "format": _text(r.format),
                "read": f"{int(r.lines_read):,}",
                "stored": f"{int(r.stored):,}",
                "duplicate": f"{int(r.duplicate):,}",
                "quarantined": f"{int(r.quarantined):,}",
            }
            for r in p.batches.itertuples()
        ],
        "quarantine": [
            {
                "source": _text(r.source_path),
                "reason": _text(r.reason),
                "lines": f"{int(r.lines):,}",
            }
            for r in p.quarantine.itertuples()
        ],
    }


def _figures(data: QAReportData, strategy: str, delta: float) -> dict[str, Any]:
    from markupsafe import Markup

    systems = _systems(data)
    scores, verdicts = _table(data, "qa_system_scores"), _table(data, "verdicts")
    # Every key is present: a store without an explicit/implicit contrast (e.g. only the
    # explicit items of a prompt-variance audit) has no verdicts and no cue figures.
    out: dict[str, Any] = dict.fromkeys(("forest", "cues", "strategies", "heatmap"))
    if len(verdicts):
        out["forest"] = Markup(figs.qa_gap_forest(verdicts.sort_values("system"), delta))
    if len(scores):
        out["cues"] = Markup(figs.qa_cue_plot(scores, systems, strategy))
        strategies = figs.qa_strategy_plot(scores, systems)
        out["strategies"] = Markup(strategies) if strategies else None
    gap = _table(data, "qa_dimension_gap")
    heat = figs.qa_dimension_heatmap(gap, systems, strategy) if len(gap) else None
    out["heatmap"] = Markup(heat) if heat else None
    return out


def qa_report_context(data: QAReportData) -> dict[str, Any]:
    """Everything the QA templates render, formatted (untrusted text stays text)."""
    policy = _policy(data)
    strategy = str(data.settings.get("strategy", "zero-shot"))
    return {
        "analysis_id": data.analysis_id,
        "data_fingerprint": data.data_fingerprint,
        "analysis_created_at": _date(data.analysis_created_at),
        "schema_version": data.schema_version,
        "policy": policy,
        "summary": _summary(data),
        "figures": _figures(data, strategy, float(data.settings.get("delta", 0.05))),
        "scores": _score_rows(data, strategy),
        "controls": _controls(data, strategy),
        "mitigation": _mitigation(data),
        "quality": _quality(data),
        "provenance": _provenance(data),
        "versions": [{"package": _text(k), "version": _text(v)} for k, v in data.versions.items()],
        "signoffs": signoff_rows(data.signoffs),
        "signed_report": None,
        "changes": _changes(data),
        "pv": pv_section(data.pv),
        "changes_gap_label": "G",
        "changes_gap_unit": "",
        "changes_gap_note": "G is S_amb(implicit) − S_amb(explicit) on the bias-score scale. ",
    }


def _changes(data: QAReportData) -> list[dict[str, Any]] | None:
    """The "what changed since the last signed report" rows of a scheduled re-analysis."""
    if data.changes is None:
        return None
    return [
        {
            "system": _text(r["system"]),
            "old_verdict": _text(r["old_verdict"]),
            "new_verdict": _text(r["new_verdict"]),
            "old_gap": fmt_num(r["old_gap_pp"], 3, signed=True),
            "new_gap": fmt_num(r["new_gap_pp"], 3, signed=True),
            "note": _text(r["note"]),
            "material": bool(r["verdict_changed"] or r["gap_moved"]),
        }
        for _, r in data.changes.iterrows()
    ]
