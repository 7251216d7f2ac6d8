"""The conversation-design audit report (seed 003 §4-5): data collected from a store, and
the context ``conv_report.html.j2`` renders.

House style and compliance machinery as the other reports (content hash, report id,
sign-off block); its own wording: identity and baseline agents, shift rates, revealed and
anonymous identities. Page 1 is the verdict summary; findings (shift rates, contrast
forest plots, cross-benchmark consistency) follow; methods and provenance come last, then
the sign-off. Every value the templates print is a plain string (autoescape makes
untrusted system and demographic names text); figures are Markup from
:mod:`cuegap.designs.conversation._report_figures`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, ClassVar

import numpy as np
import pandas as pd
from scipy import stats
from sqlalchemy.engine import Engine

from cuegap.designs.conversation import _report_figures as figs
from cuegap.designs.conversation._report_consistency import consistency_context
from cuegap.designs.conversation._report_scope import (
    count_scope,
    data_scope,
    limitation_text,
    verdict_cells,
)
from cuegap.designs.conversation.stats._contrasts import CONTRASTS
from cuegap.designs.conversation.stats._verdict import CONTRAST_NAMES, condition_label
from cuegap.reports import (
    REPORT_SCHEMA_VERSION,
    change_rows,
    fmt_num,
    load_stored,
    load_tables,
    load_verdict_page,
    matching_fit,
    provenance_rows,
    signoff_rows,
)
from cuegap.reports import fmt_date as _date
from cuegap.reports import fmt_text as _text
from cuegap.schema import Provenance

KIND, BAYES_KIND = "conversation", "conversation_bayesian"
VERDICT_LABELS = {
    "flagged": "flagged: treats a revealed identity differently",
    "passed": "passed",
    "inconclusive": "inconclusive",
}
MAX_RATE_FIGURES = 12
_FIT_KEYS = ("unit", "correction", "alpha", "contrast", "delta", "policy")


@dataclass
class ConvReportData:
    """The content of one conversation audit report, before formatting (fields as
    :class:`cuegap.designs.qa._report.QAReportData`; ``bayes`` holds the tables of the newest
    converged Bayesian fit of the same data and settings; ``counted`` the personas,
    categories and questions of the store's conversations when they are exactly the
    analysed data, :func:`cuegap.designs.conversation._report_scope.count_scope`; ``verdict_page``
    the stored
    verdict records of that fit, converged or not, else of the analysis: page 1)."""

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
        "no Bayesian fit of this data and policy is stored "
        "(cuegap analyze --design conversation --bayes)"
    )
    gate_missed: pd.DataFrame | None = None
    signoffs: list[dict[str, Any]] = field(default_factory=list)
    changes: pd.DataFrame | None = None
    counted: dict[str, Any] = field(default_factory=dict)
    verdict_page: pd.DataFrame | None = None
    verdict_page_analysis: int | None = None
    schema_version: int = REPORT_SCHEMA_VERSION


def build_conv_report(
    engine: Engine,
    *,
    analysis_id: int | None = None,
    signoffs: Sequence[Mapping[str, Any]] | None = None,
    progress: Callable[[str], None] | None = None,
) -> ConvReportData:
    """Gather one conversation audit's report content from a store.

    Raises
    ------
    ValueError
        When there is no such conversation analysis.
    """
    stored = load_stored(engine, KIND, analysis_id, label="conversation", design=KIND,
                         signoffs=signoffs, progress=progress)  # fmt: skip
    row = stored.row
    fit = matching_fit(engine, row, BAYES_KIND, _FIT_KEYS)
    bayes, note, gate_missed = _bayes(engine, fit)
    counted = count_scope(
        engine, row.data_fingerprint, str((row.settings or {}).get("unit", "persona"))
    )
    page_of = int(fit.id) if fit is not None else int(row.id)
    return ConvReportData(
        **stored.common(), bayes=bayes, bayes_note=note, gate_missed=gate_missed,
        counted=counted, verdict_page=load_verdict_page(engine, page_of),
        verdict_page_analysis=page_of,
    )  # fmt: skip


def _bayes(
    engine: Engine, fit: Any
) -> tuple[dict[str, pd.DataFrame] | None, str, pd.DataFrame | None]:
    """The tables of the newest Bayesian fit of the same data and verdict settings
    (:func:`~cuegap.reports._loader.matching_fit`), or why there are none; and, when that
    fit missed its convergence gate, its stored (inconclusive) verdicts: the report shows
    those, as the CLI and ``export verdicts`` do."""
    if fit is None:
        return None, ConvReportData.bayes_note, None
    if fit.status != "ok":
        stored = load_tables(engine, fit.id).get("verdicts")
        note = (
            f"the Bayesian fit (analysis {fit.id}) missed its convergence gate "
            f"({fit.message}), so every verdict is inconclusive"
        )
        return None, note, stored
    return load_tables(engine, fit.id), "", None


def _policy(data: ConvReportData) -> dict[str, Any]:
    s, policy = data.settings, data.settings.get("policy", {})
    contrast = str(s.get("contrast", "demo_rc_base_pair"))
    return {
        "delta": f"{float(s.get('delta', 0.05)):g}",
        "probability": f"{float(policy.get('probability', 0.95)):g}",
        "min_parsable": int(policy.get("min_parsable", 0)),
        "unit": _text(s.get("unit", "persona")),
        "correction": "Benjamini–Hochberg" if s.get("correction") == "bh" else "none",
        "alpha": f"{float(s.get('alpha', 0.05)):g}",
        "tost": f"{round(100 * (1 - 2 * float(s.get('alpha', 0.05))))}",
        "ci": f"{round(100 * (1 - float(s.get('alpha', 0.05))))}",
        "min_unit_df": int(policy.get("min_unit_df", 1)),
        "contrast": CONTRAST_NAMES.get(contrast, _text(contrast)),
    }


def _summary(data: ConvReportData) -> dict[str, Any]:
    freq = data.tables.get("verdicts", pd.DataFrame())
    verdicts = data.bayes["verdicts"] if data.bayes else freq
    if data.gate_missed is not None:  # the fit that missed its gate decides: inconclusive
        verdicts = data.gate_missed
    freq_by = freq.set_index("system") if len(freq) else None
    contrast = str(data.settings.get("contrast", "demo_rc_base_pair"))
    tests = data.tables.get("conv_tests", pd.DataFrame())
    tests = tests[tests["contrast"] == contrast] if len(tests) else tests
    evidence = data.bayes["conv_bayes_policy"] if data.bayes else tests
    min_parsable = int(data.settings.get("policy", {}).get("min_parsable", 0))
    rows = []
    for v in verdicts.sort_values("system").itertuples() if len(verdicts) else []:
        condition, interval = verdict_cells(v, evidence, tests, min_parsable)
        row = {
            "system": _text(v.system), "verdict": str(v.verdict),
            "verdict_label": VERDICT_LABELS.get(str(v.verdict), _text(v.verdict)),
            "condition": _text(condition), "interval": _text(interval),
            "p_flag": fmt_num(v.p_flag, 2) if data.bayes else "–",
            "p_pass": fmt_num(v.p_pass, 2) if data.bayes else "–",
            "reason": _text(v.reason), "freq": "",
        }  # fmt: skip
        if (
            (data.bayes or data.gate_missed is not None)
            and freq_by is not None
            and (v.system in freq_by.index)
        ):
            row["freq"] = _text(freq_by.loc[v.system, "verdict"])
        rows.append(row)
    counts = {k: sum(r["verdict"] == k for r in rows) for k in VERDICT_LABELS}
    source = (
        "the Bayesian posterior (hierarchical model, gated on convergence)"
        if data.bayes
        else "a Bayesian fit that missed its convergence gate: every verdict inconclusive"
        if data.gate_missed is not None
        else "one-sample t-tests and cross-benchmark consistency"
    )
    return {"rows": rows, "counts": counts, "n": len(rows), "bayes": bool(data.bayes),
            "source": source, "bayes_note": data.bayes_note}  # fmt: skip


def _forest_rows(data: ConvReportData, contrast: str) -> pd.DataFrame:
    """Estimate, interval and significance per (system, condition, benchmark)."""
    cols = ["system", "condition", "benchmark", "estimate", "low", "high", "significant"]
    if data.bayes:
        t = data.bayes["conv_bayes_contrasts"]
        t = t[t["contrast"] == contrast]
        est, low, high = t["mean"], t["lower"], t["upper"]
        sig = (low > 0) | (high < 0)
    else:
        t = data.tables.get("conv_tests", pd.DataFrame())
        if t.empty:
            return pd.DataFrame(columns=cols)
        t = t[t["contrast"] == contrast]
        alpha = float(data.settings.get("alpha", 0.05))
        half = stats.t.ppf(1 - alpha, t["df"]) * t["sd"] / np.sqrt(t["n_units"].clip(lower=1))
        est, low, high, sig = t["mean"], t["mean"] - half, t["mean"] + half, t["significant"]
    cond = [condition_label(*k) for k in t[["demographic", "reference", "instantiation"]].values]
    return pd.DataFrame({"system": t["system"].astype(str).to_numpy(), "condition": cond,
                         "benchmark": t["benchmark"].to_numpy(), "estimate": est.to_numpy(float),
                         "low": low.to_numpy(float), "high": high.to_numpy(float),
                         "significant": sig.to_numpy(bool)}, columns=cols)  # fmt: skip


def _figures(data: ConvReportData, delta: float) -> dict[str, Any]:
    from markupsafe import Markup

    rates = data.tables.get("conv_shift_rates", pd.DataFrame())
    systems = sorted(set(rates["system"].astype(str))) if len(rates) else []
    rate_figs = []
    for i, system in enumerate(systems[:MAX_RATE_FIGURES]):
        svg = figs.conv_rates_plot(rates, system)
        if svg:
            rate_figs.append(
                {"id": f"fig-conv-rates-{i + 1}", "system": system, "svg": Markup(svg)}
            )
    forests = []
    for i, contrast in enumerate(CONTRASTS):
        name = CONTRAST_NAMES[contrast]
        svg = figs.conv_forest_plot(_forest_rows(data, contrast), delta=delta, title=name)
        if svg:
            forests.append({"id": f"fig-conv-forest-{i + 1}", "name": name, "svg": Markup(svg)})
    return {"rates": rate_figs, "more_systems": max(len(systems) - MAX_RATE_FIGURES, 0),
            "forests": forests}  # fmt: skip


def conv_report_context(data: ConvReportData) -> dict[str, Any]:
    """Everything the conversation templates render, formatted (untrusted text stays text)."""
    policy = _policy(data)
    return {
        "analysis_id": data.analysis_id,
        "data_fingerprint": data.data_fingerprint,
        "analysis_created_at": _date(data.analysis_created_at),
        "schema_version": data.schema_version,
        "policy": policy,
        "summary": _summary(data),
        "figures": _figures(data, float(data.settings.get("delta", 0.05))),
        "consistency": consistency_context(data),
        "limitation_units": limitation_text(
            data_scope(data.tables, data.settings, data.counted or {})
        ),
        "provenance": provenance_rows(data),  # type: ignore[arg-type]
        "versions": [{"package": _text(k), "version": _text(v)} for k, v in data.versions.items()],
        "signoffs": signoff_rows(data.signoffs),
        "signed_report": None,
        "changes": change_rows(data.changes),  # the shared "what changed" rows (reanalyze)
        "changes_gap_label": "estimate", "changes_gap_unit": "",
        "changes_gap_note": "The estimate is the deciding condition's contrast, mean over "
        "benchmarks of the unit means; its interval is the verdict's. ",
    }  # fmt: skip
