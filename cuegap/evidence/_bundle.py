"""The evidence bundle: what a store holds behind its verdicts, as one JSON document.

Read in one snapshot of the store (:func:`cuegap.schema.read_snapshot`): the stored
analyses with their content digests, data fingerprints and policies; the verdict records
of the analyses of record (each design's :meth:`~cuegap.designs.Design.current_analyses`,
and the analysis each registered report shows, :meth:`~cuegap.designs.Design.shown_analysis`);
the report registry with each file's SHA-256; the sign-off chain; the ledger head. The
bundle's JSON Schema is ``schemas/evidence-bundle.schema.json`` beside this module.
"""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

import pandas as pd
from sqlalchemy import func, select
from sqlalchemy.engine import Connection, Engine

from cuegap.audit import table_from_json
from cuegap.compliance import SignOffRecord, file_sha256
from cuegap.designs import DESIGNS, designs_in_store, for_kind, policy_of
from cuegap.schema import (
    Analysis,
    AnalysisTable,
    LedgerEntry,
    Report,
    SignOff,
    current_revision,
    ledger,
    read_snapshot,
)

#: The version of the bundle's layout (``bundle_version``); the schema's ``$id`` names it.
BUNDLE_VERSION = 1
SCHEMA_FILE = Path(__file__).parent / "schemas" / "evidence-bundle.schema.json"


def evidence_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) every evidence bundle validates against."""
    return json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))


def _plain(value: Any) -> Any:
    """A JSON-ready value: NaN and missing become null, numpy scalars Python numbers."""
    if value is None or value is pd.NA or value is pd.NaT:
        return None
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):
        value = value.item()  # numpy scalar
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, datetime):
        return value.isoformat()
    return value


def _json(value: Any) -> Any:
    return json.loads(value) if isinstance(value, str) else value


def _of_record(engine: Engine) -> tuple[list[int], dict[int, int]]:
    """The current analyses of every design the store holds, and for each registered
    report the analysis whose verdicts it shows (report id -> analysis id)."""
    current: list[int] = []
    for name in designs_in_store(engine):
        current += [a for a in DESIGNS[name].current_analyses(engine) if a not in current]
    shown: dict[int, int] = {}
    with engine.connect() as conn:
        reports = conn.execute(
            select(Report.id, Analysis.id, Analysis.kind).join(
                Analysis, Analysis.id == Report.analysis_id
            )
        ).fetchall()
    for report_id, analysis_id, kind in reports:
        try:
            design = for_kind(kind)
        except ValueError:  # a kind no registered design stores (a plug-in removed)
            shown[int(report_id)] = int(analysis_id)
            continue
        shown[int(report_id)] = design.shown_analysis(engine, int(analysis_id))
    return current, shown


def _analyses(conn: Connection, current: list[int], shown: dict[int, int]) -> list[dict]:
    rows = conn.execute(
        select(
            Analysis.id, Analysis.kind, Analysis.status, Analysis.created_at,
            Analysis.data_fingerprint, Analysis.system_fingerprints, Analysis.settings,
            Analysis.content_digest,
        ).order_by(Analysis.id)
    ).fetchall()  # fmt: skip
    out = []
    for r in rows:
        settings = _json(r.settings) or {}
        try:
            design: str | None = for_kind(r.kind).name
        except ValueError:
            design = None
        out.append(
            {
                "id": int(r.id),
                "kind": r.kind,
                "design": design,
                "status": r.status,
                "created_at": _plain(r.created_at),
                "data_fingerprint": r.data_fingerprint,
                "system_fingerprints": dict(_json(r.system_fingerprints) or {}),
                "content_digest": r.content_digest,
                "policy": policy_of(settings) if "policy" in settings else None,
                "current": int(r.id) in current,
                "shown_by_reports": sorted(k for k, v in shown.items() if v == r.id),
            }
        )
    return out


def _records(conn: Connection, analysis_ids: list[int]) -> list[dict]:
    out: list[dict] = []
    for analysis_id in sorted(analysis_ids):
        text = conn.execute(
            select(AnalysisTable.data).where(
                AnalysisTable.analysis_id == analysis_id, AnalysisTable.name == "verdict_records"
            )
        ).scalar()
        if text is None:  # stored by an older cuegap, or no verdicts
            continue
        frame = table_from_json(text)
        for row in frame.to_dict(orient="records"):
            out.append({"analysis_id": analysis_id, **{k: _plain(v) for k, v in row.items()}})
    return out


def _file_state(path: str, sha256: str) -> str:
    p = Path(path)
    if not p.is_file():
        return "missing"
    return "matches" if file_sha256(p) == sha256 else "modified"


def _reports(conn: Connection, shown: dict[int, int]) -> list[dict]:
    rows = conn.execute(
        select(
            Report.id, Report.version, Report.format, Report.path, Report.sha256,
            Report.analysis_id, Report.analysis_digest, Report.data_fingerprint,
            Report.supersedes_id, Report.created_at,
        ).order_by(Report.id)
    ).fetchall()  # fmt: skip
    return [
        {
            "id": int(r.id),
            "version": int(r.version),
            "format": r.format,
            "file_name": Path(r.path).name,
            "path": r.path,
            "sha256": r.sha256,
            "analysis_id": int(r.analysis_id),
            "shown_analysis_id": shown.get(int(r.id), int(r.analysis_id)),
            "analysis_digest": r.analysis_digest,
            "data_fingerprint": r.data_fingerprint,
            "supersedes_id": r.supersedes_id,
            "created_at": _plain(r.created_at),
            "file": _file_state(r.path, r.sha256),
        }
        for r in rows
    ]


def _signoffs(conn: Connection) -> list[dict]:
    cols = [getattr(SignOff, k) for k in SignOffRecord.__slots__]
    rows = conn.execute(select(*cols).order_by(SignOff.seq)).fetchall()
    return [dict(zip(SignOffRecord.__slots__, map(_plain, r), strict=True)) for r in rows]


def evidence_bundle(engine: Engine, *, now: datetime | None = None) -> dict[str, Any]:
    """The evidence bundle of a store (see the module docstring), as a JSON-ready dict.

    Parameters
    ----------
    engine : Engine
        An initialised store.
    now : datetime, optional
        The time written as ``generated_at`` (default: now).

    Returns
    -------
    dict
        Valid under :func:`evidence_schema`.
    """
    current, shown = _of_record(engine)
    revision = current_revision(engine)
    with read_snapshot(engine) as conn:
        analyses = _analyses(conn, current, shown)
        records = _records(conn, [*current, *(a for a in shown.values() if a not in current)])
        top = ledger.head(conn)
        entries = conn.execute(select(func.count()).select_from(LedgerEntry)).scalar()
        reports = _reports(conn, shown)
        signed = _signoffs(conn)
    return {
        "bundle_version": BUNDLE_VERSION,
        "generated_at": (now or datetime.now(UTC)).astimezone(UTC).isoformat(timespec="seconds"),
        "cuegap_version": metadata.version("cuegap"),
        "store": {"backend": engine.dialect.name, "schema_revision": revision},
        "designs": designs_in_store(engine),
        "ledger": {
            "entries": int(entries or 0),
            "head": None
            if top is None
            else {
                "seq": int(top.seq),
                "kind": top.kind,
                "ref_id": top.ref_id,
                "entry_hash": top.entry_hash,
                "recorded_at": top.recorded_at,
            },
        },
        "analyses": analyses,
        "verdict_records": records,
        "reports": reports,
        "signoffs": signed,
    }
