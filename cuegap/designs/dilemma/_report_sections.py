"""Context of the report's evidence sections: provenance (cover), data quality, diagnostics.

Like :mod:`._context`, every value leaves here as a string; untrusted text stays plain
``str`` for Jinja2's autoescape.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from cuegap.designs.dilemma._report import ReportData
from cuegap.designs.dilemma._report_format import _headline, _table
from cuegap.designs.dilemma.stats import condition_label, condition_mask
from cuegap.reports import counted_rows
from cuegap.reports import fmt_date as _date
from cuegap.reports import fmt_pct as _pct
from cuegap.reports import fmt_text as _text
from cuegap.reports import to_float as _num

EXAMPLE_CHARS = 600


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
                sub = w[condition_mask(w, cond)]
                resp = sub["responses"].sum()
                share = sub["abstained"].sum() / resp if resp else math.nan
                rate[condition_label(cond)] = _pct(share)
            total = mine["responses"].sum()
            failures = (mine["parse_failure_rate"] * mine["responses"]).sum()
            abst_rows.append(
                {
                    "system": system,
                    "explicit": rate[condition_label(s.explicit)],
                    "implicit": rate[condition_label(s.implicit)],
                    "responses": f"{int(total):,}",
                    "parse_failures": _pct(failures / total if total else math.nan),
                }
            )
    rec = _table(data, "recovery")
    rec_rows = []
    if len(rec):
        rec = _headline(rec, data)
        rec = rec[condition_mask(rec, s.implicit)].sort_values("system")
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
        "explicit": condition_label(s.explicit),
        "implicit": condition_label(s.implicit),
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
        if isinstance(m, dict) and "sha256" in m and m["sha256"] not in mappings:
            mappings[m.get("sha256")] = {"label": _mapping_label(m), "toml": _text(m.get("toml"))}
    settings = [
        ("explicit cue (condition)", condition_label(s.explicit)),
        ("implicit cue (condition)", condition_label(s.implicit)),
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
        "counted": counted_rows(p.batches),  # files counted outside the store
        "mappings": list(mappings.values()),
        "settings": settings,
        "policy_toml": data.policy.to_toml(("verdict", "data")),
        "versions": list(data.versions.items()),
        "responses": f"{data.store.responses:,}",
        "explicit": condition_label(s.explicit),
        "implicit": condition_label(s.implicit),
        "consequences_label": "with consequences" if s.consequences else "without consequences",
    }


def _mapping_label(m: Any) -> str:
    """ "name · sha256 prefix" of an ingest pass's runner mapping, "–" without one."""
    if not isinstance(m, dict) or "sha256" not in m:  # none, or a counted file's engine
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
