"""Stored analysis settings read back (one codec for every design)."""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy import select
from sqlalchemy.engine import Engine

from cuegap.schema import Analysis


def stored_settings(engine: Engine, analysis_id: int) -> dict[str, Any]:
    """The settings an analysis was stored with, as a dict (``{}`` when none)."""
    with engine.connect() as conn:
        stored = conn.execute(select(Analysis.settings).where(Analysis.id == analysis_id)).scalar()
    if isinstance(stored, str):  # a JSON column read back as text
        stored = json.loads(stored)
    return dict(stored or {})


def analysis_kind(engine: Engine, analysis_id: int) -> str | None:
    """The kind of a stored analysis, or None when there is none with this id."""
    with engine.connect() as conn:
        return conn.execute(select(Analysis.kind).where(Analysis.id == analysis_id)).scalar()


def matching_fit(engine: Engine, analysis_id: int, kind: str, keys: tuple[str, ...]) -> int | None:
    """The newest analysis of ``kind`` (a Bayesian fit) of the same data as analysis
    ``analysis_id`` whose stored settings agree with its settings on ``keys``; None when
    there is none. Converged or not: a fit that missed its gate is still the fit of record.
    """
    with engine.connect() as conn:
        row = conn.execute(
            select(Analysis.data_fingerprint, Analysis.settings).where(Analysis.id == analysis_id)
        ).one()
        fits = conn.execute(
            select(Analysis.id, Analysis.settings)
            .where(Analysis.kind == kind, Analysis.data_fingerprint == row.data_fingerprint)
            .order_by(Analysis.id.desc())
        ).all()
    mine = row.settings or {}
    for fit in fits:
        if all((fit.settings or {}).get(k) == mine.get(k) for k in keys):
            return int(fit.id)
    return None
