"""Load test: 4 concurrent ingesters and an analysis on one store, 5 times (real servers).

Each repetition starts from the same store (schema, item bank and a base sample of the
responses, so that the analysis has data from the start) and runs at once, in five warm
worker processes: four ingests of overlapping files (the responses in file order, the
same shuffled, a shuffled slice and a reversed slice) and one analysis. Small batches
make many transactions that overlap. Asserted each time: no errors, every pass's counts
add up, the passes stored exactly the keys that were missing (nothing duplicated,
nothing lost), and the analysis read one snapshot (its parse-status and could-be tables
count the same responses).
"""

from __future__ import annotations

import multiprocessing as mp
import random
import shutil
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from pathlib import Path

import pytest
from sqlalchemy import create_engine, func, select, text
from sqlalchemy.engine import make_url

from cuegap.designs.dilemma._analysis import analyze
from cuegap.designs.dilemma._analysis_settings import AnalysisSettings
from cuegap.designs.dilemma._analysis_tables import load_store_data
from cuegap.designs.dilemma.simulate import simulate, synthetic_item_bank
from cuegap.ingest import ingest_path
from cuegap.schema import IngestBatch, Response, make_engine, upgrade
from tests.conftest import _pg_admin_url, pg_database

REPETITIONS = 5
INGESTERS = 4
BATCH = 150  # records per transaction: many overlapping transactions per ingest


def _ingest_task(url: str, path: str) -> tuple:
    engine = make_engine(url)
    try:
        s = ingest_path(engine, Path(path), batch_size=BATCH)
        return ("ok", s.read, s.stored, s.duplicate, s.quarantined)
    except Exception as exc:  # reported by the test
        return ("error", f"{type(exc).__name__}: {exc}")
    finally:
        engine.dispose()


def _warm(_i: int) -> None:
    time.sleep(0.5)  # long enough that every worker takes one


def _could_be(data) -> dict[str, int]:
    """Answered could-be responses per system, as two different tables count them."""
    ab = data.abstention[data.abstention["probe"] == "could_be"]
    answered = (ab["responses"] - ab["abstained"]).groupby(ab["system"]).sum()
    trials = data.status.groupby("system")["trials"].sum()
    return {"abstention": answered.to_dict(), "status": trials.to_dict()}


def _analyze_task(url: str) -> tuple:
    engine = make_engine(url)
    try:
        data = load_store_data(engine)
        result = analyze(engine, AnalysisSettings(n_boot=50), force=True)
        assert result.data_fingerprint, "analysis stored without a fingerprint"
        return ("ok", _could_be(data))
    except Exception as exc:  # reported by the test
        return ("error", f"{type(exc).__name__}: {exc}")
    finally:
        engine.dispose()


@pytest.fixture(scope="module")
def pool() -> Iterator[ProcessPoolExecutor]:
    ctx = mp.get_context("spawn")
    with ProcessPoolExecutor(max_workers=INGESTERS + 1, mp_context=ctx) as ex:
        list(ex.map(_warm, range(INGESTERS + 1)))  # start every worker, imports done
        yield ex


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """A slice of a simulated audit (2 systems, 6 dilemmas) and overlapping files of it."""
    root = tmp_path_factory.mktemp("load")
    bank = synthetic_item_bank(seed=6, n_dilemmas=6)
    sim = simulate(root / "data", systems=2, seed=6, item_bank=bank)
    header, *lines = sim.responses_path.read_text().splitlines()
    rng = random.Random(6)
    base = rng.sample(lines, len(lines) // 4)
    third = len(lines) // 3
    shuffled = rng.sample(lines, len(lines))
    parts = {
        "base": base,
        "in-order": lines,
        "shuffled": shuffled,
        "slice": rng.sample(lines[third:], len(lines) - third),
        "reversed": lines[: 2 * third][::-1],
    }
    out: dict[str, object] = {"bank": sim.itembank_path, "n": len(lines), "base_n": len(base)}
    for name, part in parts.items():
        path = root / f"{name}.jsonl"
        path.write_text("\n".join([header, *part]) + "\n")
        out[name] = path
    return out


def _prepare(url: str, files) -> None:
    engine = make_engine(url)
    upgrade(engine)
    ingest_path(engine, files["bank"])
    ingest_path(engine, files["base"])
    engine.dispose()


@contextmanager
def _copies(backend: str, files, tmp_path: Path) -> Iterator[Iterator[str]]:
    """Yield a generator of fresh copies of one prepared store."""
    if backend == "sqlite":
        template = tmp_path / "template.db"
        _prepare(f"sqlite:///{template}", files)

        def sqlite_copies() -> Iterator[str]:
            for i in range(REPETITIONS):
                shutil.copy(template, tmp_path / f"store{i}.db")
                yield f"sqlite:///{tmp_path / f'store{i}.db'}"

        yield sqlite_copies()
        return
    with pg_database() as template_url:
        _prepare(template_url, files)
        template = make_url(template_url).database
        admin = create_engine(_pg_admin_url(), isolation_level="AUTOCOMMIT")
        names: list[str] = []

        def pg_copies() -> Iterator[str]:
            for _ in range(REPETITIONS):
                name = f"cuegap_load_{uuid.uuid4().hex[:12]}"
                with admin.connect() as conn:
                    conn.execute(text(f'CREATE DATABASE "{name}" TEMPLATE "{template}"'))
                names.append(name)
                yield (
                    make_url(template_url).set(database=name).render_as_string(hide_password=False)
                )

        try:
            yield pg_copies()
        finally:
            with admin.connect() as conn:
                for name in names:
                    conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
            admin.dispose()


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_concurrent_ingests_and_analysis(backend: str, files, pool, tmp_path: Path) -> None:
    names = ["in-order", "shuffled", "slice", "reversed"]
    with _copies(backend, files, tmp_path) as copies:
        for rep, url in enumerate(copies):
            jobs = [pool.submit(_ingest_task, url, str(files[n])) for n in names]
            jobs.append(pool.submit(_analyze_task, url))
            *ingests, analysis = [j.result(timeout=120) for j in jobs]
            where = f"{backend}, repetition {rep + 1}"
            errors = [r for r in [*ingests, analysis] if r[0] != "ok"]
            assert not errors, f"{where}: {errors}"
            for _, read, stored, duplicate, quarantined in ingests:
                assert read == stored + duplicate + quarantined, where
                assert quarantined == 0, where
            # Nothing lost, nothing duplicated: the passes stored exactly the missing keys.
            assert sum(r[2] for r in ingests) == files["n"] - files["base_n"], where
            engine = make_engine(url)
            with engine.connect() as conn:
                rows, keys = conn.execute(
                    select(func.count(), func.count(func.distinct(Response.response_key)))
                ).one()
                statuses = conn.execute(select(IngestBatch.status)).scalars().all()
            assert (rows, keys) == (files["n"], files["n"]), where
            assert set(statuses) == {"completed"}, where
            # One snapshot: the analysis's tables count the same could-be responses.
            counted = analysis[1]
            assert counted["abstention"] == counted["status"], where
            final = load_store_data(engine)
            assert _could_be(final)["abstention"] == _could_be(final)["status"]
            engine.dispose()
