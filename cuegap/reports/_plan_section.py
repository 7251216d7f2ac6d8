""" "What it would take to decide": the report section after the verdicts, for every design.

It reads the stored ``plan`` table that ``cuegap plan`` wrote (the newest plan analysis
with rows of the report's design; :func:`cuegap.reports.load_plan`) and never plans: a
report only reads. When no plan is stored, the section names the command that stores one.
The template is ``partials/_plan_section.html.j2``; every value is a plain string, and the
stored text (system, contrast, size unit) is left to autoescape.
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from cuegap.models import answer_line
from cuegap.reports._format import _text
from cuegap.reports._rounding import fmt_num

__all__ = ["plan_section"]


def _size(x: Any) -> str:
    try:
        value = float(x)
    except (TypeError, ValueError):
        return "–"
    return f"{value:,.0f}" if math.isfinite(value) else "not reachable"


def _answer(row: pd.Series) -> str:
    try:
        return answer_line(row)
    except (KeyError, TypeError, ValueError):  # a plan stored by another version
        return ""


def plan_section(
    rows: pd.DataFrame | None, *, design: str, plan_analysis: int | None = None
) -> dict[str, Any]:
    """The context of ``partials/_plan_section.html.j2``.

    Parameters
    ----------
    rows : DataFrame or None
        The stored ``plan`` rows of the report's design (None or empty: none stored).
    design : str
        The report's design, for the command that stores a plan.
    plan_analysis : int, optional
        The plan analysis the rows come from.

    Returns
    -------
    dict
        ``rows`` (strings per plan row: system, contrast, decision, now, p_decide, needed,
        unit, mde, answer, source), ``analysis``, ``command`` and ``undecidable`` (how many
        rows no realistic size decides).
    """
    command = f"cuegap plan --design {design}"
    if rows is None or rows.empty:
        return {"rows": [], "analysis": plan_analysis, "command": command, "undecidable": 0}
    out = []
    for _, r in rows.iterrows():
        out.append(
            {
                "system": _text(r.get("system")),
                "contrast": _text(r.get("contrast")),
                "decision": _text(r.get("decision")),
                "now": _size(r.get("current_size")),
                "p_decide": fmt_num(r.get("p_decide"), 2),
                "needed": _size(r.get("required_size")),
                "unit": _text(r.get("size_unit")),
                "mde": fmt_num(r.get("mde"), 3),
                "answer": _answer(r),
                "source": _text(r.get("source")),
            }
        )
    need = pd.to_numeric(rows.get("required_size"), errors="coerce")
    return {
        "rows": out,
        "analysis": plan_analysis,
        "command": command,
        "undecidable": int(need.isna().sum()),
    }
