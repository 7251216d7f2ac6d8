"""The QA design's count table, aggregated in SQL (the input of
:func:`cuegap.designs.qa.stats.qa_scores`).

One GROUP BY over the QA answer tally (:mod:`cuegap.schema._qa_tally`: the answers counted
per system, item, ``strategy`` factor and answer, kept by the loader) joined to the item,
the item's gold option and the system turns any number of stored answers into one row per
(system, strategy, cue, context, dimension, subgroup, polarity, gold, answer, template)
with the count ``n``: exactly the input contract of :mod:`cuegap.designs.qa.stats`, plus
``template`` (the item's template id, else its source id, else its key) for the template
bootstrap.

* ``strategy`` is the response's ``strategy`` factor (``zero-shot`` when it has none);
  other prompt factors (choice format, ...) are summed over.
* ``gold`` is the role of the item's gold option; ``answer`` the role of the chosen
  option, or ``unparsable``.
* Items without a target (options with role ``unresolved``: both people share the
  protected attribute, e.g. "a girl" and "a woman" for gender identity, or BBQ
  Race_x_gender items that differ only in gender) have a correct answer but no bias
  direction. Their rows have gold ``untargeted`` and answer ``unknown``, ``unparsable``,
  ``untargeted`` (the gold person) or ``untargeted_other`` (the other person), counted
  from the answers themselves (the tally keeps roles, not which person was chosen):
  :func:`cuegap.designs.qa.stats.qa_scores` counts them in accuracy and leaves them out of the bias
  scores, as BBQ's own scoring does. Difference-Awareness items (contexts ``different``
  and ``equal``) are not BBQ items and stay out.
"""

from __future__ import annotations

import pandas as pd
from sqlalchemy import Integer, and_, case, exists, func, literal, select
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.sql import Select

from cuegap.schema._qa_tables import QAItem, QAOption, QAResponse, QAResponseFactor
from cuegap.schema._qa_tally import QATally
from cuegap.schema._snapshot import connected
from cuegap.schema._tables import System

QA_COUNT_COLUMNS = (
    "system",
    "strategy",
    "cue",
    "context",
    "dimension",
    "subgroup",
    "polarity",
    "gold",
    "answer",
    "template",
    "n",
)
DEFAULT_STRATEGY = "zero-shot"


def qa_counts(engine: Engine | Connection) -> pd.DataFrame:
    """The QA count table of a store.

    Parameters
    ----------
    engine : Engine or Connection
        A cuegap store, or a connection to one (e.g. a :func:`read_snapshot`).

    Returns
    -------
    DataFrame
        Columns ``QA_COUNT_COLUMNS``; ``n`` is int64. Empty (with those columns) when the
        store holds no QA answers.
    """
    t, i = QATally.__table__, QAItem.__table__
    gold, other = QAOption.__table__.alias("gold"), QAOption.__table__.alias("other")
    s = System.__table__
    keys = (
        s.c.name.label("system"),
        func.coalesce(t.c.strategy, literal(DEFAULT_STRATEGY)).label("strategy"),
        i.c.cue.label("cue"),
        i.c.context_condition.label("context"),
        i.c.dimension.label("dimension"),
        i.c.subgroup.label("subgroup"),
        i.c.polarity.label("polarity"),
        gold.c.role.label("gold"),
        t.c.answer.label("answer"),
        func.coalesce(i.c.template_id, i.c.source_id, i.c.item_key).label("template"),
    )
    unresolved = exists().where(other.c.item_id == i.c.id, other.c.role == "unresolved")
    stmt = (
        select(*keys, func.sum(t.c.n).cast(Integer).label("n"))
        .select_from(t)
        .join(i, i.c.id == t.c.item_id)
        .join(gold, and_(gold.c.item_id == i.c.id, gold.c.option_index == i.c.gold_index))
        .join(s, s.c.id == t.c.system_id)
        .where(~unresolved)
        .group_by(*keys)
        .order_by(*keys)
    )
    with connected(engine) as conn:
        rows = conn.execute(stmt).fetchall()
        untargeted = conn.execute(_untargeted_counts()).fetchall()
    df = pd.DataFrame(rows, columns=list(QA_COUNT_COLUMNS))
    if untargeted:
        extra = pd.DataFrame(untargeted, columns=list(QA_COUNT_COLUMNS))
        keys = list(QA_COUNT_COLUMNS[:-1])
        df = pd.concat([df, extra], ignore_index=True)
        df = df.sort_values(keys, kind="stable", key=lambda c: c.astype(str))
        df = df.reset_index(drop=True)
    df["n"] = df["n"].astype("int64")
    return df


def _untargeted_counts() -> Select:
    """Count rows of the BBQ items without a target, from their answers (see above)."""
    r, i, s = QAResponse.__table__, QAItem.__table__, System.__table__
    f, other = QAResponseFactor.__table__, QAOption.__table__.alias("other")
    answer = case(
        (r.c.answer.in_(("unknown", "unparsable")), r.c.answer),
        (r.c.parsed_index == i.c.gold_index, literal("untargeted")),
        else_=literal("untargeted_other"),
    )
    keys = (
        s.c.name.label("system"),
        func.coalesce(f.c.value, literal(DEFAULT_STRATEGY)).label("strategy"),
        i.c.cue.label("cue"),
        i.c.context_condition.label("context"),
        i.c.dimension.label("dimension"),
        i.c.subgroup.label("subgroup"),
        i.c.polarity.label("polarity"),
        literal("untargeted").label("gold"),
        answer.label("answer"),
        func.coalesce(i.c.template_id, i.c.source_id, i.c.item_key).label("template"),
    )
    no_target = select(other.c.item_id).where(other.c.role == "unresolved")
    return (
        select(*keys, func.count().cast(Integer).label("n"))
        .select_from(r)
        .join(i, i.c.id == r.c.item_id)
        .join(s, s.c.id == r.c.system_id)
        .outerjoin(f, and_(f.c.response_id == r.c.id, f.c.name == "strategy"))
        .where(
            r.c.item_id.in_(no_target),
            i.c.context_condition.in_(("ambiguous", "disambiguated")),
        )
        .group_by(*keys)
    )


def qa_status(engine: Engine | Connection) -> tuple[pd.DataFrame, pd.DataFrame]:
    """QA answers per system (``system``, ``answers``, ``unparsable``) and per cue ×
    context (``cue``, ``context``, ``answers``, ``unparsable``); empty without QA answers.

    Read from the QA tally, which counts every stored answer (and the answers of files
    counted by ``cuegap count``, which are not stored)."""
    t, i, s = QATally.__table__, QAItem.__table__, System.__table__
    answers = func.sum(t.c.n).label("answers")
    bad = func.sum(case((t.c.answer == "unparsable", t.c.n), else_=0)).label("unparsable")
    by_system = (
        select(s.c.name.label("system"), answers, bad)
        .select_from(t)
        .join(s, s.c.id == t.c.system_id)
        .group_by(s.c.name)
        .order_by(s.c.name)
    )
    by_cell = (
        select(i.c.cue, i.c.context_condition.label("context"), answers, bad)
        .select_from(t)
        .join(i, i.c.id == t.c.item_id)
        .group_by(i.c.cue, i.c.context_condition)
        .order_by(i.c.cue, i.c.context_condition)
    )
    with connected(engine) as conn:
        frames = [
            pd.DataFrame(conn.execute(stmt).fetchall(), columns=cols)
            for stmt, cols in (
                (by_system, ["system", "answers", "unparsable"]),
                (by_cell, ["cue", "context", "answers", "unparsable"]),
            )
        ]
    for df in frames:
        df[["answers", "unparsable"]] = df[["answers", "unparsable"]].astype("int64")
    return frames[0], frames[1]
