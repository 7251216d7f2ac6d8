"""The QA-design report's template context: summary, score tables, figures, provenance.

Built from the :class:`~cuegap.designs.qa._report.QAReportData` a store gave; the provenance
rows are the shared :func:`cuegap.reports.provenance_rows`.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from cuegap.designs.prompt_variance.report_sections import pv_section
from cuegap.designs.qa import _report_figures as figs
from cuegap.designs.qa._report import CONTROL_LABELS, VERDICT_LABELS, QAReportData
from cuegap.reports import change_rows, fmt_interval, fmt_num, provenance_rows, signoff_rows
from cuegap.reports import fmt_date as _date
from cuegap.reports import fmt_text as _text

__all__ = ["qa_report_context"]


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


def _bayes_model(data: QAReportData) -> dict[str, Any] | None:
    """The methods text's account of the Bayesian model's pooling levels: which are in the
    model and which were left out, with the reason (``qa_bayes_levels``; None without a
    fit, or for a fit stored before that table was kept)."""
    levels = (data.bayes or {}).get("qa_bayes_levels")
    if levels is None or not len(levels):
        return None
    from cuegap.designs.qa.stats._bayes_model import LEVEL_NAMES

    name = {k: LEVEL_NAMES.get(str(k), _text(k)) for k in levels["level"]}
    kept = [name[r.level] for r in levels.itertuples() if bool(r.in_model)]
    dropped = [
        {"level": name[r.level], "reason": _text(r.reason)}
        for r in levels.itertuples()
        if not bool(r.in_model)
    ]
    return {"kept": ", ".join(kept) or "none", "dropped": dropped}


def _record(data: QAReportData) -> pd.DataFrame:
    """The verdicts of record: what ``cuegap analyze`` printed last and ``cuegap export
    verdicts`` writes (:attr:`QAReportData.verdicts_of_record`), never recomputed."""
    record = data.verdicts_of_record
    return record if record is not None else _table(data, "verdicts")


def _summary(data: QAReportData) -> dict[str, Any]:
    bayes = data.bayes
    verdicts = _record(data)
    # A stored fit that missed the gate: its verdicts (all inconclusive) are the record;
    # its posterior is not trusted, so G comes from the bootstrap and no probability shows.
    gate_missed = data.verdicts_of_record is not None and not bayes
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
        if gate_missed:
            row.update(gap="–", p_flag="–", p_pass="–")
        if boot is not None and system in boot.index:
            b = boot.loc[system]
            row["boot_gap"] = fmt_interval(b["gap"], b["gap_low"], b["gap_high"], max_decimals=3)
            if gate_missed:
                row["gap"] = row["boot_gap"]
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
    if bayes:
        source = "the Bayesian posterior (hierarchical model, gated on convergence)"
    elif gate_missed:
        source = (
            f"the stored verdicts of Bayesian analysis {data.verdicts_analysis}, which missed "
            "its convergence gate, so every verdict is inconclusive (as cuegap export verdicts "
            "writes them); G and its interval are the bootstrap's, for reference, and no "
            "probability is shown"
        )
    else:
        source = "the bootstrap (normal approximation with the bootstrap SD)"
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
    cols = ["n", "n_unparsable"] + (["n_untargeted"] if "n_untargeted" in scores else [])
    totals = scores.groupby("system")[cols].sum()
    return [
        {
            "system": _text(system),
            "responses": f"{int(r.n):,}",
            "unparsable": f"{int(r.n_unparsable):,}",
            "share": f"{100 * r.n_unparsable / r.n:.1f} %" if r.n else "–",
            # parsable answers to items without a target: in accuracy, not in bias scores
            "untargeted": f"{int(r.get('n_untargeted', 0)):,}",
        }
        for system, r in totals.iterrows()
    ]


def _count_or_dash(row: Any, column: str) -> str:
    value = getattr(row, column, None)
    return "–" if value is None or pd.isna(value) else f"{int(value):,}"


def _agreement(data: QAReportData) -> list[dict[str, str]]:
    """How often cuegap's reading agrees with the runner's own (systems the runner read)."""
    df = _table(data, "qa_parse_agreement")
    if df.empty or not (df["runner_read"] > 0).any():
        return []

    def part(n: int, of: int) -> str:
        return f"{n:,} ({100 * n / of:.1f} %)"

    return [
        {
            "system": _text(r.system),
            "runner_read": f"{int(r.runner_read):,}",
            "agree": part(int(r.agree), int(r.runner_read)),
            "differ": part(int(r.differ), int(r.runner_read)),
            "unreadable": part(int(r.unreadable), int(r.runner_read)),
            # answers stored before ingest noted agreement, read again from their text;
            # answers without text (tables stored before these columns show "–")
            "from_text": _count_or_dash(r, "from_text"),
            "no_text": _count_or_dash(r, "no_text"),
        }
        for r in df[df["runner_read"] > 0].itertuples()
    ]


def _target_loc(data: QAReportData) -> list[dict[str, str]]:
    """Items whose target BBQ's ``target_loc`` sets differently from cuegap's derivation."""
    df = _table(data, "qa_target_loc")
    words = {"differs": "target_loc used", "ignored": "not usable: derivation kept"}
    return [
        {
            "dimension": _text(r.dimension),
            "cue": _text(r.cue),
            "status": _text(words.get(str(r.status), str(r.status))),
            "items": f"{int(r.items):,}",
            "answers": f"{int(r.answers):,}",
        }
        for r in df.itertuples()
    ]


def _figures(data: QAReportData, strategy: str, delta: float) -> dict[str, Any]:
    from markupsafe import Markup

    systems = _systems(data)
    scores, verdicts = _table(data, "qa_system_scores"), _table(data, "verdicts")
    # Every key is present: a store without an explicit/implicit contrast (e.g. only the
    # explicit items of a prompt-variance audit) has no verdicts and no cue figures.
    out: dict[str, Any] = dict.fromkeys(("forest", "cues", "strategies", "heatmap"))
    if len(verdicts):
        # Bootstrap gaps, marked with the verdicts of record (the summary's).
        record = _record(data).set_index("system")["verdict"]
        marked = verdicts.assign(verdict=verdicts["system"].map(record).fillna("inconclusive"))
        out["forest"] = Markup(figs.qa_gap_forest(marked.sort_values("system"), delta))
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
        "agreement": _agreement(data),
        "target_loc": _target_loc(data),
        "provenance": provenance_rows(data),
        "versions": [{"package": _text(k), "version": _text(v)} for k, v in data.versions.items()],
        "signoffs": signoff_rows(data.signoffs),
        "signed_report": None,
        "changes": change_rows(data.changes),
        "pv": pv_section(data.pv),
        "bayes_model": _bayes_model(data),
        "changes_gap_label": "G",
        "changes_gap_unit": "",
        "changes_gap_note": "G is S_amb(implicit) − S_amb(explicit) on the bias-score scale. ",
    }
