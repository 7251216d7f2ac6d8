"""Two processes ingesting at once lose nothing and duplicate nothing (real servers).

Each test starts two real OS processes (``spawn``) that ingest into the same store at the
same time: two different files, then the same file twice. Afterwards every response line
is stored exactly once and every batch's accounting balances.
"""

from __future__ import annotations

import multiprocessing as mp
import random
from pathlib import Path

import pytest
from sqlalchemy import func, select, text
from sqlalchemy.exc import IntegrityError

from cuegap.designs.dilemma.simulate import simulate
from cuegap.ingest import IngestSummary, ingest_path
from cuegap.ingest._concurrent import retry_batch
from cuegap.schema import IngestBatch, Response, make_engine, upgrade
from tests.conftest import pg_database


def _ingest(url: str, path: str, barrier, queue) -> None:
    engine = make_engine(url)
    barrier.wait()
    try:
        s = ingest_path(engine, Path(path), batch_size=500)
        queue.put(("ok", s.read, s.stored, s.duplicate, s.quarantined))
    except Exception as exc:  # pragma: no cover - reported by the test
        queue.put(("error", repr(exc)))
    finally:
        engine.dispose()


def _run_pair(url: str, a: Path, b: Path) -> list[tuple]:
    ctx = mp.get_context("spawn")
    barrier, queue = ctx.Barrier(2), ctx.Queue()
    procs = [ctx.Process(target=_ingest, args=(url, str(p), barrier, queue)) for p in (a, b)]
    for p in procs:
        p.start()
    results = [queue.get(timeout=300) for _ in procs]
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    return results


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("concurrent")
    sim = simulate(root / "data", systems=1, seed=4)
    header, *lines = sim.responses_path.read_text().splitlines()
    half = len(lines) // 2
    (root / "a.jsonl").write_text("\n".join([header, *lines[:half]]) + "\n")
    (root / "b.jsonl").write_text("\n".join([header, *lines[half:]]) + "\n")
    shuffled = lines[:half]
    random.Random(0).shuffle(shuffled)  # the same records as a.jsonl, another file
    (root / "a-shuffled.jsonl").write_text("\n".join([header, *shuffled]) + "\n")
    return {
        "bank": sim.itembank_path,
        "a": root / "a.jsonl",
        "b": root / "b.jsonl",
        "a_shuffled": root / "a-shuffled.jsonl",
        "n": len(lines),
    }


def _store(db_url: str, bank: Path):
    engine = make_engine(db_url)
    upgrade(engine)
    ingest_path(engine, bank)
    return engine


def _stored(engine) -> tuple[int, int]:
    with engine.connect() as conn:
        total = conn.execute(select(func.count()).select_from(Response)).scalar()
        distinct = conn.execute(select(func.count(func.distinct(Response.response_key)))).scalar()
    return total, distinct


def test_two_files_at_once(db_url: str, files) -> None:
    engine = _store(db_url, files["bank"])
    results = _run_pair(db_url, files["a"], files["b"])
    assert all(r[0] == "ok" for r in results), results
    assert sum(r[2] for r in results) == files["n"]  # stored
    assert _stored(engine) == (files["n"], files["n"])
    engine.dispose()


def test_same_file_at_once(db_url: str, files) -> None:
    engine = _store(db_url, files["bank"])
    results = _run_pair(db_url, files["a"], files["a"])
    assert all(r[0] == "ok" for r in results), results
    half = files["n"] // 2
    for _, read, stored, duplicate, quarantined in results:
        assert read == stored + duplicate + quarantined == half
        assert quarantined == 0
    assert sum(r[2] for r in results) == half  # each line stored by exactly one process
    assert _stored(engine) == (half, half)
    with engine.connect() as conn:
        statuses = conn.execute(select(IngestBatch.status)).scalars().all()
    assert set(statuses) == {"completed"} and len(statuses) >= 2  # none failed or hanging
    engine.dispose()


def test_nothing_new_says_whether_the_file_itself_was_ingested(db_url: str, files) -> None:
    """A file never ingested before, whose records others stored, is not 'already ingested'."""
    engine = _store(db_url, files["bank"])
    ingest_path(engine, files["a"])
    other = ingest_path(engine, files["a_shuffled"])
    assert other.stored == 0 and other.duplicate == other.read
    assert "file already ingested" not in other.note
    assert "already stored by another file or run" in other.note
    again = ingest_path(engine, files["a_shuffled"])
    assert again.note == "file already ingested: nothing new stored"
    engine.dispose()


def _counter(engine) -> int:
    with engine.connect() as conn:
        return conn.execute(text("SELECT v FROM counter")).scalar_one()


def test_retry_batch_reruns_a_serialisation_failure_and_counts_once() -> None:
    """A real serialisation failure (40001) rolls the batch back; the retry counts it once."""
    with pg_database() as url:
        engine, other = make_engine(url), make_engine(url)
        with engine.begin() as conn:
            conn.execute(text("CREATE TABLE counter (id int PRIMARY KEY, v int)"))
            conn.execute(text("INSERT INTO counter VALUES (1, 0)"))
        summary = IngestSummary("f.jsonl", "generic", "responses", read=5, stored=5)
        attempts: list[int] = []

        def write() -> None:
            attempts.append(1)
            rr = engine.connect().execution_options(isolation_level="REPEATABLE READ")
            with rr, rr.begin():
                summary.read += 10
                summary.problems.append((len(attempts), "seen"))
                rr.execute(text("SELECT v FROM counter"))  # takes the snapshot
                if len(attempts) == 1:  # another ingest commits a change meanwhile
                    with other.begin() as conn:
                        conn.execute(text("UPDATE counter SET v = v + 1"))
                rr.execute(text("UPDATE counter SET v = v + 10"))
                summary.stored += 10

        sleeps: list[float] = []
        assert retry_batch(write, summary, sleep=sleeps.append) == 1
        assert len(attempts) == 2 and len(sleeps) == 1
        assert (summary.read, summary.stored) == (15, 15)  # the failed attempt uncounted
        assert summary.problems == [(2, "seen")]
        assert _counter(engine) == 11
        engine.dispose()
        other.dispose()


def test_retry_batch_reports_other_errors_at_once(engine) -> None:
    summary = IngestSummary("f.jsonl", "generic", "responses")
    attempts: list[int] = []

    def write() -> None:
        attempts.append(1)
        with engine.begin() as conn:
            conn.execute(text("INSERT INTO system (id, name) VALUES (1, 'a'), (1, 'b')"))

    with pytest.raises(IntegrityError):
        retry_batch(write, summary, sleep=lambda _s: None)
    assert len(attempts) == 1
