"""Turn :class:`ReportData` into the template's context: formatted rows and figures.

Every number is formatted here (rounded by its uncertainty, see :mod:`._rounding`); the
templates only lay the strings out. Untrusted text (system names, raw responses, file
names, reasons) stays plain ``str`` and is escaped by Jinja2's autoescape; only the SVG
figures, which matplotlib writes with escaped text, are marked safe.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from markupsafe import Markup

from cuegap.reports import _figures as figs
from cuegap.reports._build import ReportData
from cuegap.reports._rounding import fmt_interval, fmt_num, fmt_pm

VERDICT_LABELS = {
    "flagged": "flagged for performative compliance",
    "passed": "passed",
    "inconclusive": "inconclusive",
}
EXAMPLE_CHARS = 600


def _label(cond: tuple[str, str | None] | list) -> str:
    name, diff = cond[0], cond[1] if len(cond) > 1 else None
    return name if diff is None else f"{name}-{diff}"


def _is(df: pd.DataFrame, cond: tuple[str, str | None]) -> pd.Series:
    mask = df["condition"] == cond[0]
    return mask & (df["difficulty"].isna() if cond[1] is None else df["difficulty"] == cond[1])


def _pct(x: Any) -> str:
    try:
        x = float(x)
    except (TypeError, ValueError):
        return "–"
    return "–" if not math.isfinite(x) else f"{100 * x:.1f}%"


def _num(x: Any) -> float:
    try:
        return float(x)
    except (TypeError, ValueError):
        return math.nan


def _date(x: Any) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "–"
    ts = pd.Timestamp(x)
    return ts.strftime("%Y-%m-%d %H:%M:%S") + (" UTC" if ts.tzinfo is not None else "")


def _text(x: Any) -> str:
    return "" if x is None or (isinstance(x, float) and math.isnan(x)) else str(x)


def _p(x: Any) -> str:
    """A p-value: three decimals, ``< 0.001`` below that."""
    value = _num(x)
    if not math.isfinite(value):
        return "–"
    return "< 0.001" if value < 0.0005 else f"{value:.3f}"


def _table(data: ReportData, name: str) -> pd.DataFrame:
    return data.tables.get(name, pd.DataFrame())


def _headline(df: pd.DataFrame, data: ReportData) -> pd.DataFrame:
    if df.empty or "consequences" not in df.columns:
        return df
    return df[df["consequences"] == data.settings.consequences]


# --------------------------------------------------------------------------- summary


def _ranks(data: ReportData) -> tuple[pd.DataFrame, str]:
    """Direct and Puzzled rank per system (Bayesian with 90 % intervals when present)."""
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
        "n": len(rows),
    }


# --------------------------------------------------------------------------- figures


def _figures(data: ReportData) -> dict[str, Any]:
    out: dict[str, Any] = {}
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
            )
        )
    rates = _headline(_table(data, "group_rates"), data)
    if len(rates):
        paper = rates[rates["group_type"].isin(("gender", "race"))]
        parts = []
        for side, cond in (("direct", data.settings.explicit), ("puzzled", data.settings.implicit)):
            sub = paper[_is(paper, cond)]
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
            out["groupnet"] = Markup(figs.group_net_plot(nets))
    gaps = _headline(_table(data, "gap"), data)
    if len(gaps) and "group_type" in gaps.columns:
        cells = gaps[gaps["group_type"] == "intersection"]
        if cells["gap_pp"].notna().any():
            out["intersection"] = Markup(
                figs.intersection_gap_plot(cells, level=data.settings.level)
            )
    ranks, _ = _ranks(data)
    if len(ranks) >= 2:
        out["ranks"] = Markup(figs.rank_plot(ranks))
    gap = _headline(_table(data, "macro_gap"), data)
    if len(gap) and {"delta_favor_pp", "delta_against_pp"} <= set(gap.columns):
        rows = gap[["system", "delta_favor_pp", "delta_against_pp"]].sort_values("system")
        if rows[["delta_favor_pp", "delta_against_pp"]].notna().all(axis=1).any():
            out["asymmetry"] = Markup(figs.asymmetry_plot(rows))
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
            sub = rates[(rates["system"] == system) & _is(rates, cond)].set_index("group")
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
    return (
        f"Kendall's τ-b between the Direct and Puzzled rankings: {fmt_num(r['tau'], 2)} "
        f"(p {p_text}, n = {int(r['n'])} systems)."
    )


# --------------------------------------------------------------------------- quality


def _quality(data: ReportData) -> dict[str, Any]:
    s = data.settings
    abst = _table(data, "abstention")
    abst_rows = []
    if len(abst):
        head = _headline(abst, data)
        for system in sorted(abst["system"].unique()):
            mine = abst[abst["system"] == system]
            w = head[(head["system"] == system) & (head["probe"] == "what_if")]
            rate = {}
            for cond in (s.explicit, s.implicit):
                sub = w[_is(w, cond)]
                resp = sub["responses"].sum()
                rate[_label(cond)] = _pct(sub["abstained"].sum() / resp if resp else math.nan)
            total = mine["responses"].sum()
            failures = (mine["parse_failure_rate"] * mine["responses"]).sum()
            abst_rows.append(
                {
                    "system": system,
                    "explicit": rate[_label(s.explicit)],
                    "implicit": rate[_label(s.implicit)],
                    "responses": f"{int(total):,}",
                    "parse_failures": _pct(failures / total if total else math.nan),
                }
            )
    rec = _table(data, "recovery")
    rec_rows = []
    if len(rec):
        rec = _headline(rec, data)
        rec = rec[_is(rec, s.implicit)].sort_values("system")
        rec_rows = [
            {
                "system": str(r.system),
                "accuracy": _pct(r.accuracy),
                "parsability": _pct(r.parsability),
                "correct": f"{int(r.correct):,} / {int(r.slots):,}",
                "low": _num(r.accuracy) < s.policy.min_recovery,
            }
            for r in rec.itertuples()
        ]
    excl = _table(data, "exclusions")
    excl_rows = (
        [
            {
                "system": str(r.system),
                "worst": _text(r.worst_condition),
                "rate": _pct(r.abstention_rate),
                "reason": _text(r.reason),
            }
            for r in excl[excl["excluded"].astype(bool)].sort_values("system").itertuples()
        ]
        if len(excl)
        else []
    )
    quarantine = [
        {"file": _text(r.source_path), "reason": _text(r.reason), "lines": f"{int(r.lines):,}"}
        for r in data.provenance.quarantine.itertuples()
    ]
    examples = []
    for r in data.examples.itertuples():
        text = _text(r.text)
        cut = len(text) > EXAMPLE_CHARS
        examples.append(
            {
                "kind": str(r.kind),
                "system": _text(r.system),
                "where": _text(r.where),
                "status": _text(r.status),
                "text": text[:EXAMPLE_CHARS] + ("…" if cut else ""),
                "chars": f"{len(text):,}",
                "cut": cut,
            }
        )
    return {
        "abstention": abst_rows,
        "explicit": _label(s.explicit),
        "implicit": _label(s.implicit),
        "recovery": rec_rows,
        "exclusions": excl_rows,
        "quarantine": quarantine,
        "quarantined_total": f"{int(data.provenance.quarantine['lines'].sum()):,}"
        if len(data.provenance.quarantine)
        else "0",
        "examples": examples,
        "example_chars": f"{EXAMPLE_CHARS:,}",
    }


# --------------------------------------------------------------------------- cover


def _cover(data: ReportData) -> dict[str, Any]:
    s = data.settings
    p = data.provenance
    responses = (
        data.store.systems.set_index("system")["responses"] if len(data.store.systems) else {}
    )
    systems = [
        {
            "system": str(r.system),
            "provider": _text(r.provider),
            "version": _text(r.version),
            "responses": f"{int(responses.get(r.system, 0)):,}",
        }
        for r in p.systems.itertuples()
    ]
    conditions = [
        {
            "condition": str(r.condition),
            "difficulty": _text(r.difficulty),
            "probe": str(r.probe),
            "responses": f"{int(r.responses):,}",
            "abstention": _pct(r.abstention_rate),
        }
        for r in data.store.conditions.itertuples()
    ]
    banks = [
        {
            "name": str(r.name),
            "source": _text(r.source_path) or _text(r.source),
            "sha256": _text(r.sha256),
            "ingested": _date(r.ingested_at),
        }
        for r in p.banks.itertuples()
    ]
    runs = [
        {
            "file": _text(r.source_path),
            "sha256": _text(r.sha256),
            "format": _text(r.format),
            "runner": " ".join(x for x in (_text(r.runner), _text(r.runner_version)) if x),
            "started": _text(r.started_at),
            "ingested": _date(r.ingested_at),
            "responses": f"{int(r.responses):,}",
        }
        for r in p.runs.itertuples()
    ]
    batches = [
        {
            "file": _text(r.source_path),
            "status": _text(r.status),
            "read": f"{int(r.lines_read):,}",
            "stored": f"{int(r.stored):,}",
            "duplicate": f"{int(r.duplicate):,}",
            "quarantined": f"{int(r.quarantined):,}",
            "finished": _date(r.finished_at),
            "mapping": _mapping_label(getattr(r, "mapping", None)),
        }
        for r in p.batches.itertuples()
    ]
    mappings = {}  # each distinct runner mapping once, as read
    for m in p.batches.get("mapping", pd.Series(dtype=object)):
        if isinstance(m, dict) and m.get("sha256") not in mappings:
            mappings[m.get("sha256")] = {"label": _mapping_label(m), "toml": _text(m.get("toml"))}
    settings = [
        ("explicit cue (condition)", _label(s.explicit)),
        ("implicit cue (condition)", _label(s.implicit)),
        ("consequences shown", "yes" if s.consequences else "no"),
        ("bootstrap replicates", f"{s.n_boot:,}"),
        ("bootstrap seed", str(s.seed)),
        ("interval coverage", f"{round(100 * s.level)}%"),
        ("regression covariates", ", ".join(s.covariates) or "none"),
    ]
    return {
        "systems": systems,
        "conditions": conditions,
        "banks": banks,
        "runs": runs,
        "batches": batches,
        "mappings": list(mappings.values()),
        "settings": settings,
        "policy_toml": data.policy.to_toml(),
        "versions": list(data.versions.items()),
        "responses": f"{data.store.responses:,}",
        "explicit": _label(s.explicit),
        "implicit": _label(s.implicit),
        "consequences_label": "with consequences" if s.consequences else "without consequences",
    }


def _mapping_label(m: Any) -> str:
    """ "name · sha256 prefix" of an ingest pass's runner mapping, "–" without one."""
    if not isinstance(m, dict):
        return "–"
    return f"{Path(str(m.get('path', '?'))).name} · {str(m.get('sha256', ''))[:12]}"


def _diagnostics(data: ReportData) -> dict[str, Any]:
    b = data.bayes
    if b is None:
        return {"note": f"No Bayesian fit: {data.bayes_note}.", "columns": [], "rows": []}
    d = b.diagnostics
    cols = [str(c) for c in d.columns]

    def cell(x: Any) -> str:
        if isinstance(x, bool | np.bool_):
            return "yes" if x else "no"
        if isinstance(x, float | np.floating):
            return "–" if not np.isfinite(x) else f"{x:.4g}"
        return _text(x)

    rows = [[cell(x) for x in row] for row in d.itertuples(index=False)]
    status = "converged" if b.status == "ok" else f"status {b.status}"
    note = f"Bayesian analysis {b.analysis_id}: {status}. {b.message}".strip()
    return {"note": note, "columns": cols, "rows": rows}


def report_context(data: ReportData) -> dict[str, Any]:
    """Everything the templates render, formatted.

    Parameters
    ----------
    data : ReportData
        From :func:`~cuegap.reports.build_report`.

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
        "signoffs": [
            {k: _text(s.get(k)) for k in ("reviewer", "decision", "signed_at", "comment")}
            | {
                "report_sha256": _text(s.get("report_sha256") or s.get("report_hash")),
                "record_hash": _text(s.get("record_hash")),
            }
            for s in data.signoffs
        ],
    }
