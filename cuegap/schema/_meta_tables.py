"""Descriptive tables of a store: the item banks' annotator labels and the audited systems."""

from __future__ import annotations

import orjson
import pandas as pd
from sqlalchemy import select
from sqlalchemy.engine import Connection, Engine

from cuegap.schema._queries import read_frame
from cuegap.schema._snapshot import connected
from cuegap.schema._tables import Annotation, Dilemma, ItemBank, System


def annotation_table(engine: Engine | Connection) -> pd.DataFrame:
    """Per-annotator labels of the item banks' dilemmas, long format.

    Returns
    -------
    DataFrame
        Columns ``item_bank``, ``dilemma``, ``annotator``, ``field`` (person_status,
        benefit_option, sys1, sys2) and ``value``; empty when no annotator labels were
        ingested.
    """
    stmt = (
        select(
            ItemBank.name.label("item_bank"),
            Dilemma.dilemma_key.label("dilemma"),
            Annotation.annotator,
            Annotation.field,
            Annotation.value,
        )
        .join(Dilemma, Dilemma.id == Annotation.dilemma_id)
        .join(ItemBank, ItemBank.id == Dilemma.bank_id)
        .order_by(ItemBank.name, Dilemma.dilemma_key, Annotation.annotator, Annotation.field)
    )
    return read_frame(engine, stmt)


def system_table(engine: Engine | Connection) -> pd.DataFrame:
    """The audited systems with their metadata keys as columns.

    Returns
    -------
    DataFrame
        ``system``, ``provider``, ``version``, then one column per metadata key (e.g.
        ``capability``, ``alignment``) as the runner supplied it.
    """
    stmt = select(System.name, System.provider, System.version, System.meta).order_by(System.name)
    with connected(engine) as conn:
        rows = conn.execute(stmt).fetchall()
    records = []
    for name, provider, version, meta in rows:
        if isinstance(meta, str):
            meta = orjson.loads(meta)
        records.append({"system": name, "provider": provider, "version": version, **(meta or {})})
    return pd.DataFrame(records, columns=None if records else ["system", "provider", "version"])
