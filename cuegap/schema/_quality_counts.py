"""Data-quality counts in SQL: abstentions and parse outcomes, and puzzle recovery.

What the report's data-quality section and the verdict policy's minimums read (Appendix C
and Tables 5, 6 and 8 of the seed paper). Like :mod:`cuegap.schema._aggregate`, the
queries read the response tally, so their cost follows the study design.
"""

from __future__ import annotations

from typing import Any

import orjson
import pandas as pd
from sqlalchemy import Integer, case, func, select
from sqlalchemy.engine import Connection, Engine

from cuegap.schema._count_frames import _in_key_order, _types
from cuegap.schema._queries import read_frame
from cuegap.schema._snapshot import connected
from cuegap.schema._tables import Item, ItemIndividual, System
from cuegap.schema._tally import ResponseTally

#: The tally (see :mod:`cuegap.schema._tally`): one row per distinct answer, ``n`` responses.
_T = ResponseTally

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
