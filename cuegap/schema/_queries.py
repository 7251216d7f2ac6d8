"""Aggregation queries over the store (SQL GROUP BY, never a Python loop over rows)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pandas as pd
from sqlalchemy import Integer, case, func, select
from sqlalchemy.engine import Connection, Engine

from cuegap.schema._snapshot import connected
from cuegap.schema._tables import Analysis, IngestBatch, ItemBank, Quarantine, Run, System
from cuegap.schema._tally import ResponseTally


@dataclass
class StoreStatus:
    """A summary of what a store holds.

    Attributes
    ----------
    systems : DataFrame
        One row per system: ``system``, ``responses``, ``parsed_rate``, ``abstention_rate``.
    conditions : DataFrame
        One row per (condition, difficulty, probe): ``responses``, ``abstention_rate``.
    banks : DataFrame
        Item banks: ``name``, ``ingested_at``.
    runs : int
        Number of source files ingested.
    quarantined : int
        Number of quarantined input lines.
    failed_batches : int
        Ingests that stopped with an error.
    unfinished : DataFrame
        Ingests still marked running (killed, or running now): ``source_path``,
        ``started_at``, ``lines_read`` (records committed before it stopped).
    """

    systems: pd.DataFrame
    conditions: pd.DataFrame
    banks: pd.DataFrame
    runs: int
    quarantined: int
    failed_batches: int
    unfinished: pd.DataFrame = field(default_factory=pd.DataFrame)

    @property
    def responses(self) -> int:
        """Total number of stored responses."""
        return int(self.systems["responses"].sum()) if len(self.systems) else 0


def read_frame(engine: Engine | Connection, stmt: Any) -> pd.DataFrame:
    """Run a SELECT and return its rows as a DataFrame with the statement's column labels."""
    with connected(engine) as conn:
        result = conn.execute(stmt)
        return pd.DataFrame(result.fetchall(), columns=list(result.keys()))


def store_status(engine: Engine | Connection) -> StoreStatus:
    """Summarise a store: systems, conditions, parse and abstention rates, quarantine.

    Parameters
    ----------
    engine : Engine or Connection
        An initialised store, or a connection to one (e.g. a :func:`read_snapshot`).

    Returns
    -------
    StoreStatus
    """
    # Read from the response tally, which counts every stored response (``cuegap verify``
    # checks that), and is all a store counted by ``cuegap count`` holds.
    t = ResponseTally
    n = func.coalesce(func.sum(t.n), 0).cast(Integer)
    abstained = func.sum(case((t.abstained, t.n), else_=0)).cast(Integer)
    parsed = func.sum(case((t.parse_status == "ok", t.n), else_=0)).cast(Integer)
    systems = read_frame(
        engine,
        select(
            System.name.label("system"),
            n.label("responses"),
            parsed.label("parsed"),
            abstained.label("abstained"),
        )
        .join(t, t.system_id == System.id, isouter=True)
        .group_by(System.name)
        .order_by(System.name),
    )
    conditions = read_frame(
        engine,
        select(
            t.condition,
            t.difficulty,
            t.probe,
            n.label("responses"),
            abstained.label("abstained"),
        )
        .group_by(t.condition, t.difficulty, t.probe)
        .order_by(t.condition, t.difficulty, t.probe),
    )
    for df in (systems, conditions):
        total = df["responses"].where(df["responses"] > 0)
        if "parsed" in df:
            df["parsed_rate"] = df.pop("parsed") / total
        df["abstention_rate"] = df.pop("abstained") / total
    banks = read_frame(engine, select(ItemBank.name, ItemBank.ingested_at).order_by(ItemBank.name))
    with connected(engine) as conn:
        runs = conn.execute(select(func.count(Run.id))).scalar_one()
        quarantined = conn.execute(  # what is still unresolved; resolved rows are history
            select(func.count(Quarantine.id)).where(Quarantine.resolved_at.is_(None))
        ).scalar_one()
        failed = conn.execute(
            select(func.count(IngestBatch.id)).where(IngestBatch.status == "failed")
        ).scalar_one()
    unfinished = read_frame(
        engine,
        select(IngestBatch.source_path, IngestBatch.started_at, IngestBatch.lines_read)
        .where(IngestBatch.status == "running")
        .order_by(IngestBatch.started_at, IngestBatch.id),
    )
    return StoreStatus(systems, conditions, banks, runs, quarantined, failed, unfinished)


def latest_analysis_id(engine: Engine, kind: str | None = None) -> int | None:
    """Id of the newest stored analysis (of ``kind``, when given), or None."""
    stmt = select(Analysis.id).order_by(Analysis.id.desc()).limit(1)
    if kind is not None:
        stmt = stmt.where(Analysis.kind == kind)
    with engine.connect() as conn:
        found = conn.execute(stmt).scalar()
    return None if found is None else int(found)
