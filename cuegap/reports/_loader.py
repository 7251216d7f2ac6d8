"""The one report loader: what every design's report reads from a stored analysis.

A report only reads. Each design's report data (:mod:`cuegap.designs.dilemma._report`,
``_qa_report``, ``_pv_standalone``, ``_conv_report``) is built from :func:`load_stored`:
the analysis row, its result tables, the package versions, the store's provenance and the
sign-offs to print, plus :func:`matching_fit` for the Bayesian fit of the same data and
settings and :func:`load_verdict_page` for page 1. Nothing here runs an analysis: a
missing one is named in the error, with the command that stores it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import metadata
from typing import Any

import pandas as pd
from sqlalchemy import select
from sqlalchemy.engine import Engine

from cuegap.audit import load_table
from cuegap.schema import Analysis, AnalysisTable, Provenance, provenance, read_snapshot

REPORT_SCHEMA_VERSION = 1


def renderer_versions() -> dict[str, str]:
    """The versions of the packages that render a report (they are printed in it)."""
    out = {}
    for pkg in ("adjustText", "jinja2", "matplotlib", "weasyprint"):
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:  # pragma: no cover - a hard dependency
            out[pkg] = "unknown"
    return out


def report_versions(stored: Mapping[str, str] | None) -> dict[str, str]:
    """The versions stored with an analysis plus the renderer's, sorted by package."""
    return dict(sorted({**(stored or {}), **renderer_versions()}.items()))


def load_tables(engine: Engine, analysis_id: int) -> dict[str, pd.DataFrame]:
    """Every result table an analysis stored, by name (in name order)."""
    with engine.connect() as conn:
        names = list(
            conn.execute(
                select(AnalysisTable.name)
                .where(AnalysisTable.analysis_id == analysis_id)
                .order_by(AnalysisTable.name)
            ).scalars()
        )
    return {name: load_table(engine, name, analysis_id) for name in names}


def load_analysis_row(
    engine: Engine, kind: str, analysis_id: int | None, *, label: str, design: str
) -> Any:
    """The stored analysis row of ``kind``: ``analysis_id``, or the newest.

    Raises
    ------
    ValueError
        When there is none, or ``analysis_id`` is of another kind; the message names the
        command that stores one (``cuegap analyze --design DESIGN``).
    """
    stmt = select(Analysis).where(Analysis.kind == kind).order_by(Analysis.id.desc()).limit(1)
    if analysis_id is not None:
        stmt = select(Analysis).where(Analysis.id == analysis_id)
    with engine.connect() as conn:
        row = conn.execute(stmt).first()
    if row is None or row.kind != kind:
        which = (
            f"--analysis {analysis_id} is not a stored {label} analysis"
            if analysis_id is not None
            else f"there is no stored {label} analysis"
        )
        raise ValueError(f"{which}; run cuegap analyze --design {design}")
    return row


@dataclass
class Stored:
    """One stored analysis as a report reads it.

    Attributes
    ----------
    row : Analysis row
        ``id``, ``kind``, ``data_fingerprint``, ``created_at``, ``settings``, ...
    tables : dict of str to DataFrame
        Its result tables.
    versions : dict
        The package versions stored with it plus the renderer's.
    provenance : Provenance
        Item banks, ingest passes and quarantine counts of the store.
    signoffs : list of dict
        Sign-off records to print.
    """

    row: Any
    tables: dict[str, pd.DataFrame]
    versions: dict[str, str]
    provenance: Provenance
    signoffs: list[dict[str, Any]] = field(default_factory=list)

    def common(self) -> dict[str, Any]:
        """The fields every design's report data has, as keyword arguments."""
        row = self.row
        return {"analysis_id": int(row.id), "kind": row.kind,
                "data_fingerprint": row.data_fingerprint,
                "analysis_created_at": row.created_at, "settings": dict(row.settings or {}),
                "versions": self.versions, "tables": self.tables,
                "provenance": self.provenance, "signoffs": self.signoffs}  # fmt: skip


def load_stored(
    engine: Engine,
    kind: str,
    analysis_id: int | None,
    *,
    label: str,
    design: str,
    signoffs: Sequence[Mapping[str, Any]] | None = None,
    progress: Callable[[str], None] | None = None,
) -> Stored:
    """Load a stored analysis of ``kind`` for a report (see :func:`load_analysis_row`)."""
    say = progress or (lambda _msg: None)
    row = load_analysis_row(engine, kind, analysis_id, label=label, design=design)
    say("reading result tables")
    tables = load_tables(engine, row.id)
    say("reading provenance")
    with read_snapshot(engine) as conn:
        prov = provenance(conn)
    return Stored(row, tables, report_versions(row.versions), prov,
                  [dict(s) for s in (signoffs or [])])  # fmt: skip


def matching_fit(engine: Engine, row: Any, kind: str, keys: Iterable[str]) -> Any:
    """The newest analysis of ``kind`` (a Bayesian fit) of the same data as ``row`` whose
    stored settings agree with ``row``'s on ``keys``, converged or not, as a row with ``id``,
    ``status``, ``settings`` and ``message``; None when none
    (:func:`cuegap.designs.matching_fit` decides which)."""
    from cuegap.designs import matching_fit as matching_id

    found = matching_id(engine, int(row.id), kind, tuple(keys))
    if found is None:
        return None
    with engine.connect() as conn:
        return conn.execute(
            select(Analysis.id, Analysis.status, Analysis.settings, Analysis.message).where(
                Analysis.id == found
            )
        ).one()


def load_verdict_page(engine: Engine, analysis_id: int) -> pd.DataFrame | None:
    """The stored ``verdict_records`` of an analysis (page 1 of every report), or None
    when it stored none (an analysis stored by an older cuegap)."""
    with engine.connect() as conn:
        found = conn.execute(
            select(AnalysisTable.id).where(
                AnalysisTable.analysis_id == analysis_id,
                AnalysisTable.name == "verdict_records",
            )
        ).first()
    if found is None:
        return None
    return load_table(engine, "verdict_records", analysis_id)


#: The analysis kind and table ``cuegap plan`` stores (``cuegap.cli._plan``).
PLAN_KIND = PLAN_TABLE = "plan"


def load_plan(engine: Engine, design: str) -> tuple[int | None, pd.DataFrame | None]:
    """The newest stored plan rows of ``design`` ("What it would take to decide"): the
    newest plan analysis whose ``plan`` table has rows of the design, and those rows;
    ``(None, None)`` when ``cuegap plan`` stored none for it."""
    with engine.connect() as conn:
        ids = list(
            conn.execute(
                select(Analysis.id).where(Analysis.kind == PLAN_KIND).order_by(Analysis.id.desc())
            ).scalars()
        )
    for found in ids:
        try:
            table = load_table(engine, PLAN_TABLE, found)
        except (KeyError, LookupError, ValueError):
            continue
        if "design" not in table.columns:
            continue
        mine = table[table["design"].astype(str) == design].reset_index(drop=True)
        if not mine.empty:
            return int(found), mine
    return None, None
