"""The response tally: the dilemma responses counted per distinct answer, kept at ingest.

Every decision-bias statistic depends on responses only through counts. The tally holds one
row per ingest batch and distinct combination of the columns the aggregation reads
(:data:`TALLY_KEYS`), with ``n`` the number of responses that share it. Repeats of a prompt
(``repeat`` > 0) that give the same answer fall into one row, so the aggregation queries of
:mod:`cuegap.schema._aggregate` read a table whose size follows the study design and the
variety of answers, not the number of responses: ten repeats of every prompt cost about
what one does.

The tally is derived data. Each chunk of new responses is counted in the same transaction
that inserts it (:func:`tally_new_responses`, called by the bulk loader), under its ingest
batch. After an ingest, :func:`compact_tally` merges rows that share a key across chunks and
batches into one row (``batch_id`` NULL) whenever the fresh rows have grown to half the
merged ones, so the tally stays about as large as the number of distinct answers. Migration
0008 builds it from the responses of stores that predate it, and ``cuegap verify`` checks it
against the responses (:func:`tally_mismatches`), so an edit of the tally alone is named
there. Responses themselves are append-only.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from sqlalchemy import (
    Column,
    Index,
    Integer,
    Text,
    bindparam,
    cast,
    func,
    literal,
    select,
    text,
)
from sqlalchemy import case as sql_case
from sqlalchemy.engine import Connection
from sqlalchemy.sql import Select
from sqlmodel import Field, SQLModel

from cuegap.schema._counted import counted_batches, not_counted
from cuegap.schema._tables import Response, _BigIntPK


class ResponseTally(SQLModel, table=True):
    """Dilemma responses per distinct aggregation key, with their count.

    ``batch_id`` is the ingest batch of a chunk's rows until :func:`compact_tally` merges
    them with the other rows of the same key (NULL after that).

    ``first`` is ``repeat = 0`` (the baseline and recovery statistics read only first
    answers); ``assignment`` is the parsed puzzle assignment's JSON text for main-probe
    answers and NULL for the other probes, which never carry one.
    """

    __tablename__ = "response_tally"
    __table_args__ = (
        Index("ix_response_tally_agg", "system_id", "condition", "probe"),
        Index("ix_response_tally_item", "item_id", "system_id"),
    )

    id: int | None = Field(default=None, sa_column=Column(_BigIntPK, primary_key=True))
    batch_id: int | None = Field(default=None, foreign_key="ingest_batch.id", index=True)
    system_id: int = Field(foreign_key="system.id")
    item_id: int = Field(foreign_key="item.id")
    condition: str = Field(max_length=20)
    difficulty: str | None = Field(default=None, max_length=20)
    probe: str = Field(max_length=20)
    individual: str | None = Field(default=None, max_length=1)
    consequences: bool = True
    prompt_variant: str = Field(default="v0", max_length=50)
    first: bool
    parsed_answer: str | None = Field(default=None, max_length=10)
    parse_status: str = Field(max_length=10)
    abstained: bool
    recovered: str | None = Field(default=None, max_length=26)
    assignment: str | None = Field(default=None, sa_column=Column(Text))
    n: int


#: The response columns a tally row is keyed by (besides the batch), in table order.
TALLY_KEYS = (
    "system_id",
    "item_id",
    "condition",
    "difficulty",
    "probe",
    "individual",
    "consequences",
    "prompt_variant",
    "first",
    "parsed_answer",
    "parse_status",
    "abstained",
    "recovered",
    "assignment",
)


def _key_expressions() -> list:
    r = Response.__table__.c
    exprs = []
    for key in TALLY_KEYS:
        if key == "first":
            exprs.append((r.repeat == 0).label("first"))
        elif key == "assignment":
            as_text = cast(r.assignment, Text)
            exprs.append(sql_case((r.probe == "main", as_text), else_=None).label("assignment"))
        else:
            exprs.append(r[key].label(key))
    return exprs


def tally_select(*where: object, by_batch: bool = True, grouped: bool = True) -> Select:
    """``SELECT [batch_id,] <keys>, count(*)`` over the responses matching ``where``.

    With ``grouped=False`` every response is its own row with ``n = 1``: exact, and cheaper,
    for first answers (``repeat = 0``), whose key is the response's natural key.
    """
    r = Response.__table__.c
    keys = _key_expressions()
    batch = [r.batch_id] if by_batch else []
    if not grouped:
        return select(*batch, *keys, literal(1, Integer).label("n")).where(*where)
    return (
        select(*batch, *keys, func.count().cast(Integer).label("n"))
        .where(*where)
        .group_by(*batch, *keys)
    )


_INSERT_COLUMNS = ["batch_id", *TALLY_KEYS, "n"]


def tally_new_responses(conn: Connection, batch_ids: Iterable[int], after_id: int) -> None:
    """Count the responses of ``batch_ids`` with ``id > after_id`` into the tally.

    Parameters
    ----------
    conn : Connection
        The transaction that inserted those responses.
    batch_ids : iterable of int
        The ingest batches the new responses belong to.
    after_id : int
        The largest response id before the insert. Ids only grow, so the responses of these
        batches above it are exactly the ones just inserted, even while other ingests write
        responses of their own batches on PostgreSQL.
    """
    r = Response.__table__.c
    batches = sorted(set(batch_ids))
    if not batches:
        return
    new = (r.id > bindparam("after_id"), r.batch_id.in_(bindparam("batches", expanding=True)))
    table = ResponseTally.__table__
    params = {"after_id": after_id, "batches": batches}
    # first answers are one response per key: no grouping; repeats are grouped by key
    first = tally_select(*new, r.repeat == 0, grouped=False)
    conn.execute(table.insert().from_select(_INSERT_COLUMNS, first), params)
    repeats = tally_select(*new, r.repeat != 0)
    conn.execute(table.insert().from_select(_INSERT_COLUMNS, repeats), params)


def max_response_id(conn: Connection) -> int:
    """The largest response id stored (0 for none): the mark for :func:`tally_new_responses`."""
    return int(conn.execute(select(func.coalesce(func.max(Response.__table__.c.id), 0))).scalar())


def compact_tally(conn: Connection, *, min_rows: int = 1_000) -> bool:
    """Merge tally rows that share a key into one, when enough fresh rows have accrued.

    Parameters
    ----------
    conn : Connection
        A connection outside any transaction; the merge is one transaction of its own.
    min_rows : int
        Fresh (unmerged) rows below which nothing is done.

    Returns
    -------
    bool
        Whether rows were merged: when the fresh repeat rows number at least ``min_rows``
        and at least half the merged ones, so that the work stays proportional to the
        tally's growth.

    Notes
    -----
    Only rows of repeated answers (``first`` false) are merged: a first answer's key is its
    response's natural key, so those rows never share one. See :func:`merge_rows`.
    """
    t = ResponseTally.__table__
    # rows counted by ``cuegap count`` stay under their batch: its ledger entry seals them
    where, where_sql = not_counted(t, list(counted_batches(conn, t.name)))
    return merge_rows(
        conn, t, TALLY_KEYS, t.c.first.is_(False) & where, f"NOT first AND {where_sql}", min_rows
    )


def merge_rows(
    conn: Connection, table: Any, keys: Sequence[str], where: Any, where_sql: str, min_rows: int
) -> bool:
    """Merge the rows of a tally ``table`` that share ``keys`` (and match ``where``).

    Fresh rows carry their ingest batch; merged rows have ``batch_id`` NULL. Nothing is
    done until the fresh rows number ``min_rows`` and half the merged ones. Then the rows
    with ``id`` up to the largest id seen are deleted and re-inserted summed per key. On
    PostgreSQL that is one statement (``WITH gone AS (DELETE ... RETURNING ...) INSERT ...
    FROM gone``), so exactly the rows deleted are merged even while other ingests commit
    theirs; SQLite has one writer at a time, and the merge's first statement takes the
    write lock.
    """
    fresh, merged = conn.execute(
        select(func.count(table.c.batch_id), func.count() - func.count(table.c.batch_id))
        .select_from(table)
        .where(where)
    ).one()
    if fresh < min_rows or 2 * fresh < merged:
        return False
    if conn.in_transaction():
        conn.commit()
    cols = ", ".join(f'"{k}"' for k in keys)
    name = table.name
    with conn.begin():
        mark = conn.execute(select(func.max(table.c.id))).scalar()
        if conn.dialect.name == "postgresql":
            conn.execute(
                text(
                    f"WITH gone AS (DELETE FROM {name} WHERE id <= :mark AND {where_sql} "
                    f"RETURNING {cols}, n) INSERT INTO {name} ({cols}, n) "
                    f"SELECT {cols}, sum(n) FROM gone GROUP BY {cols}"
                ),
                {"mark": mark},
            )
        else:
            conn.execute(
                text(
                    f"INSERT INTO {name} ({cols}, n) SELECT {cols}, sum(n) "
                    f"FROM {name} WHERE id <= :mark AND {where_sql} GROUP BY {cols}"
                ),
                {"mark": mark},
            )
            conn.execute(
                text(f"DELETE FROM {name} WHERE id <= :mark AND {where_sql}"), {"mark": mark}
            )
    return True


def tally_mismatches(conn: Connection) -> int:
    """How many distinct answers the tally no longer counts exactly (0 when it agrees).

    The responses are counted afresh per key and compared with the tally's rows summed per
    key, so the check does not depend on how rows were split over chunks or merged. Rows
    counted by ``cuegap count`` have no responses behind them; their batches' ledger
    entries seal them instead (:mod:`cuegap.schema._counted`).
    """
    table = ResponseTally.__table__
    t = table.c
    stored_keys = [t[k] for k in TALLY_KEYS]
    ingested, _sql = not_counted(table, list(counted_batches(conn, table.name)))
    stored = (
        select(*stored_keys, func.sum(t.n).cast(Integer).label("n"))
        .where(ingested)
        .group_by(*stored_keys)
    )
    want = {tuple(row[:-1]): int(row[-1]) for row in conn.execute(tally_select(by_batch=False))}
    have = {tuple(row[:-1]): int(row[-1]) for row in conn.execute(stored)}
    return len(want.keys() ^ have.keys()) + sum(
        1 for k in want.keys() & have.keys() if want[k] != have[k]
    )


__all__ = [
    "TALLY_KEYS",
    "ResponseTally",
    "compact_tally",
    "max_response_id",
    "merge_rows",
    "tally_mismatches",
    "tally_new_responses",
    "tally_select",
]
