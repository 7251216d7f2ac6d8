"""The prompt-variance section of an audit report (seed 003 §3): read from the newest
stored ``prompt_variance`` analysis and formatted for ``partials/_pv_section.html.j2``.

Every value the templates print is a plain string (autoescape makes untrusted system,
category and factor names text); figures come from
:mod:`cuegap.designs.prompt_variance._report_figures`.
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd
from sqlalchemy import select
from sqlalchemy.engine import Engine

from cuegap.designs.prompt_variance import _report_figures as figs
from cuegap.reports import fmt_date as _date
from cuegap.reports import fmt_num
from cuegap.reports import fmt_p as _p
from cuegap.reports import fmt_text as _text
from cuegap.reports import load_tables as _load_tables
from cuegap.schema import Analysis

KIND = "prompt_variance"


def load_pv(engine: Engine) -> dict[str, Any] | None:
    """The newest prompt-variance analysis: ``id``, ``created_at``, ``settings`` and
    ``tables``; None when none is stored."""
    stmt = select(Analysis).where(Analysis.kind == KIND).order_by(Analysis.id.desc()).limit(1)
    with engine.connect() as conn:
        row = conn.execute(stmt).first()
    if row is None:
        return None
    from cuegap.designs.prompt_variance._report_bayes import load_pv_bayes

    return {
        "id": int(row.id),
        "created_at": row.created_at,
        "settings": dict(row.settings or {}),
        "tables": _load_tables(engine, row.id),
        "bayes": load_pv_bayes(engine, row.data_fingerprint),
    }


def ratio_text(ratio: float, max_abs: float, min_abs: float) -> str:
    """Seed 003's signed ratio of the extremes: ``∞`` when only the smaller is 0, ``N/A``
    when both are, else two decimals and ``×``.

    An infinite ratio is printed unsigned, as the seed prints it: its divisor is a zero,
    which has no sign to give it (a stored −∞, or a −0.0 minimum, still reads ``∞``).
    """
    if not math.isfinite(max_abs) or not math.isfinite(min_abs):
        return "–"
    if max_abs == 0 and min_abs == 0:
        return "N/A"
    if min_abs == 0 or math.isinf(ratio):
        return "∞"
    return f"{ratio:.2f}×".replace("-", "−")


def _yes(value: Any) -> str:
    """A nullable boolean as yes / no / –."""
    if value is None or (isinstance(value, float) and math.isnan(value)) or value is pd.NA:
        return "–"
    return "yes" if bool(value) else "no"


def _label(metric: Any) -> str:
    return figs.METRIC_LABELS.get(str(metric), _text(metric))


def _extremes(df: pd.DataFrame) -> list[dict[str, Any]]:
    rows = []
    for r in df.sort_values(["metric", "category", "system"]).itertuples():
        rows.append(
            {
                "system": _text(r.system),
                "category": _text(r.category),
                "metric": _label(r.metric),
                "max_abs": fmt_num(r.max_abs, 3, signed=True),
                "max_abs_at": _text(r.max_abs_combination),
                "min_abs": fmt_num(r.min_abs, 3, signed=True),
                "min_abs_at": _text(r.min_abs_combination),
                "ratio": ratio_text(float(r.ratio), float(r.max_abs), float(r.min_abs)),
                "range": fmt_num(r.range, 3),
                "extremes_flip": bool(r.extremes_flip),
                "any_flip": bool(r.any_flip),
            }
        )
    return rows


def pv_section(pv: dict[str, Any] | None) -> dict[str, Any] | None:
    """The section's context, or None without a prompt-variance analysis."""
    from markupsafe import Markup

    from cuegap.designs.prompt_variance._report_bayes import pv_bayes_context

    if pv is None:
        return None
    t = pv["tables"]
    anova = t.get("pv_anova", pd.DataFrame())
    summary = [
        {
            "metric": _label(r.metric),
            **{f"p{p}": fmt_num(getattr(r, f"eta2_p{p}"), 2) for p in (10, 25, 50, 75, 90)},
            "bh": _text(r.bh),
        }
        for r in t.get("pv_anova_summary", pd.DataFrame()).itertuples()
    ]
    discord = [
        {
            "category": _text(r.category),
            "metric": _label(r.metric),
            "w": fmt_num(r.kendall_w, 2),
            "p": _p(r.friedman_p),
            "tau": fmt_num(r.tau_b_median, 2, signed=True),
            "negative": "–"
            if pd.isna(r.share_tau_negative)
            else f"{100 * r.share_tau_negative:.0f} %",
            "range": fmt_num(r.max_rank_range, 0),
        }
        for r in t.get("pv_rank_discordance", pd.DataFrame()).itertuples()
    ]
    ranks = t.get("pv_ranks", pd.DataFrame())
    rank_figs = []
    for metric in figs.METRIC_LABELS:
        svg = figs.pv_rank_plot(ranks, metric) if len(ranks) else None
        if svg:
            rank_figs.append(
                {"id": f"fig-pv-rank-{metric}", "metric": _label(metric), "svg": Markup(svg)}
            )
    gaps = [
        {
            "system": _text(r.system),
            "gap": fmt_num(r.gap, 3, signed=True),
            "sd": fmt_num(r.sd_format, 3),
            "p": fmt_num(r.p_same_zone, 2),
            "sensitive": _yes(r.format_sensitive),
        }
        for r in t.get("pv_cue_gap_formats", pd.DataFrame()).itertuples()
    ]
    extremes = t.get("pv_extremes", pd.DataFrame())
    return {
        "analysis_id": pv["id"],
        "created_at": _date(pv["created_at"]),
        "factors": ", ".join(_text(f) for f in pv["settings"].get("factors") or []),
        "alpha": fmt_num(pv["settings"].get("alpha", 0.05), 2),
        "summary": summary,
        "eta2_figure": Markup(figs.pv_eta2_plot(anova)) if len(anova) else None,
        "rank_figures": rank_figs,
        "discordance": discord,
        "extremes": _extremes(extremes) if len(extremes) else [],
        "n_flips": int(extremes["any_flip"].sum()) if len(extremes) else 0,
        "gaps": gaps,
        **pv_bayes_context(pv.get("bayes"), t.get("pv_nemenyi")),
    }
