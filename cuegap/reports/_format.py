"""Small formatters and table lookups shared by the report's context builders."""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from cuegap.reports._build import ReportData


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


#: How conditions are named in report text (the paper's spelling).
CONDITION_NAMES = {
    "neutral": "Neutral",
    "direct": "Direct",
    "puzzled": "Puzzled",
    "named": "Named",
    "formal_named": "FormalNamed",
    "explicit": "Explicit",
    "implicit": "Implicit",
    "control": "Control",
}


def _display(cond: tuple[str, str | None] | list) -> str:
    """A compared condition as report text: "Direct", "Puzzled" (the paper's Puzzled is
    Puzzled-hard), "Puzzled-easy", "Named"."""
    name, diff = cond[0], cond[1] if len(cond) > 1 else None
    base = CONDITION_NAMES.get(str(name), str(name))
    return base if diff is None or diff == "hard" else f"{base}-{diff}"
