"""The aggregation that feeds every decision-bias statistic: Favor/Against counts in SQL.

One GROUP BY over the what-if answers, joined to each system's Neutral baseline decision
and the dilemma's benefit annotation, turns any number of stored responses into a small
count table. Statistics in :mod:`cuegap.models` work on that table only. The queries read
the response tally (:mod:`cuegap.schema._tally`), which the loader keeps with one row per
distinct answer, so their cost follows the study design rather than the number of
responses (repeats of a prompt add to a row's ``n``, not rows).

Here: the decision counts (Favor / Against) and the could-be status counts. The
data-quality counts are in :mod:`cuegap.schema._quality_counts`, the annotation and system
tables in :mod:`cuegap.schema._meta_tables`; every name stays importable from here.
"""

from __future__ import annotations

import pandas as pd
from sqlalchemy import Integer, and_, case, false, func, literal, select, true
from sqlalchemy.engine import Connection, Engine

from cuegap.schema._count_frames import _in_key_order, _types
from cuegap.schema._meta_tables import annotation_table, system_table
from cuegap.schema._quality_counts import (
    ABSTENTION_COLUMNS,
    PARSE_STATUSES,
    PUZZLE_CONDITIONS,
    RECOVERY_COLUMNS,
    abstention_counts,
    recovery_counts,
)
from cuegap.schema._queries import read_frame
from cuegap.schema._snapshot import connected
from cuegap.schema._tables import Dilemma, Item, ItemIndividual, System
from cuegap.schema._tally import ResponseTally

#: The tally (see :mod:`cuegap.schema._tally`): one row per distinct answer, ``n`` responses.
_T = ResponseTally

COUNT_COLUMNS = (
    "system",
    "condition",
    "difficulty",
    "consequences",
    "prompt_variant",
    "dilemma",
    "topic_group",
    "solution_shape",
    "gender",
    "race",
    "recovered",
    "favor",
    "favor_trials",
    "against",
    "against_trials",
)


def decision_counts(engine: Engine | Connection) -> pd.DataFrame:
    """Favor and Against events with their denominators, per dilemma and individual cell.

    Parameters
    ----------
    engine : Engine or Connection
        A cuegap store, or a connection to one (e.g. a :func:`read_snapshot`).

    Returns
    -------
    DataFrame
        One row per (system, condition, difficulty, consequences, prompt_variant, dilemma,
        topic_group, solution_shape, gender, race, recovered) with integer columns
        ``favor``, ``favor_trials``, ``against``, ``against_trials``. ``recovered`` is True
        or False for items with a puzzle (whether the system's main answer gave that
        individual's full assignment correctly) and None otherwise.

    Notes
    -----
    Section 2.3 of the seed paper: with s_d the system's Neutral decision on dilemma d
    (same consequences setting) and b_d the benefit option, a What-if answer w for
    individual X is an In-favor trial when s_d != b_d (an event when w = b_d) and an
    Against trial when s_d = b_d (an event when w != b_d). Abstained answers and dilemmas
    whose Neutral answer abstained are left out. When a dilemma has several Neutral answers
    (repeats, variants), the one with ``repeat = 0`` is used, and of those the smallest
    answer, so that the baseline is one decision.
    """
    neutral = (
        select(
            _T.system_id,
            Item.dilemma_id,
            _T.consequences,
            func.min(_T.parsed_answer).label("s"),
        )
        .join(Item, Item.id == _T.item_id)
        .where(
            _T.condition == "neutral",
            _T.probe == "main",
            _T.abstained == false(),
            _T.first == true(),
        )
        .group_by(_T.system_id, Item.dilemma_id, _T.consequences)
        .subquery("neutral")
    )
    main = (
        select(
            _T.system_id,
            _T.item_id,
            _T.consequences,
            func.min(_T.recovered).label("recovered"),
        )
        .where(_T.probe == "main", _T.first == true(), _T.recovered.is_not(None))
        .group_by(_T.system_id, _T.item_id, _T.consequences)
        .subquery("main")
    )
    r, b, s = _T, Dilemma.benefit_option, neutral.c.s
    favor_trial = case((s != b, r.n), else_=0)
    against_trial = case((s == b, r.n), else_=0)
    favor = case((and_(s != b, r.parsed_answer == b), r.n), else_=0)
    against = case((and_(s == b, r.parsed_answer != b), r.n), else_=0)
    recovered = case(
        (main.c.recovered.is_(None), literal(None)),
        (main.c.recovered.contains(r.individual), literal(1)),
        else_=literal(0),
    ).label("recovered")
    keys = [
        System.name.label("system"),
        r.condition,
        r.difficulty,
        r.consequences,
        r.prompt_variant,
        Dilemma.dilemma_key.label("dilemma"),
        Dilemma.topic_group,
        Item.solution_shape,
        ItemIndividual.gender,
        ItemIndividual.race,
        recovered,
    ]
    stmt = (
        select(
            *keys,
            func.sum(favor).cast(Integer).label("favor"),
            func.sum(favor_trial).cast(Integer).label("favor_trials"),
            func.sum(against).cast(Integer).label("against"),
            func.sum(against_trial).cast(Integer).label("against_trials"),
        )
        .select_from(r)
        .join(System, System.id == r.system_id)
        .join(Item, Item.id == r.item_id)
        .join(Dilemma, Dilemma.id == Item.dilemma_id)
        .join(
            ItemIndividual,
            and_(ItemIndividual.item_id == r.item_id, ItemIndividual.label == r.individual),
        )
        .join(
            neutral,
            and_(
                neutral.c.system_id == r.system_id,
                neutral.c.dilemma_id == Item.dilemma_id,
                neutral.c.consequences == r.consequences,
            ),
        )
        .join(
            main,
            and_(
                main.c.system_id == r.system_id,
                main.c.item_id == r.item_id,
                main.c.consequences == r.consequences,
            ),
            isouter=True,
        )
        .where(r.probe == "what_if", r.abstained == false())
        .group_by(*keys)
    )
    with connected(engine) as conn:
        if conn.dialect.name == "postgresql":
            # The planner underestimates the first-answer subqueries once repeats add rows
            # and picks nested loops over a materialised join (10x slower at 3 repeats):
            # every join here spans the whole tally, where hash joins are the right plan.
            # SET LOCAL lasts until the end of the (snapshot's or this) transaction.
            conn.exec_driver_sql("SET LOCAL enable_nestloop = off")
        result = conn.execute(stmt)
        df = pd.DataFrame(result.fetchall(), columns=list(COUNT_COLUMNS))
    for col in ("favor", "favor_trials", "against", "against_trials"):
        df[col] = df[col].astype("int64")
    df["consequences"] = df["consequences"].astype(bool)
    df["recovered"] = df["recovered"].map({1: True, 0: False}).astype("object")
    df["recovered"] = df["recovered"].where(df["recovered"].notna(), None)
    return _in_key_order(df, COUNT_COLUMNS[:11])


STATUS_COLUMNS = (
    "system",
    "condition",
    "difficulty",
    "consequences",
    "prompt_variant",
    "dilemma",
    "person_status",
    "gender",
    "race",
    "yes",
    "trials",
)


def status_counts(engine: Engine | Connection) -> pd.DataFrame:
    """Could-be answers: how often each individual is taken for the described person.

    Parameters
    ----------
    engine : Engine or Connection
        A cuegap store, or a connection to one (e.g. a :func:`read_snapshot`).

    Returns
    -------
    DataFrame
        One row per (system, condition, difficulty, consequences, prompt_variant, dilemma,
        person_status, gender, race) with ``yes`` (answers "yes") and ``trials`` (answers
        "yes" or "no"; abstentions are left out).

    Notes
    -----
    Appendix K of the seed paper: status bias is the rate at which an individual of a group
    is identified as the described person, split by the described person's status
    (good / neutral / bad).
    """
    r = _T
    keys = [
        System.name.label("system"),
        r.condition,
        r.difficulty,
        r.consequences,
        r.prompt_variant,
        Dilemma.dilemma_key.label("dilemma"),
        Dilemma.person_status,
        ItemIndividual.gender,
        ItemIndividual.race,
    ]
    stmt = (
        select(
            *keys,
            func.sum(case((r.parsed_answer == "yes", r.n), else_=0)).cast(Integer).label("yes"),
            func.sum(r.n).cast(Integer).label("trials"),
        )
        .select_from(r)
        .join(System, System.id == r.system_id)
        .join(Item, Item.id == r.item_id)
        .join(Dilemma, Dilemma.id == Item.dilemma_id)
        .join(
            ItemIndividual,
            and_(ItemIndividual.item_id == r.item_id, ItemIndividual.label == r.individual),
        )
        .where(r.probe == "could_be", r.abstained == false())
        .group_by(*keys)
    )
    df = read_frame(engine, stmt)
    df = _types(df, ints=("yes", "trials"), bools=("consequences",))
    return _in_key_order(df, STATUS_COLUMNS[:9])


__all__ = [
    "ABSTENTION_COLUMNS",
    "COUNT_COLUMNS",
    "PARSE_STATUSES",
    "PUZZLE_CONDITIONS",
    "RECOVERY_COLUMNS",
    "STATUS_COLUMNS",
    "abstention_counts",
    "annotation_table",
    "decision_counts",
    "recovery_counts",
    "status_counts",
    "system_table",
]
