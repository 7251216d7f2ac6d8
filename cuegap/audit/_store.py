"""Storing, finding and loading analyses: their result tables, artifacts and digests.

Shared by every study design: an analysis is a kind, a status, the data fingerprint and
settings it was computed with, and its named result tables; the store seals each one in its
ledger. Reads and writes the database through :mod:`cuegap.schema`; computes nothing.

Listing and reading stored tables is in :mod:`cuegap.audit._catalog`, their serialisation
in :mod:`cuegap.audit._table_codec`; every name stays importable from here.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib import metadata
from typing import Any

import pandas as pd
from sqlalchemy import select
from sqlalchemy.engine import Engine

from cuegap import models
from cuegap.audit._catalog import (
    analysis_kinds,
    export_table,
    find_table,
    list_analyses,
    list_tables,
    load_table,
)
from cuegap.audit._table_codec import frame_digest, table_from_json, table_to_json
from cuegap.schema import Analysis, AnalysisArtifact, AnalysisTable, latest_analysis_id, ledger


@dataclass(slots=True)
class AnalysisResult:
    """A stored analysis and its tables."""

    id: int
    kind: str
    status: str
    data_fingerprint: str
    created_at: datetime
    tables: dict[str, pd.DataFrame]
    reused: bool = False
    settings: dict[str, Any] | None = None  # as stored, conditions resolved


def _versions() -> dict[str, str]:
    out = {}
    for pkg in (
        "cuegap",
        "pandas",
        "numpy",
        "scipy",
        "statsmodels",
        "sqlalchemy",
        "pymc",
        "pytensor",
        "arviz",
        "nutpie",
    ):
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:  # pragma: no cover - not installed
            out[pkg] = "unknown"
    return out


def _settings_key(settings: Mapping[str, Any]) -> str:
    return json.dumps(settings, sort_keys=True, default=str)


#: How a stored posterior is typed among an analysis's artifacts.
POSTERIOR_MEDIA_TYPE = "application/x-netcdf"


def posterior_artifacts(posteriors: Mapping[str, Any]) -> dict[str, tuple[bytes, str]]:
    """Posteriors as stored artifacts: name -> (NetCDF-4 bytes, media type).

    Parameters
    ----------
    posteriors : mapping of str to arviz.InferenceData
        ``"idata"`` for a fit's one posterior; ``"idata:<part>"`` for a design that fits
        several models in one analysis (the prompt-variance design: one per metric).
    """
    bad = [n for n in posteriors if n != "idata" and not n.startswith("idata:")]
    if bad:
        raise ValueError(f"a posterior's name is 'idata' or 'idata:<part>', not {bad[0]!r}")
    return {n: (models.idata_to_bytes(i), POSTERIOR_MEDIA_TYPE) for n, i in posteriors.items()}


def load_posteriors(engine: Engine, analysis_id: int) -> dict[str, Any]:
    """Every posterior an analysis stored, by name (empty when it stored none).

    Raises
    ------
    ValueError
        When a stored posterior does not match its SHA-256.
    """
    stmt = select(AnalysisArtifact.name, AnalysisArtifact.content, AnalysisArtifact.sha256).where(
        AnalysisArtifact.analysis_id == analysis_id,
        AnalysisArtifact.media_type == POSTERIOR_MEDIA_TYPE,
    )
    out: dict[str, Any] = {}
    with engine.connect() as conn:
        for row in conn.execute(stmt.order_by(AnalysisArtifact.name)):
            if hashlib.sha256(row.content).hexdigest() != row.sha256:
                raise ValueError(f"the stored posterior {row.name!r} does not match its SHA-256")
            out[row.name] = models.idata_from_bytes(row.content)
    return out


def save_analysis(
    engine: Engine,
    *,
    kind: str,
    status: str,
    data_fingerprint: str,
    system_fingerprints: dict[str, str],
    settings: dict[str, Any],
    tables: Mapping[str, pd.DataFrame],
    descriptions: Mapping[str, str] | None = None,
    message: str | None = None,
    artifacts: Mapping[str, tuple[bytes, str]] | None = None,
    posteriors: Mapping[str, Any] | None = None,
) -> int:
    """Store an analysis, its tables and artifacts in one transaction; returns its id.

    ``artifacts`` maps a name to ``(content, media_type)``. ``posteriors`` maps a name to
    an ArviZ ``InferenceData``: every design's Bayesian fit stores its posterior this way,
    as NetCDF-4 (:func:`cuegap.models.idata_to_bytes`), read back by :func:`load_idata`
    (``"idata"``, a fit's one posterior) or :func:`load_posteriors` (all of them).

    The analysis is sealed in the store's ledger in the same transaction (its content
    digest covers settings, tables and artifacts), so that
    :func:`cuegap.compliance.verify` notices any later edit.
    """
    descriptions = descriptions or {}
    if posteriors:
        artifacts = {**(artifacts or {}), **posterior_artifacts(posteriors)}
    records = _verdict_records(kind, settings, tables, status)
    if records is not None:
        tables = {**tables, "verdict_records": records}
        descriptions = {**descriptions, "verdict_records": VERDICT_RECORDS_DESCRIPTION}
    now = datetime.now(UTC)
    with engine.begin() as conn:
        analysis_id = conn.execute(
            Analysis.__table__.insert().values(
                kind=kind,
                status=status,
                data_fingerprint=data_fingerprint,
                system_fingerprints=system_fingerprints,
                settings=settings,
                versions=_versions(),
                message=message,
                created_at=now,
            )
        ).inserted_primary_key[0]
        rows = [
            {
                "analysis_id": analysis_id,
                "name": name,
                "description": descriptions.get(name),
                "n_rows": len(df),
                "data": table_to_json(df),
            }
            for name, df in tables.items()
        ]
        if rows:
            conn.execute(AnalysisTable.__table__.insert(), rows)
        for name, (content, media_type) in (artifacts or {}).items():
            _insert_artifact(conn, analysis_id, name, content, media_type)
        entry = ledger.record(conn, "analysis", int(analysis_id))
        if entry is not None:
            conn.execute(
                Analysis.__table__.update()
                .where(Analysis.__table__.c.id == analysis_id)
                .values(content_digest=entry.digest)
            )
    return int(analysis_id)


VERDICT_RECORDS_DESCRIPTION = (
    "One row per verdict in the columns every design shares: system, design, what was "
    "compared, estimate and interval with its level, method and gate, decision, the rule "
    "with its δ and probability, and the reason"
)


def _verdict_records(
    kind: str, settings: Mapping[str, Any], tables: Mapping[str, pd.DataFrame], status: str
) -> pd.DataFrame | None:
    """The verdict records of an analysis that stores a ``verdicts`` table, from its design
    (:mod:`cuegap.designs`); None for any other analysis."""
    if "verdicts" not in tables or "verdict_records" in tables:
        return None
    from cuegap.designs import for_kind

    try:
        design = for_kind(kind)
    except ValueError:  # a kind no registered design stores
        return None
    return design.verdict_records(kind, settings, tables, status)


def find_analysis(
    engine: Engine, *, kind: str, data_fingerprint: str, settings: dict[str, Any]
) -> int | None:
    """The newest stored analysis of ``kind`` with this fingerprint and these settings."""
    stmt = (
        select(Analysis.id, Analysis.settings)
        .where(Analysis.kind == kind, Analysis.data_fingerprint == data_fingerprint)
        .order_by(Analysis.id.desc())
    )
    want = _settings_key(settings)
    with engine.connect() as conn:
        for row in conn.execute(stmt):
            stored = row.settings if not isinstance(row.settings, str) else json.loads(row.settings)
            if _settings_key(stored) == want:
                return int(row.id)
    return None


def _insert_artifact(
    conn: Any, analysis_id: int, name: str, content: bytes, media_type: str
) -> None:
    """Store a binary artifact of an analysis with its SHA-256 (checked by
    :func:`load_idata`; covered by the analysis's ledger digest)."""
    conn.execute(
        AnalysisArtifact.__table__.insert().values(
            analysis_id=analysis_id,
            name=name,
            media_type=media_type,
            sha256=hashlib.sha256(content).hexdigest(),
            content=content,
        )
    )


def load_idata(engine: Engine, analysis_id: int | None = None) -> Any:
    """The stored InferenceData of a Bayesian analysis (default: the newest).

    Raises
    ------
    KeyError
        When no Bayesian analysis with an InferenceData is stored.
    """
    stmt = select(AnalysisArtifact.content, AnalysisArtifact.sha256).where(
        AnalysisArtifact.name == "idata"
    )
    if analysis_id is not None:
        stmt = stmt.where(AnalysisArtifact.analysis_id == analysis_id)
    stmt = stmt.order_by(AnalysisArtifact.analysis_id.desc()).limit(1)
    with engine.connect() as conn:
        row = conn.execute(stmt).first()
    if row is None:
        raise KeyError("no stored Bayesian fit: run cuegap analyze --bayes")
    if hashlib.sha256(row.content).hexdigest() != row.sha256:
        raise ValueError("the stored InferenceData does not match its SHA-256")
    return models.idata_from_bytes(row.content)


def _load_result(
    engine: Engine,
    analysis_id: int,
    *,
    tables: dict[str, pd.DataFrame] | None = None,
    reused: bool = False,
) -> AnalysisResult:
    with engine.connect() as conn:
        row = conn.execute(select(Analysis).where(Analysis.id == analysis_id)).one()
        if tables is None:
            stored = conn.execute(
                select(AnalysisTable.name, AnalysisTable.data).where(
                    AnalysisTable.analysis_id == analysis_id
                )
            ).fetchall()
            tables = {name: table_from_json(text) for name, text in stored}
    return AnalysisResult(
        id=analysis_id,
        kind=row.kind,
        status=row.status,
        data_fingerprint=row.data_fingerprint,
        created_at=row.created_at,
        tables=tables,
        reused=reused,
        settings=row.settings,
    )


__all__ = [
    "AnalysisResult",
    "analysis_kinds",
    "export_table",
    "find_analysis",
    "find_table",
    "frame_digest",
    "latest_analysis_id",
    "list_analyses",
    "list_tables",
    "load_idata",
    "load_posteriors",
    "load_table",
    "posterior_artifacts",
    "save_analysis",
    "table_from_json",
    "table_to_json",
]

#: Public names for the designs' analyses (``designs/<name>/_analysis*.py``).
load_result = _load_result
settings_key = _settings_key
