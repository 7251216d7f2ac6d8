"""Provenance queries for reports: where the stored data came from, and sample raw lines."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd
from sqlalchemy import func, select
from sqlalchemy.engine import Connection, Engine

from cuegap.schema._queries import read_frame
from cuegap.schema._tables import IngestBatch, ItemBank, Quarantine, Response, Run, System


@dataclass
class Provenance:
    """What a store was built from.

    Attributes
    ----------
    banks : DataFrame
        Item banks: ``name``, ``source``, ``source_path``, ``sha256``, ``ingested_at``.
    runs : DataFrame
        Response files: ``source_path``, ``sha256``, ``format``, ``runner``,
        ``runner_version``, ``started_at``, ``ingested_at``, ``responses``.
    batches : DataFrame
        Ingest passes: ``source_path``, ``sha256``, ``format``, ``status``, ``lines_read``,
        ``stored``, ``duplicate``, ``quarantined``, ``started_at``, ``finished_at``.
    quarantine : DataFrame
        Quarantined lines counted per file and reason: ``source_path``, ``reason``,
        ``lines``.
    systems : DataFrame
        Audited systems: ``system``, ``provider``, ``version``.
    """

    banks: pd.DataFrame
    runs: pd.DataFrame
    batches: pd.DataFrame
    quarantine: pd.DataFrame
    systems: pd.DataFrame


def provenance(engine: Engine | Connection) -> Provenance:
    """Source files with their SHA-256, runners, ingest dates and quarantine counts.

    Parameters
    ----------
    engine : Engine or Connection
        An initialised store, or a connection to one (e.g. a :func:`read_snapshot`).

    Returns
    -------
    Provenance
        Every frame sorted deterministically (by path, then date).
    """
    banks = read_frame(
        engine,
        select(
            ItemBank.name,
            ItemBank.source,
            ItemBank.source_path,
            ItemBank.sha256,
            ItemBank.ingested_at,
        ).order_by(ItemBank.name),
    )
    counts = (
        select(Response.run_id, func.count(Response.id).label("responses"))
        .group_by(Response.run_id)
        .subquery()
    )
    runs = read_frame(
        engine,
        select(
            Run.source_path,
            Run.source_sha256.label("sha256"),
            Run.format,
            Run.runner,
            Run.runner_version,
            Run.started_at,
            Run.ingested_at,
            func.coalesce(counts.c.responses, 0).label("responses"),
        )
        .join(counts, counts.c.run_id == Run.id, isouter=True)
        .order_by(Run.source_path, Run.id),
    )
    batches = read_frame(
        engine,
        select(
            IngestBatch.source_path,
            IngestBatch.source_sha256.label("sha256"),
            IngestBatch.format,
            IngestBatch.status,
            IngestBatch.lines_read,
            IngestBatch.stored,
            IngestBatch.duplicate,
            IngestBatch.quarantined,
            IngestBatch.mapping,
            IngestBatch.started_at,
            IngestBatch.finished_at,
        ).order_by(IngestBatch.started_at, IngestBatch.id),
    )
    quarantine = read_frame(
        engine,
        select(
            Quarantine.source_path,
            Quarantine.reason,
            func.count(Quarantine.id).label("lines"),
        )
        .where(Quarantine.resolved_at.is_(None))  # lines stored since are history
        .group_by(Quarantine.source_path, Quarantine.reason)
        .order_by(Quarantine.source_path, func.count(Quarantine.id).desc(), Quarantine.reason),
    )
    systems = read_frame(
        engine,
        select(System.name.label("system"), System.provider, System.version).order_by(System.name),
    )
    return Provenance(banks, runs, batches, quarantine, systems)


def raw_examples(engine: Engine | Connection, *, quarantined: int = 5) -> pd.DataFrame:
    """A few raw lines exactly as stored: one abstained response per system, and quarantine.

    Parameters
    ----------
    engine : Engine or Connection
        An initialised store, or a connection to one (e.g. a :func:`read_snapshot`).
    quarantined : int
        How many quarantined lines to include (the first by file and line number).

    Returns
    -------
    DataFrame
        ``kind`` (``abstained`` or ``quarantined``), ``system`` (None for quarantined
        lines), ``where`` (condition and probe, or file and line), ``status`` (parse status
        or quarantine reason) and ``text`` (the raw, untrusted text).
    """
    first = (
        select(Response.system_id, func.min(Response.id).label("id"))
        .where(Response.abstained)
        .group_by(Response.system_id)
        .subquery()
    )
    abstained = read_frame(
        engine,
        select(
            System.name.label("system"),
            Response.condition,
            Response.difficulty,
            Response.probe,
            Response.parse_status.label("status"),
            Response.raw_text.label("text"),
        )
        .join(first, first.c.id == Response.id)
        .join(System, System.id == Response.system_id)
        .order_by(System.name),
    )
    rows = [
        {
            "kind": "abstained",
            "system": r.system,
            "where": " ".join(
                str(x) for x in (r.condition, r.difficulty, r.probe) if isinstance(x, str)
            ),
            "status": r.status,
            "text": r.text,
        }
        for r in abstained.itertuples()
    ]
    if quarantined > 0:
        q = read_frame(
            engine,
            select(Quarantine.source_path, Quarantine.line_no, Quarantine.reason, Quarantine.raw)
            .where(Quarantine.resolved_at.is_(None))
            .order_by(Quarantine.source_path, Quarantine.line_no)
            .limit(quarantined),
        )
        rows += [
            {
                "kind": "quarantined",
                "system": None,
                "where": f"{r.source_path}:{r.line_no}",
                "status": r.reason,
                "text": r.raw,
            }
            for r in q.itertuples()
        ]
    return pd.DataFrame(rows, columns=["kind", "system", "where", "status", "text"])
