"""The aggregation that feeds every decision-bias statistic: Favor/Against counts in SQL.

One GROUP BY over the what-if answers, joined to each system's Neutral baseline decision
and the dilemma's benefit annotation, turns any number of stored responses into a small
count table. Statistics in :mod:`cuegap.models` work on that table only. The queries read
the response tally (:mod:`cuegap.schema._tally`), which the loader keeps with one row per
distinct answer, so their cost follows the study design rather than the number of
responses (repeats of a prompt add to a row's ``n``, not rows).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import orjson
import pandas as pd
from sqlalchemy import Integer, and_, case, false, func, literal, select, true
from sqlalchemy.engine import Connection, Engine

from cuegap.schema._queries import read_frame
from cuegap.schema._snapshot import connected
from cuegap.schema._tables import (
    Annotation,
    Dilemma,
    Item,
    ItemBank,
    ItemIndividual,
    System,
)
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


PUZZLE_CONDITIONS = ("puzzled", "formal_named")
PARSE_STATUSES = ("ok", "partial", "refusal", "invalid", "empty")
ABSTENTION_COLUMNS = (
    "system",
    "condition",
    "difficulty",
    "consequences",
    "probe",
    "responses",
    "abstained",
    *PARSE_STATUSES,
)


def abstention_counts(engine: Engine | Connection) -> pd.DataFrame:
    """Responses, abstentions and parse outcomes per system, condition and probe.

    Returns
    -------
    DataFrame
        One row per (system, condition, difficulty, consequences, probe) with integer
        columns ``responses``, ``abstained`` and one per parse status (``ok``, ``partial``,
        ``refusal``, ``invalid``, ``empty``).

    Notes
    -----
    Appendix C / Table 8 of the seed paper: responses outside the valid answer set are
    abstentions; they are excluded from the bias computation and reported as rates.
    """
    r = _T
    keys = [System.name.label("system"), r.condition, r.difficulty, r.consequences, r.probe]
    stmt = (
        select(
            *keys,
            func.sum(r.n).cast(Integer).label("responses"),
            func.sum(case((r.abstained.is_(True), r.n), else_=0)).cast(Integer).label("abstained"),
            *[
                func.sum(case((r.parse_status == s, r.n), else_=0)).cast(Integer).label(s)
                for s in PARSE_STATUSES
            ],
        )
        .select_from(r)
        .join(System, System.id == r.system_id)
        .group_by(*keys)
    )
    df = read_frame(engine, stmt)
    df = _types(df, ints=("responses", "abstained", *PARSE_STATUSES), bools=("consequences",))
    return _in_key_order(df, ABSTENTION_COLUMNS[:5])


RECOVERY_COLUMNS = (
    "system",
    "condition",
    "difficulty",
    "consequences",
    "prompt_variant",
    "solution_shape",
    "responses",
    "slots",
    "parsable",
    "correct",
)


def recovery_counts(engine: Engine | Connection) -> pd.DataFrame:
    """Puzzle recovery: per (item, individual) slot, was the answer parsable and correct?

    Returns
    -------
    DataFrame
        One row per (system, condition, difficulty, consequences, prompt_variant,
        solution_shape) with ``responses`` (main answers to items with a puzzle),
        ``slots`` (their individuals), ``parsable`` (slots the parsed JSON assignment
        names; labels that are not the item's individuals do not count) and ``correct``
        (slots whose every attribute was recovered).

    Notes
    -----
    Tables 5 and 6 of the seed paper: accuracy is correct / slots, parsability is
    parsable / slots, and parsable-but-incorrect is parsable - correct.
    """
    r = _T
    stmt = (
        select(
            System.name.label("system"),
            r.condition,
            r.difficulty,
            r.consequences,
            r.prompt_variant,
            Item.solution_shape,
            r.item_id,
            r.assignment,
            r.recovered,
            r.n,
        )
        .select_from(r)
        .join(System, System.id == r.system_id)
        .join(Item, Item.id == r.item_id)
        .where(r.probe == "main", r.condition.in_(PUZZLE_CONDITIONS))
    )
    totals: dict[tuple[Any, ...], list[int]] = {}
    with connected(engine) as conn:
        labels: dict[int, set[str]] = {}  # the item's individuals, as the parser's keys
        for item_id, label in conn.execute(select(ItemIndividual.item_id, ItemIndividual.label)):
            labels.setdefault(item_id, set()).add(str(label).upper())
        for row in conn.execute(stmt):
            slots = labels.get(row.item_id)
            if not slots:
                continue  # a puzzle without individuals has no slots to recover
            key = tuple(row[:6])
            n = int(row.n)  # responses sharing this answer
            assignment = orjson.loads(row.assignment) if row.assignment else None
            acc = totals.setdefault(key, [0, 0, 0, 0])
            acc[0] += n
            acc[1] += n * len(slots)
            if assignment:  # a slot is parsable when the answer names that individual
                acc[2] += n * len(slots.intersection(str(k).upper() for k in assignment))
            acc[3] += n * len(row.recovered or "")
    df = pd.DataFrame(
        [(*k, *v) for k, v in sorted(totals.items(), key=lambda kv: repr(kv[0]))],
        columns=list(RECOVERY_COLUMNS),
    )
    return _types(df, ints=("responses", "slots", "parsable", "correct"), bools=("consequences",))


def _in_key_order(df: pd.DataFrame, keys: Sequence[str]) -> pd.DataFrame:
    """Rows sorted by their group keys, NULLs first, text by code point (as SQLite groups).

    GROUP BY promises no order, and PostgreSQL's hash aggregation returns groups in any
    order (and sorts text by its collation): sorting here makes every backend return the
    same table, row for row.
    """
    if df.empty:
        return df.reset_index(drop=True)
    return df.sort_values(list(keys), na_position="first", kind="stable").reset_index(drop=True)


def _types(df: pd.DataFrame, *, ints: Sequence[str], bools: Sequence[str]) -> pd.DataFrame:
    for col in ints:
        df[col] = df[col].astype("int64")
    for col in bools:
        df[col] = df[col].astype(bool)
    return df


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
