"""The QA answer tally: QA answers counted per system, item, strategy and answer.

The QA design's count table (:func:`cuegap.schema.qa_counts`) depends on the answers only
through these counts, so it reads this tally instead of ``qa_response``: repeats of a
prompt that give the same answer add to a row's ``n`` instead of adding rows. Like the
dilemma design's tally (:mod:`cuegap.schema._tally`), it is derived data:

* the QA loader counts each chunk's new answers in the transaction that inserts them
  (:func:`qa_tally_rows`, from the rows it has just written, with their ``strategy``
  prompt factor);
* after an ingest, :func:`compact_qa_tally` merges rows that share a key across chunks and
  files once the fresh rows have grown to half the merged ones;
* migration 0009 builds it from the answers of stores that predate it;
* ``cuegap verify`` recounts the answers (:func:`qa_tally_mismatches`) and names an edited
  tally. Rows counted by ``cuegap count`` have no answers behind them: they stay under
  their batch, never merged, and their batch's ledger entry seals them
  (:mod:`cuegap.schema._counted`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

from sqlalchemy import Column, Index, Integer, and_, func, select
from sqlalchemy.engine import Connection
from sqlalchemy.sql import Select
from sqlmodel import Field, SQLModel

from cuegap.schema._counted import counted_batches, not_counted
from cuegap.schema._qa_tables import QAResponse, QAResponseFactor
from cuegap.schema._tables import _BigIntPK
from cuegap.schema._tally import merge_rows

#: The columns a QA tally row is keyed by (besides the batch).
QA_TALLY_KEYS = ("system_id", "item_id", "strategy", "answer")


class QATally(SQLModel, table=True):
    """QA answers per system, item, ``strategy`` prompt factor (NULL: none) and answer.

    ``batch_id`` is the ingest batch of a chunk's rows until :func:`compact_qa_tally`
    merges them with the other rows of the same key (NULL after that).
    """

    __tablename__ = "qa_tally"
    __table_args__ = (Index("ix_qa_tally_key", "system_id", "item_id"),)

    id: int | None = Field(default=None, sa_column=Column(_BigIntPK, primary_key=True))
    batch_id: int | None = Field(default=None, foreign_key="ingest_batch.id", index=True)
    system_id: int = Field(foreign_key="system.id")
    item_id: int = Field(foreign_key="qa_item.id")
    strategy: str | None = Field(default=None, max_length=200)
    answer: str = Field(max_length=20)
    n: int


def qa_tally_rows(
    batch_id: int, rows: Iterable[Mapping[str, Any]], factors: Iterable[Mapping[str, str]]
) -> list[dict[str, Any]]:
    """Tally rows for answers just stored: one per key, with their count.

    Parameters
    ----------
    batch_id : int
        The ingest batch the answers belong to.
    rows : iterable of mappings
        The new ``qa_response`` rows (``system_id``, ``item_id``, ``answer``).
    factors : iterable of mappings
        Each row's prompt factors (name -> value), in the same order.
    """
    counts: Counter[tuple[Any, ...]] = Counter()
    for row, named in zip(rows, factors, strict=True):
        counts[(row["system_id"], row["item_id"], named.get("strategy"), row["answer"])] += 1
    return [
        {"batch_id": batch_id, **dict(zip(QA_TALLY_KEYS, key, strict=True)), "n": n}
        for key, n in sorted(counts.items(), key=lambda kv: repr(kv[0]))
    ]


def qa_tally_select() -> Select:
    """The QA answers counted afresh per tally key (what the tally must hold)."""
    r, f = QAResponse.__table__, QAResponseFactor.__table__
    keys = (r.c.system_id, r.c.item_id, f.c.value.label("strategy"), r.c.answer)
    return (
        select(*keys, func.count().cast(Integer).label("n"))
        .select_from(r)
        .join(f, and_(f.c.response_id == r.c.id, f.c.name == "strategy"), isouter=True)
        .group_by(*keys)
    )


def compact_qa_tally(conn: Connection, *, min_rows: int = 1_000) -> bool:
    """Merge QA tally rows that share a key (see :func:`cuegap.schema._tally.merge_rows`).

    Returns
    -------
    bool
        Whether rows were merged.
    """
    t = QATally.__table__
    # rows counted by ``cuegap count`` stay under their batch: its ledger entry seals them
    where, where_sql = not_counted(t, list(counted_batches(conn, t.name)))
    return merge_rows(conn, t, QA_TALLY_KEYS, where, where_sql, min_rows)


def qa_tally_mismatches(conn: Connection) -> int:
    """How many QA answer counts the tally no longer holds exactly (0 when it agrees)."""
    table = QATally.__table__
    t = table.c
    keys = [t[k] for k in QA_TALLY_KEYS]
    ingested, _sql = not_counted(table, list(counted_batches(conn, table.name)))
    stored = select(*keys, func.sum(t.n).cast(Integer).label("n")).where(ingested).group_by(*keys)
    want = {tuple(row[:-1]): int(row[-1]) for row in conn.execute(qa_tally_select())}
    have = {tuple(row[:-1]): int(row[-1]) for row in conn.execute(stored)}
    return len(want.keys() ^ have.keys()) + sum(
        1 for k in want.keys() & have.keys() if want[k] != have[k]
    )


__all__ = [
    "QA_TALLY_KEYS",
    "QATally",
    "compact_qa_tally",
    "qa_tally_mismatches",
    "qa_tally_rows",
    "qa_tally_select",
]
