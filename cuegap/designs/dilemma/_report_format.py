"""Formatters of the dilemma design's report: its tables, headline rows and condition names."""

from __future__ import annotations

import pandas as pd

from cuegap.designs.dilemma._report import ReportData


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
