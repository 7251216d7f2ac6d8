"""Small formatters shared by every design's report context: numbers, dates, text, p-values,
provenance and sign-off rows (every value leaves as text)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from cuegap.schema import counted_tally


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


def provenance_rows(data: Any) -> dict[str, list[dict[str, str]]]:
    """The provenance rows: item banks and ingest batches (hashes, counts, dates).

    Parameters
    ----------
    data : Any
        A design's report data with a ``provenance`` holding the ``banks``, ``batches``
        and ``quarantine`` frames of :func:`cuegap.schema.provenance` (or its design's).
    """
    p = data.provenance
    runners = _runners(getattr(p, "runs", None))
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
                **runners.get(_text(r.sha256), {"runner": "", "started": ""}),
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
        "counted": counted_rows(p.batches),
    }


def _runners(runs: pd.DataFrame | None) -> dict[str, dict[str, str]]:
    """Each response file's runner (with its version) and run start, by the file's SHA-256.

    Frames without runs (a design's own provenance) give none: the columns stay empty.
    """
    if runs is None or runs.empty or "runner" not in runs:
        return {}
    out: dict[str, dict[str, str]] = {}
    for r in runs.itertuples():
        version = _text(getattr(r, "runner_version", None))
        runner = _text(r.runner) + (f" {version}" if version else "")
        started = "–" if pd.isna(r.started_at) else _date(r.started_at)
        out.setdefault(_text(r.sha256), {"runner": runner, "started": started})
    return out


def counted_rows(batches: pd.DataFrame) -> list[dict[str, str]]:
    """The files counted outside the store (``cuegap count``), for the provenance section.

    Parameters
    ----------
    batches : DataFrame
        The ``batches`` frame of :func:`cuegap.schema.provenance` (with ``mapping``).

    Returns
    -------
    list of dict
        Per counted file, in the frame's order: ``source``, ``sha256``, ``bytes``,
        ``engine`` (name and version), ``tally``, ``read``, ``counted``, ``duplicate``,
        ``quarantined`` and ``kept`` (quarantined lines kept in the store); empty when
        every file was ingested.
    """
    rows = []
    for r in batches.itertuples():
        mapping = getattr(r, "mapping", None)
        tally = counted_tally(mapping)
        if tally is None:
            continue
        size = mapping.get("size")
        rows.append(
            {
                "source": _text(r.source_path),
                "sha256": _text(r.sha256),
                "bytes": "–" if size is None else f"{int(size):,}",
                "engine": " ".join(
                    _text(mapping.get(k)) for k in ("engine", "engine_version") if mapping.get(k)
                ),
                "tally": _text(tally),
                "read": f"{int(r.lines_read):,}",
                "counted": f"{int(r.stored):,}",
                "duplicate": f"{int(r.duplicate):,}",
                "quarantined": f"{int(r.quarantined):,}",
                "kept": f"{int(mapping.get('quarantine_kept') or 0):,}",
            }
        )
    return rows


def signoff_rows(records: Sequence[Mapping[str, Any]]) -> list[dict[str, str]]:
    """Sign-off records as the sign-off block prints them (every value is text)."""
    return [
        {k: _text(s.get(k)) for k in ("reviewer", "decision", "signed_at", "comment")}
        | {
            "report_sha256": _text(s.get("report_sha256") or s.get("report_hash")),
            "record_hash": _text(s.get("record_hash")),
            "key_id": _text(s.get("key_id")) if s.get("key_id") else "",
        }
        for s in records
    ]
