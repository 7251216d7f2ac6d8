"""The prompt-variance section's Bayesian variance components and Nemenyi post-hoc: read
the newest ``pv_bayesian`` analysis, format both for ``partials/_pv_bayes.html.j2`` and
draw the component-share figure (house style of :mod:`cuegap.designs.dilemma._report_figures`)."""

from __future__ import annotations

from typing import Any

import matplotlib.pyplot as plt
import pandas as pd
from sqlalchemy import select
from sqlalchemy.engine import Engine

from cuegap.designs.prompt_variance._report_figures import METRIC_LABELS
from cuegap.reports import OKABE_ITO, fmt_num, to_svg
from cuegap.reports import figure_style as _style
from cuegap.reports import fmt_text as _text
from cuegap.reports import load_tables as _load_tables
from cuegap.schema import Analysis

BAYES_KIND = "pv_bayesian"
_STYLE = [(OKABE_ITO["blue"], "o"), (OKABE_ITO["orange"], "s"),
          (OKABE_ITO["green"], "D"), (OKABE_ITO["vermillion"], "^")]  # fmt: skip


def load_pv_bayes(engine: Engine, data_fingerprint: str | None = None) -> dict[str, Any] | None:
    """The newest prompt-variance Bayesian analysis (``id``, ``status``, ``tables``) of the
    data ``data_fingerprint`` (a report's analysis: a fit of other data is not its fit;
    None: of any data), or None when there is none."""
    stmt = select(Analysis).where(Analysis.kind == BAYES_KIND).order_by(Analysis.id.desc())
    if data_fingerprint is not None:
        stmt = stmt.where(Analysis.data_fingerprint == data_fingerprint)
    with engine.connect() as conn:
        row = conn.execute(stmt.limit(1)).first()
    if row is None:
        return None
    return {"id": int(row.id), "status": row.status, "message": row.message or "",
            "tables": _load_tables(engine, row.id)}  # fmt: skip


def _label(metric: Any) -> str:
    return METRIC_LABELS.get(str(metric), "cue gap" if metric == "cue_gap" else _text(metric))


def pv_components_plot(typical: pd.DataFrame) -> str:
    """Each component's share of a typical cell's run-score variance, per metric: the
    posterior mean and its 90 % interval (one row per metric, one marker per component).

    Parameters
    ----------
    typical : DataFrame
        The ``pv_bayes_typical`` table (``metric``, ``component``, ``share``,
        ``share_low``, ``share_high``).
    """
    metrics = list(dict.fromkeys(typical["metric"]))
    comps = list(dict.fromkeys(typical["component"]))
    n = max(len(metrics), 1)
    with _style():
        fig, ax = plt.subplots(figsize=(6.5, 0.75 * n + 1.2))
        for k, comp in enumerate(comps):
            colour, marker = _STYLE[k % len(_STYLE)]
            sub = typical[typical["component"] == comp].set_index("metric")
            ys = [n - 1 - metrics.index(m) + 0.3 - 0.6 * k / max(len(comps) - 1, 1)
                  for m in sub.index]  # fmt: skip
            ax.errorbar(sub["share"], ys, xerr=[sub["share"] - sub["share_low"],
                        sub["share_high"] - sub["share"]], fmt=marker, color=colour, ms=4,
                        lw=1.0, capsize=2, label=str(comp))  # fmt: skip
        ax.set_yticks(range(n), [_label(m) for m in metrics][::-1])
        ax.set_xlim(0, 1)
        ax.set_ylim(-0.6, n - 0.4)
        ax.set_xlabel("share of a run score's variance (posterior mean, 90% interval)")
        ax.legend(fontsize=7, loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=len(comps),
                  frameon=False)  # fmt: skip
        return to_svg(fig, "pv-bayes-components")


def pv_bayes_context(bayes: dict[str, Any] | None, nemenyi: pd.DataFrame | None) -> dict:
    """The partial's context: ``bayes`` (None without a fit) and ``nemenyi`` rows."""
    from markupsafe import Markup

    out: dict[str, Any] = {"bayes": None, "nemenyi": []}
    if nemenyi is not None and len(nemenyi):
        g = nemenyi.groupby(["category", "metric"], sort=True)
        for (category, metric), sub in g:
            out["nemenyi"].append({
                "category": _text(category), "metric": _label(metric),
                "systems": str(int(sub["n_systems"].iloc[0])),
                "combinations": str(int(sub["n_combinations"].iloc[0])),
                "cd": fmt_num(sub["cd"].iloc[0], 2),
                "pairs": f"{int(sub['significant'].sum())} of {len(sub)}",
            })  # fmt: skip
    if bayes is None:
        return out
    t = bayes["tables"]
    typical = t.get("pv_bayes_typical", pd.DataFrame())
    comp = t.get("pv_bayes_components", pd.DataFrame())
    rows = []
    for r in typical.itertuples():
        cells = comp[(comp["metric"] == r.metric) & (comp["component"] == r.component)]
        rows.append({
            "metric": _label(r.metric), "component": _text(r.component),
            "share": fmt_num(r.share, 2),
            "interval": f"[{fmt_num(r.share_low, 2)}, {fmt_num(r.share_high, 2)}]",
            "cells": f"{int((cells['share_low'] > 0.5).sum())} of {len(cells)}",
            "converged": "yes" if bool(r.converged) else "no",
        })  # fmt: skip
    out["bayes"] = {
        "id": bayes["id"],
        "ok": bayes["status"] == "ok",
        "message": _text(bayes["message"]),
        "rows": rows,
        "figure": Markup(pv_components_plot(typical)) if len(typical) else None,
    }
    return out
