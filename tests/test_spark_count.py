"""``cuegap count --engine spark`` gives the tally ``cuegap ingest`` gives, row for row.

The dilemma simulator's output plus a file of bad lines (invalid JSON, an unknown item, a
probe a neutral item does not take, a missing field, duplicates and conflicts within the
file and with the simulator's file, a truncated last line) is ingested into one fresh store
and counted on Spark (local mode, one session for the module) into another. The tallies,
summed per key, must be equal; so must each file's read / stored / duplicate /
quarantined, the quarantined lines with their fields and reasons, and the ``macro_gap``
that ``cuegap analyze`` stores. Skipped, with the reason, where pyspark or Java is missing.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import DATA, pg_database
from sqlalchemy import func, select
from typer.testing import CliRunner

from cuegap.cli import app
from cuegap.cli._count import spark_problem
from cuegap.schema import TALLY_KEYS, IngestBatch, Quarantine, ResponseTally, make_engine, upgrade

PROBLEM = spark_problem()
#: ``.ci/run`` installs Spark and sets this: there a missing Spark fails instead of skipping.
REQUIRE_SPARK = os.environ.get("CUEGAP_REQUIRE_SPARK") == "1"
pytestmark = pytest.mark.skipif(
    PROBLEM is not None and not REQUIRE_SPARK, reason=f"Spark tests: {PROBLEM}"
)
runner = CliRunner()


@pytest.fixture(scope="module")
def spark() -> Iterator[object]:
    """One local Spark session for the module (starting one costs seconds)."""
    from cuegap.ingest import start_spark

    start = time.perf_counter()
    session = start_spark("local[2]")
    session.sparkContext.setLogLevel("ERROR")
    print(f"\nSpark {session.version} session started in {time.perf_counter() - start:.1f}s")
    yield session
    session.stop()


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Path]]:
    """The simulator's item bank and responses, and a file of bad lines answering it."""
    from cuegap.designs.dilemma.simulate import simulate

    out = tmp_path_factory.mktemp("sim")
    simulate(out, systems=2, seed=7)
    responses = out / "responses.jsonl"
    lines = responses.read_text().splitlines()
    first, second = json.loads(lines[1]), json.loads(lines[2])
    other = dict(second, response="a different answer")
    same_file = dict(first, repeat=7)
    bad = [
        lines[1],  # a duplicate of the simulator's line 2 (another file)
        json.dumps(other),  # a conflict with the simulator's line 3
        json.dumps(same_file),  # counted
        json.dumps(same_file),  # a duplicate within this file
        json.dumps(dict(same_file, response="changed")),  # a conflict within this file
        "{not json",
        json.dumps(dict(first, item_id="no-such-item")),
        json.dumps(dict(first, probe="could_be", individual="A")),  # neutral: main only
        json.dumps({"system": "x", "probe": "main", "response": "option1"}),  # no item_id
        json.dumps(dict(first, system="sim-system-03", repeat=1)),  # a new system
        '{"system": "sim-system-01", "item_id": "neutral-1"',  # truncated, no newline
    ]
    bad_file = out / "bad.jsonl"
    bad_file.write_text("\n".join(bad))
    return out / "itembank.json", [responses, bad_file]


def _tally(engine) -> dict[tuple, int]:
    t = ResponseTally.__table__.c
    keys = [t[k] for k in TALLY_KEYS]
    query = select(*keys, func.sum(t.n)).group_by(*keys)
    with engine.connect() as conn:
        return {tuple(r[:-1]): int(r[-1]) for r in conn.execute(query)}


def _batches(engine) -> list[tuple]:
    b = IngestBatch
    cols = (b.source_sha256, b.lines_read, b.stored, b.duplicate, b.quarantined, b.status)
    with engine.connect() as conn:
        return [tuple(r) for r in conn.execute(select(*cols).order_by(b.id))]


def _quarantine(engine) -> list[tuple]:
    q = Quarantine
    cols = (q.source_path, q.line_no, q.field, q.reason, q.raw)
    with engine.connect() as conn:
        return [tuple(r) for r in conn.execute(select(*cols).order_by(q.source_path, q.line_no))]


def _cli(url: str, *args: str) -> str:
    out = runner.invoke(app, ["--db", url, *args], env={"COLUMNS": "200"})
    assert out.exit_code == 0, out.output
    return out.output


def _macro_gap(url: str, tmp_path: Path, name: str) -> str:
    """``cuegap analyze`` on the store, then its exported ``macro_gap`` table."""
    _cli(url, "analyze", "--design", "dilemma")
    _cli(url, "export", "macro_gap", "--out", str(tmp_path / name))
    return (tmp_path / name).read_text()


@pytest.fixture(params=["sqlite", "postgresql"])
def urls(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, str]]:
    """Two fresh store URLs on one backend: one to ingest into, one to count into."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'ingested.db'}", f"sqlite:///{tmp_path / 'counted.db'}"
        return
    with pg_database() as ingested, pg_database() as counted:
        yield ingested, counted


def test_spark_counts_equal_ingest(spark, files, urls, tmp_path: Path) -> None:
    from cuegap.designs import get
    from cuegap.ingest import count_files, ingest_path

    bank, paths = files
    ingested, counted = (make_engine(u) for u in urls)
    for engine in (ingested, counted):
        upgrade(engine)
        ingest_path(engine, bank)
    for path in paths:
        ingest_path(ingested, path)
    start = time.perf_counter()
    summaries = count_files(
        counted, get("dilemma").spark_counting(), [str(p) for p in paths], spark=spark
    )
    print(f"counted {sum(s.read for s in summaries):,} lines in {time.perf_counter() - start:.1f}s")

    want, have = _tally(ingested), _tally(counted)
    assert sum(have.values()) > 40_000
    assert have == want
    assert _batches(counted) == _batches(ingested)
    assert [s.balanced for s in summaries] == [True, True]
    bad = summaries[1]
    assert (bad.stored, bad.duplicate, bad.quarantined) == (2, 2, 7)
    assert _quarantine(counted) == _quarantine(ingested)
    with counted.connect() as conn:
        mapping = list(conn.execute(select(IngestBatch.mapping).order_by(IngestBatch.id)).scalars())
    import pyspark

    sizes = [p.stat().st_size for p in paths]
    assert [(m["engine"], m["engine_version"], m["size"]) for m in mapping] == [
        ("spark", pyspark.__version__, size) for size in sizes
    ]
    gap_ingested = _macro_gap(urls[0], tmp_path, "ingested.csv")
    gap_counted = _macro_gap(urls[1], tmp_path, "counted.csv")
    assert gap_counted.count("\n") > 2 and gap_counted == gap_ingested
    ingested.dispose()
    counted.dispose()


def test_count_refuses_a_file_already_in_the_store(spark, files, tmp_path: Path) -> None:
    from cuegap.designs import get
    from cuegap.ingest import count_files, ingest_path

    bank, paths = files
    engine = make_engine(f"sqlite:///{tmp_path / 'store.db'}")
    upgrade(engine)
    ingest_path(engine, bank)
    ingest_path(engine, paths[1])
    with pytest.raises(ValueError, match="already in the store"):
        count_files(engine, get("dilemma").spark_counting(), [str(paths[1])], spark=spark)


def test_count_command_counts_into_the_store(spark, files, tmp_path: Path) -> None:
    """The thin CLI: item bank ingested, responses counted, then ``status`` and ``analyze``."""
    bank, paths = files
    url = f"sqlite:///{tmp_path / 'cli.db'}"
    _cli(url, "ingest", str(bank))
    out = _cli(url, "count", "--engine", "spark", "--design", "dilemma", *map(str, paths))
    assert "bad.jsonl (generic): read 11 = stored 2 + duplicate 2 + quarantined 7" in out
    assert "counted on Spark" in out
    counted = sum(json.loads(x).get("format") is None for x in paths[0].read_text().splitlines())
    status = _cli(url, "status")  # read from the tally: the responses are not stored
    assert f"{counted + 2:,} responses from 2 files" in status
    _cli(url, "analyze")  # the store holds the dilemma design's tally, and nothing else


def test_count_command_refuses_what_it_cannot_do(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'cli.db'}"
    for args, message in (
        (["--engine", "duckdb", "x.jsonl"], "unknown counting engine 'duckdb'"),
        (
            ["--design", "prompt-variance", "x.jsonl"],
            "design 'prompt-variance' cannot be counted on Spark yet",
        ),
        (["--conf", "novalue", "x.jsonl"], "--conf takes KEY=VALUE"),
        (["x.jsonl"], "x.jsonl: no such file"),
        ([str(tmp_path)], "a folder (name its files)"),
        (
            ["--design", "dilemma", str(DATA / "tiny_bank.json")],
            "counting on Spark reads generic files",
        ),
        ([str(DATA / "tiny_bank.json")], "designs counted on Spark: dilemma, qa"),
    ):
        out = runner.invoke(app, ["--db", url, "count", *args], env={"COLUMNS": "200"})
        assert out.exit_code == 2 and message in out.output, out.output
    assert not (tmp_path / "cli.db").exists()  # refused before a store was created


def test_count_names_a_file_it_cannot_read(spark, files, tmp_path: Path) -> None:
    """A header ingest refuses (an unknown version) is refused by name, nothing stored."""
    from cuegap.designs import get
    from cuegap.ingest import IngestError, count_files, generic, ingest_path

    bank, _paths = files
    bad = tmp_path / "future.jsonl"
    bad.write_text('{"format": "cuegap-responses", "version": 99}\n')
    with pytest.raises(IngestError) as ingest_says:
        generic.read(bad.resolve())
    engine = make_engine(f"sqlite:///{tmp_path / 'store.db'}")
    upgrade(engine)
    ingest_path(engine, bank)
    with pytest.raises(IngestError) as count_says:
        count_files(engine, get("dilemma").spark_counting(), [str(bad)], spark=spark)
    assert "unknown cuegap-responses version 99" in str(count_says.value)
    assert str(count_says.value) == str(ingest_says.value)
    assert _batches(engine) == []
