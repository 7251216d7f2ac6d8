"""Storing, finding and loading analyses: their result tables, artifacts and digests.

Shared by every study design: an analysis is a kind, a status, the data fingerprint and
settings it was computed with, and its named result tables; the store seals each one in its
ledger. Reads and writes the database through :mod:`cuegap.schema`; computes nothing.
"""

from __future__ import annotations

import hashlib
import io
import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from sqlalchemy import select
from sqlalchemy.engine import Engine

from cuegap import models
from cuegap.models import condition_label
from cuegap.schema import Analysis, AnalysisArtifact, AnalysisTable, ledger


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


def _frame_digest(df: pd.DataFrame) -> str:
    """Order-independent digest of a table's content (rows hashed, sorted, hashed again)."""
    cols = sorted(df.columns)
    h = hashlib.sha256("\x1e".join(cols).encode())
    if not df.empty:
        rows = pd.util.hash_pandas_object(df[cols].astype(object), index=False).to_numpy()
        h.update(np.sort(rows).tobytes())
    return h.hexdigest()


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


def table_to_json(df: pd.DataFrame) -> str:
    """Serialise a result table losslessly enough for storage (pandas ``orient="table"``)."""
    return df.to_json(orient="table", index=False, double_precision=15)


def table_from_json(text: str) -> pd.DataFrame:
    """Inverse of :func:`table_to_json`."""
    return pd.read_json(io.StringIO(text), orient="table")


def _settings_key(settings: Mapping[str, Any]) -> str:
    return json.dumps(settings, sort_keys=True, default=str)


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
) -> int:
    """Store an analysis, its tables and artifacts in one transaction; returns its id.

    ``artifacts`` maps a name to ``(content, media_type)``. The analysis is sealed in the
    store's ledger in the same transaction (its content digest covers settings, tables and
    artifacts), so that :func:`cuegap.compliance.verify` notices any later edit.
    """
    descriptions = descriptions or {}
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


#: Kinds of stored analyses: the dilemma design's and the QA design's.
ANALYSIS_KINDS = ("frequentist", "bayesian", "qa", "qa_bayesian")


def list_analyses(engine: Engine) -> pd.DataFrame:
    """Every stored analysis, newest first, with what it compared and how.

    Returns
    -------
    DataFrame
        ``id``, ``kind``, ``status``, ``created_at``, ``compared`` ("direct vs
        puzzled-hard"; "explicit vs implicit (zero-shot)" for the QA design), ``consequences``
        (with / without), ``delta_pp`` (the dilemma policy's δ), ``delta`` (the δ the
        analysis used, with its unit),
        ``sampling`` ("1000 boot" replicates, or "4×1000 draws" of a Bayesian fit) and
        ``data_fingerprint``.
    """
    stmt = select(
        Analysis.id,
        Analysis.kind,
        Analysis.status,
        Analysis.created_at,
        Analysis.settings,
        Analysis.data_fingerprint,
    ).order_by(Analysis.id.desc())
    rows = []
    with engine.connect() as conn:
        for r in conn.execute(stmt):
            st = r.settings if not isinstance(r.settings, str) else json.loads(r.settings)
            st = st or {}
            pair = [st.get("explicit"), st.get("implicit")]
            compared = " vs ".join(condition_label(tuple(c)) for c in pair) if all(pair) else ""
            qa = st.get("design") == "qa"
            if qa:
                compared = f"explicit vs implicit ({st.get('strategy', 'zero-shot')})"
            bayes = st.get("bayes") or {}
            sampling = (
                f"{bayes.get('chains')}×{bayes.get('draws')} draws"
                if bayes
                else f"{st.get('n_boot', 0)} boot"
            )
            rows.append(
                {
                    "id": int(r.id),
                    "kind": r.kind,
                    "status": r.status,
                    "created_at": r.created_at,
                    "compared": compared,
                    "consequences": ""
                    if qa
                    else ("with" if st.get("consequences", True) else "without"),
                    "delta_pp": None if qa else (st.get("policy") or {}).get("delta_pp"),
                    "delta": f"{st.get('delta'):g} (bias score)"
                    if qa
                    else f"{(st.get('policy') or {}).get('delta_pp', 2.0):g} pp",
                    "sampling": sampling,
                    "data_fingerprint": r.data_fingerprint,
                }
            )
    columns = [
        "id",
        "kind",
        "status",
        "created_at",
        "compared",
        "consequences",
        "delta_pp",
        "delta",
        "sampling",
        "data_fingerprint",
    ]
    return pd.DataFrame(rows, columns=columns)


def latest_analysis_id(engine: Engine, kind: str | None = None) -> int | None:
    """Id of the newest stored analysis (of ``kind``, when given), or None."""
    stmt = select(Analysis.id).order_by(Analysis.id.desc()).limit(1)
    if kind is not None:
        stmt = stmt.where(Analysis.kind == kind)
    with engine.connect() as conn:
        found = conn.execute(stmt).scalar()
    return None if found is None else int(found)


def list_tables(engine: Engine, analysis_id: int | None = None) -> pd.DataFrame:
    """Names, kinds, row counts and descriptions of the stored tables of an analysis.

    Parameters
    ----------
    analysis_id : int, optional
        Defaults to the newest table of each name and analysis kind over all analyses (a
        Bayesian analysis stores its own ``verdicts`` beside the frequentist one).
    """
    stmt = select(
        AnalysisTable.analysis_id,
        Analysis.kind,
        AnalysisTable.name,
        AnalysisTable.n_rows,
        AnalysisTable.description,
    ).join(Analysis, Analysis.id == AnalysisTable.analysis_id)
    if analysis_id is not None:
        stmt = stmt.where(AnalysisTable.analysis_id == analysis_id)
    with engine.connect() as conn:
        df = pd.DataFrame(
            conn.execute(stmt.order_by(AnalysisTable.analysis_id.desc())).fetchall(),
            columns=["analysis_id", "kind", "name", "rows", "description"],
        )
    df = df.drop_duplicates(["name", "kind"])
    return df.sort_values(["name", "kind"]).reset_index(drop=True)


def find_table(
    engine: Engine, name: str, analysis_id: int | None = None, kind: str | None = None
) -> tuple[int, str]:
    """Which stored table :func:`load_table` reads: (analysis id, analysis kind).

    Parameters
    ----------
    name : str
        Table name (see :data:`TABLES` and :func:`list_tables`).
    analysis_id : int, optional
        Which analysis; by default the newest one (of ``kind``) that has this table.
    kind : {"frequentist", "bayesian", "qa", "qa_bayesian"}, optional
        Only analyses of this kind.

    Raises
    ------
    KeyError
        When no such table is stored; the message lists the stored ones.
    ValueError
        For an unknown ``kind``.
    """
    if kind is not None and kind not in ANALYSIS_KINDS:
        raise ValueError(f"kind must be one of {', '.join(ANALYSIS_KINDS)}, but got {kind!r}")
    stmt = (
        select(AnalysisTable.analysis_id, Analysis.kind)
        .join(Analysis, Analysis.id == AnalysisTable.analysis_id)
        .where(AnalysisTable.name == name)
    )
    if analysis_id is not None:
        stmt = stmt.where(AnalysisTable.analysis_id == analysis_id)
    if kind is not None:
        stmt = stmt.where(Analysis.kind == kind)
    with engine.connect() as conn:
        row = conn.execute(stmt.order_by(AnalysisTable.analysis_id.desc()).limit(1)).first()
    if row is None:
        known = ", ".join(sorted(set(list_tables(engine, analysis_id)["name"])))
        where = f" in analysis {analysis_id}" if analysis_id is not None else ""
        where += f" of a {kind} analysis" if kind is not None else ""
        raise KeyError(
            f"no result table {name!r}{where}; stored tables: "
            f"{known or 'none (run cuegap analyze)'}"
        )
    return int(row[0]), str(row[1])


def load_table(
    engine: Engine, name: str, analysis_id: int | None = None, kind: str | None = None
) -> pd.DataFrame:
    """A stored result table as a DataFrame (which one: see :func:`find_table`).

    Raises
    ------
    KeyError
        When no analysis has stored a table of that name; the message lists the known ones.
    """
    found, _ = find_table(engine, name, analysis_id, kind)
    stmt = select(AnalysisTable.data).where(
        AnalysisTable.name == name, AnalysisTable.analysis_id == found
    )
    with engine.connect() as conn:
        return table_from_json(conn.execute(stmt).scalar_one())


def export_table(
    engine: Engine,
    name: str,
    out: Path | str,
    analysis_id: int | None = None,
    kind: str | None = None,
) -> Path:
    """Write a stored result table to CSV or Parquet, chosen by the file extension.

    Raises
    ------
    ValueError
        When the extension is neither ``.csv`` nor ``.parquet``.
    KeyError
        When the table does not exist.
    """
    out = Path(out)
    suffix = out.suffix.lower()
    if suffix not in (".csv", ".parquet"):
        raise ValueError(f"{out}: the output must end in .csv or .parquet, not {suffix!r}")
    df = load_table(engine, name, analysis_id, kind)
    out.parent.mkdir(parents=True, exist_ok=True)
    if suffix == ".csv":
        df.to_csv(out, index=False)
    else:
        df.to_parquet(out, index=False)
    return out


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
    "export_table",
    "find_analysis",
    "find_table",
    "latest_analysis_id",
    "list_analyses",
    "list_tables",
    "load_idata",
    "load_table",
    "save_analysis",
    "table_from_json",
    "table_to_json",
]
