"""Which QA items took their target from BBQ's ``target_loc`` where cuegap's own
derivation differs (:mod:`cuegap.ingest._bbq_targets` notes it in the item's metadata),
counted in SQL for the QA data-quality table."""

from __future__ import annotations

import pandas as pd
from sqlalchemy import func, select
from sqlalchemy.engine import Connection, Engine

from cuegap.schema._qa_tables import QAItem, QAResponse
from cuegap.schema._snapshot import connected

TARGET_LOC_COLUMNS = ("dimension", "cue", "status", "items", "answers")


def qa_target_loc_items(engine: Engine | Connection) -> pd.DataFrame:
    """Per dimension, cue and status: items whose ``target_loc`` differs from cuegap's
    derivation (``differs``: ``target_loc`` used) or could not be used (``ignored``), and
    the answers stored to them.

    Parameters
    ----------
    engine : Engine or Connection
        The store (a connection reads inside its snapshot).

    Returns
    -------
    DataFrame
        :data:`TARGET_LOC_COLUMNS`; empty when no item has such a note (no
        ``additional_metadata.csv`` was read, or it agreed everywhere).
    """
    i, r = QAItem.__table__, QAResponse.__table__
    status = i.c["metadata"]["target_loc_status"].as_string()
    answers = select(r.c.item_id, func.count().label("n")).group_by(r.c.item_id).subquery()
    stmt = (
        select(
            i.c.dimension,
            i.c.cue,
            status.label("status"),
            func.count().label("items"),
            func.coalesce(func.sum(answers.c.n), 0).label("answers"),
        )
        .select_from(i)
        .join(answers, answers.c.item_id == i.c.id, isouter=True)
        .where(status.is_not(None))
        .group_by(i.c.dimension, i.c.cue, status)
        .order_by(i.c.dimension, i.c.cue, status)
    )
    with connected(engine) as conn:
        rows = conn.execute(stmt).fetchall()
    df = pd.DataFrame(rows, columns=list(TARGET_LOC_COLUMNS))
    for col in ("items", "answers"):
        df[col] = df[col].astype("int64")
    return df
