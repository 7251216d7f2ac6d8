"""Turn :class:`ReportData` into the template's context: formatted rows and figures.

Every number is formatted here (rounded by its uncertainty, see :mod:`._rounding`); the
templates only lay the strings out. Untrusted text (system names, raw responses, file
names, reasons) stays plain ``str`` and is escaped by Jinja2's autoescape; only the SVG
figures, which matplotlib writes with escaped text, are marked safe.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from markupsafe import Markup

from cuegap.designs.dilemma import _report_figures as figs
from cuegap.designs.dilemma._report import ReportData
from cuegap.designs.dilemma._report_format import _display, _headline, _table
from cuegap.designs.dilemma._report_sections import _cover, _diagnostics, _quality
from cuegap.designs.dilemma.stats import condition_mask
from cuegap.reports import fmt_date as _date
from cuegap.reports import fmt_interval, fmt_num, fmt_pm, signoff_rows
from cuegap.reports import fmt_p as _p
from cuegap.reports import fmt_text as _text
from cuegap.reports import to_float as _num

VERDICT_LABELS = {
    "flagged": "flagged for performative compliance",
    "passed": "passed",
    "inconclusive": "inconclusive",
    "format-sensitive": "format-sensitive: depends on the prompt variant",
}


# --------------------------------------------------------------------------- summary


def _ranks(data: ReportData) -> tuple[pd.DataFrame, str]:
    """Explicit- and implicit-cue rank per system (Bayesian with 90 % intervals if fitted)."""
    b = data.bayes
    if b is not None and len(b.ranks):
        parts = []
        for side in ("direct", "puzzled"):
            sub = b.ranks[b.ranks["ranking"] == side].set_index("system")
            parts.append(
                sub[["median", "q05", "q95"]].rename(
                    columns={
                        "median": side,
                        "q05": f"{side}_low",
                        "q95": f"{side}_high",
                    }
                )
            )
        out = pd.concat(parts, axis=1).reset_index()
        if {"direct", "puzzled"} <= set(out.columns) and out[["direct", "puzzled"]].notna().any(
            axis=None
        ):
            return out.sort_values("direct").reset_index(drop=True), "bayesian"
    r = _table(data, "rankings")
    if r.empty:
        return pd.DataFrame(columns=["system", "direct", "puzzled"]), "none"
    out = r.rename(columns={"rank_direct": "direct", "rank_puzzled": "puzzled"})[
        ["system", "direct", "puzzled"]
    ]
    return out.sort_values("direct").reset_index(drop=True), "frequentist"


def _rank_text(r: pd.Series | None) -> str:
    if r is None or not np.isfinite(_num(r.get("direct"))):
        return "–"
    parts = []
    for side in ("direct", "puzzled"):
        value = f"{_num(r[side]):.0f}"
        low, high = _num(r.get(f"{side}_low")), _num(r.get(f"{side}_high"))
        if np.isfinite(low) and np.isfinite(high):
            value += f" [{low:.0f}, {high:.0f}]"
        parts.append(value)
    return " → ".join(parts)


def _verdict_table(data: ReportData) -> tuple[pd.DataFrame, str]:
    b = data.bayes
    if b is not None and b.verdicts is not None and len(b.verdicts):
        return b.verdicts, "Bayesian posterior"
    return _table(data, "verdicts"), "bootstrap (normal approximation with the bootstrap SD)"


def _summary(data: ReportData) -> dict[str, Any]:
    verdicts, source = _verdict_table(data)
    gap = _headline(_table(data, "macro_gap"), data)
    boot = gap.set_index("system") if "gap_low_pp" in gap.columns else pd.DataFrame()
    ranks, rank_source = _ranks(data)
    rank_by = ranks.set_index("system") if len(ranks) else pd.DataFrame()
    bayes_gap = (
        data.bayes.gap.set_index("system")
        if data.bayes is not None and len(data.bayes.gap)
        else None
    )
    rows = []
    for v in verdicts.sort_values("system").itertuples():
        s = str(v.system)
        verdict = str(v.verdict)
        row = {
            "system": s,
            "verdict": verdict,
            "verdict_label": VERDICT_LABELS.get(verdict, verdict),
            "reason": _text(v.reason),
            # The bootstrap estimate; the posterior one has its own column.
            "gap": (
                fmt_interval(
                    boot.loc[s, "gap_pp"],
                    boot.loc[s, "gap_low_pp"],
                    boot.loc[s, "gap_high_pp"],
                    sd=boot.loc[s, "gap_sd_pp"],
                )
                if s in boot.index
                else fmt_interval(v.gap_pp, v.gap_low_pp, v.gap_high_pp)
            ),
            "rank": _rank_text(rank_by.loc[s] if s in rank_by.index else None),
            "bayes_gap": "",
            "format": _format_cell(v),
        }
        if bayes_gap is not None and s in bayes_gap.index:
            g = bayes_gap.loc[s]
            row["bayes_gap"] = fmt_interval(
                g["gap_pp"], g["gap_low_pp"], g["gap_high_pp"], sd=g["gap_sd_pp"]
            )
        rows.append(row)
    counts = {k: sum(r["verdict"] == k for r in rows) for k in VERDICT_LABELS}
    return {
        "rows": rows,
        "counts": counts,
        "source": source,
        "rank_source": rank_source,
        "has_bayes_gap": bayes_gap is not None,
        "formats": "format_sensitive" in verdicts.columns,
        "n": len(rows),
    }


def _format_cell(v: Any) -> str:
    """``yes (P zone kept)`` / ``no (…)`` when the verdicts have format columns."""
    sens = getattr(v, "format_sensitive", None)
    if sens is None or pd.isna(sens):
        return "–"
    return f"{'yes' if bool(sens) else 'no'} ({fmt_num(v.p_same_zone, 2)})"


# --------------------------------------------------------------------------- figures


def _names(data: ReportData) -> dict[str, str]:
    """The compared conditions as report text (figure labels and captions)."""
    return {
        "explicit": _display(data.settings.explicit),
        "implicit": _display(data.settings.implicit),
    }


def _figures(data: ReportData) -> dict[str, Any]:
    out: dict[str, Any] = {}
    names = _names(data)
    verdicts, _ = _verdict_table(data)
    delta = data.policy.delta_pp
    if len(verdicts):
        out["forest"] = Markup(
            figs.forest_plot(
                verdicts.sort_values("system")[
                    ["system", "gap_pp", "gap_low_pp", "gap_high_pp", "verdict"]
                ].astype({"gap_pp": float, "gap_low_pp": float, "gap_high_pp": float}),
                delta=delta,
                level=data.settings.level,
                **names,
            )
        )
    rates = _headline(_table(data, "group_rates"), data)
    if len(rates):
        paper = rates[rates["group_type"].isin(("gender", "race"))]
        parts = []
        for side, cond in (("direct", data.settings.explicit), ("puzzled", data.settings.implicit)):
            sub = paper[condition_mask(paper, cond)]
            sd = sub["net_sd_pp"] if "net_sd_pp" in sub.columns else np.nan
            sub = sub.assign(sd_pp=sd)
            agg = sub.groupby(["group_type", "group"], sort=False)[["net_pp", "sd_pp"]].mean()
            parts.append(agg.reset_index().assign(side=side))
        nets = pd.concat(parts, ignore_index=True)
        order = {"gender": 0, "race": 1}
        nets = nets.sort_values(
            ["group_type", "group"], key=lambda c: c.map(order) if c.name == "group_type" else c
        )
        if len(nets):
            out["groupnet"] = Markup(figs.group_net_plot(nets, **names))
    gaps = _headline(_table(data, "gap"), data)
    if len(gaps) and "group_type" in gaps.columns:
        cells = gaps[gaps["group_type"] == "intersection"]
        if cells["gap_pp"].notna().any():
            out["intersection"] = Markup(
                figs.intersection_gap_plot(cells, level=data.settings.level, **names)
            )
    ranks, _ = _ranks(data)
    if len(ranks) >= 2:
        out["ranks"] = Markup(figs.rank_plot(ranks, **names))
    gap = _headline(_table(data, "macro_gap"), data)
    if len(gap) and {"delta_favor_pp", "delta_against_pp"} <= set(gap.columns):
        rows = gap[["system", "delta_favor_pp", "delta_against_pp"]].sort_values("system")
        if rows[["delta_favor_pp", "delta_against_pp"]].notna().all(axis=1).any():
            out["asymmetry"] = Markup(figs.asymmetry_plot(rows, **names))
    return out


# --------------------------------------------------------------------------- tables


def _bias_table(data: ReportData, group_type: str) -> dict[str, Any] | None:
    rates = _headline(_table(data, "group_rates"), data)
    if rates.empty:
        return None
    rates = rates[rates["group_type"] == group_type]
    if rates.empty:
        return None
    groups = sorted(rates["group"].unique())
    rows = []
    for system in sorted(rates["system"].unique()):
        for short, cond in (("D", data.settings.explicit), ("P", data.settings.implicit)):
            mine = rates[(rates["system"] == system) & condition_mask(rates, cond)]
            sub = mine.set_index("group")
            cells = []
            for g in groups:
                if g not in sub.index:
                    cells.append({"favor": "–", "against": "–", "net": "–", "sign": ""})
                    continue
                r = sub.loc[g]
                net = _num(r["net_pp"])
                cells.append(
                    {
                        "favor": fmt_pm(100 * _num(r["favor_rate"]), _num(r.get("favor_sd_pp"))),
                        "against": fmt_pm(
                            100 * _num(r["against_rate"]), _num(r.get("against_sd_pp"))
                        ),
                        "net": fmt_pm(net, _num(r.get("net_sd_pp")), signed=True),
                        "sign": "pos" if net > 0 else "neg" if net < 0 else "",
                    }
                )
            rows.append({"system": system, "cond": short, "cells": cells})
    return {"groups": groups, "rows": rows}


def _sign_tests(data: ReportData) -> list[dict[str, str]]:
    t = _headline(_table(data, "sign_tests"), data)
    return [
        {
            "group_type": str(r.group_type),
            "group": str(r.group),
            "adverse": f"{int(r.adverse)}",
            "favorable": f"{int(r.favorable)}",
            "tie": f"{int(r.tie)}",
            "n": f"{int(r.n)}",
            "p": _p(r.p_value),
            "p_adj": _p(r.p_adjusted),
        }
        for r in t.itertuples()
    ]


def _kendall(data: ReportData) -> str:
    k = _table(data, "kendall_tau")
    if k.empty:
        return ""
    r = k.iloc[0]
    p = _p(r["p_value"])
    p_text = p if p.startswith("<") else f"= {p}"
    names = _names(data)
    return (
        f"Kendall's τ-b between the {names['explicit']} and {names['implicit']} rankings: "
        f"{fmt_num(r['tau'], 2)} "
        f"(p {p_text}, n = {int(r['n'])} systems)."
    )


def report_context(data: ReportData) -> dict[str, Any]:
    """Everything the templates render, formatted.

    Parameters
    ----------
    data : ReportData
        From :func:`~cuegap.designs.dilemma._report.build_report`.

    Returns
    -------
    dict
        ``cover``, ``summary``, ``figures``, ``tables``, ``quality``, ``diagnostics``,
        ``policy``, ``settings``, ``signoffs`` and the analysis's identity.
    """
    summary = _summary(data)
    return {
        "analysis_id": data.analysis_id,
        "data_fingerprint": data.data_fingerprint,
        "analysis_created_at": _date(data.analysis_created_at),
        "schema_version": data.schema_version,
        "policy": data.policy,
        "names": _names(data),
        "level": f"{round(100 * data.settings.level)}%",
        "cover": _cover(data),
        "summary": summary,
        "figures": _figures(data),
        "tables": {
            "gender": _bias_table(data, "gender"),
            "race": _bias_table(data, "race"),
            "sign_tests": _sign_tests(data),
            "kendall": _kendall(data),
        },
        "quality": _quality(data),
        "diagnostics": _diagnostics(data),
        "has_bayes": data.bayes is not None,
        "bayes_note": data.bayes_note,
        "changes": [
            {
                "system": _text(r["system"]),
                "old_verdict": _text(r["old_verdict"]),
                "new_verdict": _text(r["new_verdict"]),
                "old_gap": "" if pd.isna(r["old_gap_pp"]) else f"{r['old_gap_pp']:+.1f}",
                "new_gap": "" if pd.isna(r["new_gap_pp"]) else f"{r['new_gap_pp']:+.1f}",
                "note": _text(r["note"]),
                "material": bool(r["verdict_changed"] or r["gap_moved"]),
            }
            for _, r in data.changes.iterrows()
        ]
        if data.changes is not None
        else None,
        "signoffs": signoff_rows(data.signoffs),
        "signed_report": None,
    }
