"""Page 1 of every design's report: one row per stored verdict record.

The rows come from the ``verdict_records`` table the analysis stored
(:mod:`cuegap.designs._verdicts`), the same records ``cuegap verdicts`` lists and
``cuegap export verdict_records`` writes, so the report cannot disagree with them. The
template is ``partials/_verdict_page.html.j2``, shared by the four report templates. Every
value is a plain string: the record's text (system, reason, rule) is untrusted and left to
autoescape.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from cuegap.reports._format import _text
from cuegap.reports._rounding import fmt_num

#: The decisions ``report.css`` has a badge for (any other text gets the neutral one).
BADGES = ("flagged", "passed", "inconclusive", "format-sensitive")
#: Decimals of an estimate by its scale (percentage points print one, scores three).
_DECIMALS = {"pp": 1}


def _present(x: Any) -> bool:
    return x is not None and not (isinstance(x, float) and x != x) and x is not pd.NA


def _estimate(r: Any) -> str:
    digits = _DECIMALS.get(str(r.scale), 3)
    est = fmt_num(r.estimate, digits, signed=True) if _present(r.estimate) else ""
    interval = ""
    if _present(r.low) or _present(r.high):
        interval = (
            f"[{fmt_num(r.low, digits, signed=True)}, {fmt_num(r.high, digits, signed=True)}]"
        )
    text = " ".join(t for t in (est, interval) if t)
    if not text:
        return "–"
    level = f", {100 * float(r.level):g}% interval" if _present(r.level) and interval else ""
    return f"{text} {_text(r.scale)}{level}".strip()


def _method(r: Any) -> str:
    method = _text(r.method)
    if not _present(r.gate_passed) or str(r.gate_passed) == "":
        return method
    gate = str(r.gate_passed).lower() in ("true", "1")
    return f"{method}, convergence gate {'passed' if gate else 'missed'}"


def _rule(r: Any) -> str:
    rule = _text(r.rule)
    bounds = []
    if _present(r.delta):
        bounds.append(f"δ = {float(r.delta):g}")
    if _present(r.probability):
        bounds.append(f"required probability {float(r.probability):g}")
    computed = []
    if _present(r.p_flag):
        computed.append(f"P(flag) = {fmt_num(r.p_flag, 2)}")
    if _present(r.p_pass):
        computed.append(f"P(pass) = {fmt_num(r.p_pass, 2)}")
    parts = [p for p in (rule, "; ".join(bounds), "; ".join(computed)) if p]
    return " · ".join(parts)


def verdict_page(
    records: pd.DataFrame | None, analysis_id: int | None, *, note: str = ""
) -> dict[str, Any]:
    """The context of ``partials/_verdict_page.html.j2``.

    Parameters
    ----------
    records : DataFrame or None
        The stored ``verdict_records`` of the analysis whose verdicts the report prints
        (None: that analysis stored none).
    analysis_id : int or None
        That analysis.
    note : str, optional
        Why these records are the ones of record (a Bayesian fit, a missed gate).

    Returns
    -------
    dict
        ``rows`` (one per record, sorted by system), ``counts`` per decision, ``analysis``,
        ``kind``, ``design`` and ``note``.
    """
    rows: list[dict[str, str]] = []
    frame = records if records is not None else pd.DataFrame()
    for r in frame.sort_values("system").itertuples() if len(frame) else []:
        rows.append({
            "system": _text(r.system), "decision": _text(r.decision),
            "badge": str(r.decision) if r.decision in BADGES else "unknown",
            "compared": _text(r.compared), "estimate": _estimate(r),
            "method": _method(r), "rule": _rule(r), "reason": _text(r.reason),
        })  # fmt: skip
    counts: dict[str, int] = {}
    for row in rows:
        counts[row["decision"]] = counts.get(row["decision"], 0) + 1
    first = frame.iloc[0] if len(frame) else None
    return {
        "rows": rows,
        "counts": sorted(counts.items()),
        "analysis": analysis_id,
        "kind": _text(first["kind"]) if first is not None else "",
        "design": _text(first["design"]) if first is not None else "",
        "stored": records is not None,
        "note": note,
    }


def verdict_page_context(data: Any) -> dict[str, Any]:
    """:func:`verdict_page` of a design's report data (its ``verdict_page`` records, of
    ``verdict_page_analysis``; the report's own analysis when that is None)."""
    of = getattr(data, "verdict_page_analysis", None) or data.analysis_id
    note = (
        f"they are those of analysis {of}, the Bayesian fit of the same data and settings"
        if of != data.analysis_id
        else ""
    )
    return verdict_page(getattr(data, "verdict_page", None), of, note=note)
