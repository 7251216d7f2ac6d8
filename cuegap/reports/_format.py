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


def provenance_rows(data: Any) -> dict[str, list[dict[str, str]]]:
    """The provenance rows: item banks and ingest batches (hashes, counts, dates).

    Parameters
    ----------
    data : Any
        A design's report data with a ``provenance`` holding the ``banks``, ``batches``
        and ``quarantine`` frames of :func:`cuegap.schema.provenance` (or its design's).
    """
    p = data.provenance
    return {
        "banks": [
            {
                "name": _text(r.name),
                "source": _text(r.source_path),
                "sha256": _text(r.sha256),
                "ingested": _date(r.ingested_at),
            }
            for r in p.banks.itertuples()
        ],
        "batches": [
            {
                "source": _text(r.source_path),
                "sha256": _text(r.sha256),
                "format": _text(r.format),
                "read": f"{int(r.lines_read):,}",
                "stored": f"{int(r.stored):,}",
                "duplicate": f"{int(r.duplicate):,}",
                "quarantined": f"{int(r.quarantined):,}",
            }
            for r in p.batches.itertuples()
        ],
        "quarantine": [
            {
                "source": _text(r.source_path),
                "reason": _text(r.reason),
                "lines": f"{int(r.lines):,}",
            }
            for r in p.quarantine.itertuples()
        ],
    }
