"""How often cuegap's reading of QA answers agrees with the runner's own reading.

Where a runner stored its own reading of an answer (``predicted``: ImplicitBBQ's
``predicted_index``, an inspect scorer's letter), that reading decides, and ingest notes
in ``parse_reason`` whether cuegap's reading of the raw text agrees
(:mod:`cuegap.ingest.qa_agreement`), with one of the prefixes below. This module counts
them per system, in SQL, for the QA data-quality table.
"""

from __future__ import annotations

import pandas as pd
from sqlalchemy import Integer, case, func, select
from sqlalchemy.engine import Connection, Engine

from cuegap.schema._qa_tables import QAResponse
from cuegap.schema._snapshot import connected
from cuegap.schema._tables import System

RUNNER_AGREES = "the runner's reading; cuegap's reading of the text agrees"
RUNNER_DIFFERS = "the runner's reading; cuegap reads the text as "
RUNNER_UNREAD = "the runner's reading; cuegap cannot read the text: "

AGREEMENT_COLUMNS = ("system", "answers", "runner_read", "agree", "differ", "unreadable")


def qa_runner_agreement(engine: Engine | Connection) -> pd.DataFrame:
    """Per system: answers, those the runner read (``runner_read``), and of those, how
    many cuegap's reading of the text agrees with, differs from, or cannot read.

    Parameters
    ----------
    engine : Engine or Connection
        The store (a connection reads inside its snapshot).

    Returns
    -------
    DataFrame
        :data:`AGREEMENT_COLUMNS`, one row per system with QA answers. Answers stored
        before the note existed, or without text, count in ``runner_read`` only.
    """
    r, s = QAResponse.__table__, System.__table__

    def count(cond: object, name: str) -> object:
        return func.sum(case((cond, 1), else_=0)).cast(Integer).label(name)

    why = r.c.parse_reason
    stmt = (
        select(
            s.c.name.label("system"),
            func.count().label("answers"),
            count(r.c.predicted.is_not(None), "runner_read"),
            count(why == RUNNER_AGREES, "agree"),
            count(why.startswith(RUNNER_DIFFERS, autoescape=True), "differ"),
            count(why.startswith(RUNNER_UNREAD, autoescape=True), "unreadable"),
        )
        .select_from(r)
        .join(s, s.c.id == r.c.system_id)
        .group_by(s.c.name)
        .order_by(s.c.name)
    )
    with connected(engine) as conn:
        rows = conn.execute(stmt).fetchall()
    df = pd.DataFrame(rows, columns=list(AGREEMENT_COLUMNS))
    for col in AGREEMENT_COLUMNS[1:]:
        df[col] = df[col].fillna(0).astype("int64")
    return df
