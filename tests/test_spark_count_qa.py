"""``cuegap count --engine spark`` on QA results gives the tally ``cuegap ingest`` gives.

The QA simulator's answers plus a file of bad lines (a damaged first line before a header
that names the system, invalid JSON, an unknown item and bank, a label the bank
disagrees with, a runner prediction that is no option, a non-string factor, duplicates and
conflicts within the file and with the simulator's file, a new system, a truncated last
line) are ingested into one fresh store and counted on Spark (local mode, one session for
the module) into another, on SQLite and PostgreSQL. The QA tallies summed per key must be
equal, with each file's read / stored / duplicate / quarantined, the quarantined lines
with their fields and reasons, and the tables ``cuegap analyze --design qa`` stores; then
``verify --recount`` finds the counted store intact. Skipped, with the reason, where
pyspark or Java is missing.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import pg_database
from sqlalchemy import func, select
from typer.testing import CliRunner

from cuegap.cli import app
from cuegap.cli._count import spark_problem
from cuegap.schema import (
    QA_TALLY_KEYS,
    IngestBatch,
    QATally,
    Quarantine,
    System,
    make_engine,
    upgrade,
)

PROBLEM = spark_problem()
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
    """The QA simulator's item bank and answers, and a file of bad lines answering it."""
    from cuegap.designs.qa._simulate import simulate_qa

    out = tmp_path_factory.mktemp("qa_sim")
    sim = simulate_qa(out, systems=2, templates_per_dimension=2, seed=7)
    lines = sim.responses_path.read_text().splitlines()
    first, second = json.loads(lines[0]), json.loads(lines[1])
    mine = {k: v for k, v in first.items() if k != "system"}  # the header's system
    again = dict(mine, repeat=7)
    bad = [
        "{damaged first line",  # quarantined; the header is the first line that parses
        json.dumps({"format": "bbq-results", "system": "sim-qa-system-01"}),
        lines[0],  # a duplicate of the simulator's line 1 (another file)
        json.dumps(dict(second, model_output="(a) surely")),  # conflicts with its line 2
        json.dumps(again),  # counted, under the header's system
        json.dumps(again),  # a duplicate within this file
        json.dumps(dict(again, model_output="something else")),  # a conflict within it
        "{not json",
        json.dumps(dict(mine, item_id="no-such-item")),
        json.dumps(dict(mine, item_bank="no-such-bank")),
        json.dumps(dict(mine, repeat=8, label=3)),  # the bank's gold answer is another
        json.dumps(dict(mine, repeat=9, predicted_index=9)),  # not an option
        json.dumps(dict(mine, repeat=10, factors={"choice_format": ["x"]})),
        json.dumps(dict(first, system="sim-qa-system-03", repeat=1)),  # a new system
        json.dumps(dict(mine, repeat=11, model_output="qwerty")),  # unparsable
        '{"system": "sim-qa-system-01", "item_id": "age-0000-explicit-amb-negative"',
    ]
    bad_file = out / "bad_results.jsonl"
    bad_file.write_text("\n".join(bad))
    return sim.itembank_path, [sim.responses_path, bad_file]


def _tally(engine) -> dict[tuple, int]:
    """The QA tally summed per key, with the system's name in place of its id."""
    t, s = QATally.__table__.c, System.__table__.c
    keys = [s.name, *(t[k] for k in QA_TALLY_KEYS[1:])]
    query = select(*keys, func.sum(t.n)).join_from(QATally, System).group_by(*keys)
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
    out = runner.invoke(app, ["--db", url, *args], env={"COLUMNS": "300"})
    assert out.exit_code == 0, out.output
    return out.output


def _analysis(url: str, tmp_path: Path, name: str) -> list[str]:
    """``cuegap analyze --design qa`` on the store, then its exported result tables."""
    _cli(url, "analyze", "--design", "qa")
    tables = []
    for table in ("qa_system_scores", "qa_cue_gap", "verdicts"):
        path = tmp_path / f"{name}-{table}.csv"
        _cli(url, "export", table, "--out", str(path))
        tables.append(path.read_text())
    return tables


@pytest.fixture(params=["sqlite", "postgresql"])
def urls(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, str]]:
    """Two fresh store URLs on one backend: one to ingest into, one to count into."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'ingested.db'}", f"sqlite:///{tmp_path / 'counted.db'}"
        return
    with pg_database() as ingested, pg_database() as counted:
        yield ingested, counted


def test_spark_counts_equal_qa_ingest(spark, files, urls, tmp_path: Path) -> None:
    from cuegap.designs import get
    from cuegap.ingest import count_files, ingest_path, recount_problems

    bank, paths = files
    ingested, counted = (make_engine(u) for u in urls)
    for engine in (ingested, counted):
        upgrade(engine)
        ingest_path(engine, bank)
    for path in paths:
        ingest_path(ingested, path)
    counting = get("qa").spark_counting()
    summaries = count_files(counted, counting, [str(p) for p in paths], spark=spark)

    want, have = _tally(ingested), _tally(counted)
    assert sum(have.values()) == 1536 + 3  # the simulator's answers, and 3 new ones
    assert have == want
    assert _batches(counted) == _batches(ingested)
    assert [s.balanced for s in summaries] == [True, True]
    bad = summaries[1]
    # 16 lines less the header: 3 counted, 2 duplicates, 10 quarantined (2 conflicts)
    assert (bad.read, bad.stored, bad.duplicate, bad.quarantined) == (15, 3, 2, 10)
    quarantined = _quarantine(counted)
    assert quarantined == _quarantine(ingested)
    fields = [q[2] for q in quarantined]
    assert fields.count("model_output") == 2 and "label" in fields and "factors" in fields
    assert any(k[3] == "unparsable" for k in have)  # answers that parse to no option

    tables = _analysis(urls[1], tmp_path, "counted")
    assert all(table.count("\n") > 2 for table in tables)
    assert tables == _analysis(urls[0], tmp_path, "ingested")
    verified = _cli(urls[1], "verify")
    assert verified.count("size and SHA-256 as counted") == 2
    assert recount_problems(counted, counting, spark=spark) == ([], 2)
    ingested.dispose()
    counted.dispose()


def test_count_command_finds_the_qa_design_from_its_files(spark, files, tmp_path: Path) -> None:
    """Without ``--design``, the design whose reader reads the files counts them; ``status``
    reads the counted answers from the tally, and the report's provenance lists the counted
    files."""
    bank, paths = files
    url = f"sqlite:///{tmp_path / 'cli.db'}"
    _cli(url, "ingest", str(bank))
    out = _cli(url, "count", "--engine", "spark", *map(str, paths))
    assert "bad_results.jsonl (bbq-results): read 15 = stored 3 + duplicate 2 + quarantined 10" in (
        out
    )
    status = _cli(url, "status")  # read from the tally: the answers are not stored
    assert "1,539 QA answers" in status and "QA design: answers per system" in status
    _cli(url, "analyze")  # the store holds the QA design's tally, and nothing else
    _cli(url, "report", "--format", "html", "--out", str(tmp_path / "report"))
    html = next((tmp_path / "report").glob("*.html")).read_text()
    assert "Raw lines stay in the lake: 2 file(s) were counted" in html  # its provenance
