r"""The conversation tally: transition counts per configuration, kept at ingest.

The count frame of the conversation design (:func:`cuegap.schema.conv_counts`) depends on
the opinions only through four counts per configuration (a cell), so without a unit it
reads this tally instead of ``conv_opinion``: its cost then grows with the number of
configurations, not of transcripts. Like the other designs' tallies it is derived data:

* the conversation loader counts each chunk's new conversations in the transaction that
  inserts them (:func:`transitions`, :func:`tally_rows`: the rule below in Python, from
  the records it has just written);
* after an ingest, :func:`compact_conv_tally` merges rows of the same configuration once
  the fresh rows have grown to half the merged ones;
* ``cuegap verify`` recounts every configuration from the opinions with the SQL
  self-join of :func:`per_conversation` (:func:`conv_tally_mismatches`) and names an
  edited tally; the tests hold the two countings to the same numbers.

The rule (seed 003, Eqs. 1-2): a transition r − 1 → r with both agents' round r − 1
opinions known and different counts for the identity agent when its round r opinion is
known (a shift when it equals the baseline's round r − 1 opinion), and symmetrically for
the baseline.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sqlalchemy import Column, Integer, and_, case, func, select, text
from sqlalchemy.engine import Connection
from sqlmodel import Field, SQLModel

from cuegap.schema._conv_tables import BASELINE, IDENTITY, Conversation, ConvOpinion
from cuegap.schema._tables import _BigIntPK

#: The four transition counts of a cell, and the conversations counted.
CONV_COUNTS = ("iden_disagree", "iden_shift", "base_disagree", "base_shift")
TALLY_COUNTS = (*CONV_COUNTS, "conversations")


class ConvTally(SQLModel, table=True):
    """Transition counts of a configuration's conversations (one chunk's, or merged).

    ``batch_id`` is the ingest batch of a chunk's row until :func:`compact_conv_tally`
    merges it with the other rows of its configuration (NULL after that).
    """

    __tablename__ = "conv_tally"

    id: int | None = Field(default=None, sa_column=Column(_BigIntPK, primary_key=True))
    batch_id: int | None = Field(default=None, foreign_key="ingest_batch.id", index=True)
    config_id: int = Field(foreign_key="conv_config.id", index=True)
    iden_disagree: int
    iden_shift: int
    base_disagree: int
    base_shift: int
    conversations: int


def per_conversation() -> Any:
    """Transition counts per conversation with prior disagreement (a subquery ``t``,
    column ``cid``): the SQL form of the rule (module docstring)."""
    o = ConvOpinion.__table__
    pi, pb, ci, cb = (o.alias(n) for n in ("pi", "pb", "ci", "cb"))

    def one(cond: object) -> Any:
        return func.sum(case((cond, 1), else_=0))

    cid = pi.c.conversation_id
    nxt = pi.c.round + 1
    stmt = (
        select(
            cid.label("cid"),
            one(ci.c.opinion.isnot(None)).label("iden_disagree"),
            one(ci.c.opinion == pb.c.opinion).label("iden_shift"),
            one(cb.c.opinion.isnot(None)).label("base_disagree"),
            one(cb.c.opinion == pi.c.opinion).label("base_shift"),
        )
        .select_from(pi)
        .join(
            pb, and_(pb.c.conversation_id == cid, pb.c.round == pi.c.round, pb.c.role == BASELINE)
        )
        .join(
            ci,
            and_(ci.c.conversation_id == cid, ci.c.round == nxt, ci.c.role == IDENTITY),
            isouter=True,
        )
        .join(
            cb,
            and_(cb.c.conversation_id == cid, cb.c.round == nxt, cb.c.role == BASELINE),
            isouter=True,
        )
        .where(
            pi.c.role == IDENTITY,
            pi.c.opinion.isnot(None),
            pb.c.opinion.isnot(None),
            pi.c.opinion != pb.c.opinion,
        )
    )
    return stmt.group_by(cid).subquery("t")


def tally_select() -> Any:
    """Counts per configuration of every stored conversation, by the SQL self-join."""
    c = Conversation.__table__
    t = per_conversation()
    sums = [func.coalesce(func.sum(t.c[n]), 0).cast(Integer).label(n) for n in CONV_COUNTS]
    return (
        select(c.c.config_id, *sums, func.count().cast(Integer).label("conversations"))
        .select_from(c)
        .join(t, t.c.cid == c.c.id, isouter=True)
        .group_by(c.c.config_id)
    )


def transitions(opinions: Iterable[tuple[Any, ...]]) -> tuple[int, int, int, int]:
    """The four counts of one conversation from its ``(round, role, agent, opinion, ...)``
    rows (the loader's records): the rule of the module docstring, in Python, so that a
    chunk is counted without querying what it has just written."""
    by_round: dict[int, dict[str, Any]] = {}
    for row in opinions:
        by_round.setdefault(row[0], {})[row[1]] = row[3]
    out = [0, 0, 0, 0]
    for r in sorted(by_round):
        prev, cur = by_round.get(r - 1), by_round[r]
        if prev is None:
            continue
        ip, bp = prev.get(IDENTITY), prev.get(BASELINE)
        if ip is None or bp is None or ip == bp:
            continue
        ic, bc = cur.get(IDENTITY), cur.get(BASELINE)
        if ic is not None:
            out[0] += 1
            out[1] += ic == bp
        if bc is not None:
            out[2] += 1
            out[3] += bc == ip
    return out[0], out[1], out[2], out[3]


def tally_rows(
    batch_id: int, conversations: Iterable[tuple[int, tuple[int, int, int, int]]]
) -> list[dict[str, Any]]:
    """Tally rows for conversations just stored, given as ``(config_id, counts)``: one row
    per configuration."""
    sums: dict[int, list[int]] = {}
    for config_id, counts in conversations:
        acc = sums.setdefault(config_id, [0, 0, 0, 0, 0])
        for k, v in enumerate(counts):
            acc[k] += v
        acc[4] += 1
    return [
        {"batch_id": batch_id, "config_id": cid, **dict(zip(TALLY_COUNTS, acc, strict=True))}
        for cid, acc in sorted(sums.items())
    ]


def compact_conv_tally(conn: Connection, *, min_rows: int = 1_000) -> bool:
    """Merge tally rows of the same configuration (fresh rows: ``batch_id`` not NULL).

    Nothing is done until the fresh rows number ``min_rows`` and half the merged ones.
    Then the rows up to the largest id are replaced by their sums per configuration, in
    one transaction (on PostgreSQL one statement, so rows other ingests commit meanwhile
    are left alone).

    Returns
    -------
    bool
        Whether rows were merged.
    """
    t = ConvTally.__table__
    fresh, merged = conn.execute(
        select(func.count(t.c.batch_id), func.count() - func.count(t.c.batch_id))
    ).one()
    if fresh < min_rows or 2 * fresh < merged:
        return False
    if conn.in_transaction():
        conn.commit()
    cols = ", ".join(("config_id", *TALLY_COUNTS))
    sums = ", ".join(f"sum({n})" for n in TALLY_COUNTS)
    with conn.begin():
        mark = conn.execute(select(func.max(t.c.id))).scalar()
        if conn.dialect.name == "postgresql":
            conn.execute(
                text(
                    f"WITH gone AS (DELETE FROM conv_tally WHERE id <= :mark RETURNING {cols}) "
                    f"INSERT INTO conv_tally ({cols}) SELECT config_id, {sums} FROM gone "
                    "GROUP BY config_id"
                ),
                {"mark": mark},
            )
        else:
            conn.execute(
                text(
                    f"INSERT INTO conv_tally ({cols}) SELECT config_id, {sums} FROM conv_tally "
                    "WHERE id <= :mark GROUP BY config_id"
                ),
                {"mark": mark},
            )
            conn.execute(text("DELETE FROM conv_tally WHERE id <= :mark"), {"mark": mark})
    return True


def conv_tally_mismatches(conn: Connection) -> int:
    """How many configurations the tally no longer counts exactly (0 when it agrees)."""
    t = ConvTally.__table__.c
    stored = select(t.config_id, *(func.sum(t[n]) for n in TALLY_COUNTS)).group_by(t.config_id)
    want = {r[0]: tuple(map(int, r[1:])) for r in conn.execute(tally_select())}
    have = {r[0]: tuple(map(int, r[1:])) for r in conn.execute(stored)}
    return len(want.keys() ^ have.keys()) + sum(
        1 for k in want.keys() & have.keys() if want[k] != have[k]
    )
