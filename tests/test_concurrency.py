"""Two processes ingesting at once lose nothing and duplicate nothing (real servers).

Each test starts two real OS processes (``spawn``) that ingest into the same store at the
same time: two different files, then the same file twice. Afterwards every response line
is stored exactly once and every batch's accounting balances.
"""

from __future__ import annotations

import multiprocessing as mp
from pathlib import Path

import pytest
from sqlalchemy import func, select

from cuegap.ingest import ingest_path
from cuegap.schema import IngestBatch, Response, make_engine, upgrade
from cuegap.simulate import simulate


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
    return {
        "bank": sim.itembank_path,
        "a": root / "a.jsonl",
        "b": root / "b.jsonl",
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
