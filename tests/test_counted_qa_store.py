"""A store holding counted QA files, without Spark: the driver's writes, kept and verified.

The job's result (:class:`cuegap.ingest._spark_count.SparkCounts`) for one QA file behind
a URL is written by hand, as Spark would return it, and stored by the real driver code
(``write_counts``) with the QA design's ``Counting``, on SQLite and PostgreSQL. A later
``cuegap ingest`` of QA answers, whose QA tally compaction runs, must leave the counted
rows under their batch (the batch's ledger entry seals them), and ``verify`` must find
the store intact: the QA tally check recounts the stored answers only, not counted rows
that have no answers behind them.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import pg_database
from sqlalchemy import select

from cuegap.compliance import verify
from cuegap.schema import QAItem, QATally, compact_qa_tally, make_engine, upgrade

URL = "s3a://lake/qa/part-0.jsonl"


@pytest.fixture(params=["sqlite", "postgresql"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'store.db'}"
        return
    with pg_database() as pg:
        yield pg


def test_counted_qa_rows_survive_compaction_and_verify(url: str, tmp_path: Path) -> None:
    from cuegap.designs import get
    from cuegap.designs.qa._simulate import simulate_qa
    from cuegap.ingest import ingest_path
    from cuegap.ingest._count_store import write_counts
    from cuegap.ingest._spark_count import FileCount, SparkCounts

    sim = simulate_qa(tmp_path / "sim", systems=1, templates_per_dimension=2, seed=3)
    engine = make_engine(url)
    upgrade(engine)
    ingest_path(engine, sim.itembank_path)
    with engine.connect() as conn:
        item_id = conn.execute(select(QAItem.id).order_by(QAItem.id).limit(1)).scalar_one()
    # the key of answers the simulator's file also has, so compaction would merge them
    key = ("sim-qa-system-01", item_id, "zero-shot", "unknown")
    counted = FileCount(
        0, URL, sha256="cd" * 32, size=99, read=3, stored=3, systems=["sim-qa-system-01"]
    )
    result = SparkCounts([counted], [((0, key), 3)], "3.5.0")
    [summary] = write_counts(engine, get("qa").spark_counting(), result, sample=10)
    assert summary.balanced and summary.stored == 3
    found = verify(engine)
    assert found.ok, found.problems

    ingest_path(engine, sim.responses_path)
    with engine.connect() as conn:
        assert compact_qa_tally(conn, min_rows=1)  # the ingested rows were merged
    t = QATally.__table__.c
    with engine.connect() as conn:
        rows = [tuple(r) for r in conn.execute(select(t.batch_id, t.n).where(t.item_id == item_id))]
    assert (summary.batch_id, 3) in rows  # still under its batch, not merged
    assert all(b is None for b, _n in rows if b != summary.batch_id)  # the others merged
    after = verify(engine)
    assert after.ok, after.problems
    with engine.connect() as conn:
        assert get("qa").tally_problems(conn) == []
    engine.dispose()


def test_count_notes_answers_to_items_without_a_target(tmp_path: Path) -> None:
    """Two counted answers to a BBQ item whose options have no target (the fixture's
    banks hold such items), five to an item with one: the note names the two, which a QA
    analysis of a counted store leaves out."""
    from cuegap.designs import get
    from cuegap.ingest import expand_path, ingest_order, ingest_path, qa_count_notes
    from cuegap.ingest._count_store import write_counts
    from cuegap.ingest._spark_count import FileCount, SparkCounts
    from cuegap.schema import QAOption

    fix = Path(__file__).parent / "fixtures" / "bbq_family"
    engine = make_engine(f"sqlite:///{tmp_path / 'bbq.db'}")
    upgrade(engine)
    banks = [f for p in (fix / "BBQ", fix / "ImplicitBBQ") for f in expand_path(p)[0]]
    for f in ingest_order(banks):
        if "data" in f.parts:  # the item banks only
            ingest_path(engine, f)
    o = QAOption.__table__.c
    with engine.connect() as conn:
        untargeted = conn.execute(select(o.item_id).where(o.role == "unresolved")).scalars()
        untargeted = sorted(set(untargeted))
        targeted = conn.execute(
            select(o.item_id).where(o.role == "target", o.item_id.notin_(untargeted))
        ).scalars()
        targeted = sorted(set(targeted))
    assert untargeted and targeted
    keys = [
        ((0, ("gpt-4o", untargeted[0], "zero-shot", "unresolved")), 2),
        ((0, ("gpt-4o", targeted[0], "zero-shot", "target")), 5),
    ]
    counted = FileCount(0, URL, sha256="ef" * 32, size=9, read=7, stored=7, systems=["gpt-4o"])
    [summary] = write_counts(
        engine, get("qa").spark_counting(), SparkCounts([counted], keys, "3.5.0"), sample=10
    )
    with engine.connect() as conn:
        notes = qa_count_notes(conn, [summary.batch_id])
        assert qa_count_notes(conn, [summary.batch_id + 1]) == []  # another batch: nothing
    assert len(notes) == 1 and notes[0].startswith("note: 2 counted answer(s) are to BBQ items")
    engine.dispose()
