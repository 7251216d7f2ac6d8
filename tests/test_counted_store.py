"""A counted store without Spark: what ``cuegap count``'s driver writes, checked by verify.

The job's result (:class:`cuegap.ingest._spark_count.SparkCounts`) is written by hand for
one file behind a URL, as Spark would return it, and stored by the real driver code
(``write_counts``), on SQLite and PostgreSQL. Verify states the file as not reachable,
not checked, and finds the store intact; a later ``cuegap ingest`` whose tally compaction
runs leaves the counted rows under their batch, so the seal still holds.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import DATA, pg_database
from sqlalchemy import select

from cuegap.compliance import verify
from cuegap.schema import Item, ResponseTally, compact_tally, make_engine, upgrade

URL = "s3a://lake/run-7/part-0.jsonl"


@pytest.fixture(params=["sqlite", "postgresql"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'store.db'}"
        return
    with pg_database() as pg:
        yield pg


def test_a_file_behind_a_url_is_stated_not_checked(url: str) -> None:
    from cuegap.designs import get
    from cuegap.ingest import ingest_path
    from cuegap.ingest._count_store import write_counts
    from cuegap.ingest._spark_count import FileCount, SparkCounts

    engine = make_engine(url)
    upgrade(engine)
    ingest_path(engine, DATA / "tiny_bank.json")
    with engine.connect() as conn:
        item_id, condition, difficulty = conn.execute(
            select(Item.id, Item.condition, Item.difficulty).order_by(Item.id).limit(1)
        ).one()
    # a repeated answer (first = False): the rows tally compaction merges after an ingest
    key = ("sys-a", item_id, condition, difficulty, "main", None, True, "v0", False,
           "option1", "ok", False, None, None)  # fmt: skip
    counted = FileCount(0, URL, sha256="ab" * 32, size=123, read=3, stored=3, systems=["sys-a"])
    result = SparkCounts([counted], [((0, key), 3)], "3.5.0")
    [summary] = write_counts(engine, get("dilemma").spark_counting(), result, sample=10)
    assert summary.balanced and summary.stored == 3

    found = verify(engine)
    assert found.ok, found.problems
    name = f"counted file {URL} (batch {summary.batch_id}, spark)"
    assert found.counted == [f"{name}: not reachable from here, not checked"]

    ingest_path(engine, DATA / "tiny_responses.jsonl")  # holds one repeated answer
    with engine.connect() as conn:
        assert compact_tally(conn, min_rows=1)  # the ingested repeat row was merged
    t = ResponseTally.__table__.c
    with engine.connect() as conn:
        rows = conn.execute(select(t.batch_id, t.n).where(t.item_id == item_id, ~t.first)).all()
    assert (summary.batch_id, 3) in [tuple(r) for r in rows]  # still under its batch
    after = verify(engine)
    assert after.ok, after.problems
    engine.dispose()
