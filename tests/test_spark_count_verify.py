"""``cuegap verify`` on a store filled by ``cuegap count``: seals, files, recount, atomicity.

The hand-written tiny bank and responses (``tests/data``) are counted on Spark (local mode,
one session for the module), with a second file holding a duplicate, a conflict and a bad
line. A counted store verifies intact; altering one tally row, a counted file or deleting
one is named; a recount agrees until the tally is edited. A count whose writes fail midway
(a real trigger in the database refuses tally rows) leaves nothing behind. Skipped, with
the reason, where pyspark or Java is missing.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import DATA, pg_database
from sqlalchemy import func, select, text
from typer.testing import CliRunner

from cuegap.cli import app
from cuegap.cli._count import spark_problem
from cuegap.compliance import verify
from cuegap.schema import (
    IngestBatch,
    LedgerEntry,
    Quarantine,
    ResponseTally,
    Run,
    System,
    make_engine,
    upgrade,
)

PROBLEM = spark_problem()
REQUIRE_SPARK = os.environ.get("CUEGAP_REQUIRE_SPARK") == "1"
pytestmark = pytest.mark.skipif(
    PROBLEM is not None and not REQUIRE_SPARK, reason=f"Spark tests: {PROBLEM}"
)


@pytest.fixture(scope="module")
def spark() -> Iterator[object]:
    from cuegap.ingest import start_spark

    session = start_spark("local[1]")
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture
def files(tmp_path: Path) -> list[Path]:
    """The tiny responses, and a file with a duplicate, a conflict and a bad line."""
    first = tmp_path / "tiny.jsonl"
    shutil.copy(DATA / "tiny_responses.jsonl", first)
    lines = first.read_text().splitlines()
    record = json.loads(lines[1])
    second = tmp_path / "more.jsonl"
    second.write_text(
        "\n".join(
            [
                lines[1],  # a duplicate of tiny.jsonl line 2
                json.dumps(dict(record, response="option2")),  # a conflict with it
                json.dumps(dict(record, repeat=1)),  # counted
                "{not json",
            ]
        )
        + "\n"
    )
    return [first, second]


@pytest.fixture(params=["sqlite", "postgresql"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'counted.db'}"
        return
    with pg_database() as pg:
        yield pg


def _counted_store(url: str, files: list[Path], spark: object):
    from cuegap.designs import get
    from cuegap.ingest import count_files, ingest_path

    engine = make_engine(url)
    upgrade(engine)
    ingest_path(engine, DATA / "tiny_bank.json")
    summaries = count_files(
        engine, get("dilemma").spark_counting(), [str(p) for p in files], spark=spark
    )
    return engine, summaries


def test_verify_checks_a_counted_tally_and_its_files(spark, files, url) -> None:
    """Intact, then each alteration named: a tally row, a file's bytes, a missing file."""
    from cuegap.designs import get
    from cuegap.ingest import recount_problems

    engine, summaries = _counted_store(url, files, spark)
    assert [(s.read, s.stored, s.duplicate, s.quarantined) for s in summaries] == [
        (10, 10, 0, 0),  # tiny_responses.jsonl: a header and 10 good records
        (4, 1, 1, 2),
    ]
    result = verify(engine)
    assert result.problems == [] and result.ok
    assert [line.endswith("size and SHA-256 as counted") for line in result.counted] == [
        True,
        True,
    ]
    counting = get("dilemma").spark_counting()
    assert recount_problems(engine, counting, spark=spark) == ([], 2)

    t = ResponseTally.__table__
    with engine.begin() as conn:  # one row of the second file's tally: counted once more
        batch = summaries[1].batch_id
        row = conn.execute(select(func.min(t.c.id)).where(t.c.batch_id == batch)).scalar()
        conn.execute(t.update().where(t.c.id == row).values(n=t.c.n + 1))
    problems = verify(engine).problems
    assert any(
        p.startswith(f"ingest batch {batch}: the tally rows counted from its file changed")
        for p in problems
    ), problems
    assert any("more.jsonl" in p and "sum to 2, the file counted 1" in p for p in problems)
    again, n = recount_problems(engine, counting, spark=spark)
    assert n == 2 and len(again) == 1 and "more.jsonl (batch" in again[0]
    assert "1 response_tally row(s) differ from a recount" in again[0]

    with files[0].open("a") as fh:  # the first file grows after it was counted
        fh.write(json.dumps({"system": "sys-a", "item_id": "neutral-d1", "probe": "main"}))
    files[1].unlink()
    problems = verify(engine).problems
    assert any("tiny.jsonl" in p and "changed since it was counted" in p for p in problems)
    assert any("more.jsonl" in p and "is missing" in p for p in problems)
    engine.dispose()


def test_a_count_that_fails_midway_leaves_nothing(spark, files, url) -> None:
    """A trigger refuses tally rows, after runs, batches, systems and quarantined lines
    were written in the same transaction: all of them are rolled back."""
    from cuegap.designs import get
    from cuegap.ingest import count_files, ingest_path

    engine = make_engine(url)
    upgrade(engine)
    ingest_path(engine, DATA / "tiny_bank.json")
    with engine.begin() as conn:
        if engine.dialect.name == "sqlite":
            conn.execute(
                text(
                    "CREATE TRIGGER refuse BEFORE INSERT ON response_tally "
                    "BEGIN SELECT RAISE(ABORT, 'tally refused'); END"
                )
            )
        else:
            conn.execute(
                text(
                    "CREATE FUNCTION refuse() RETURNS trigger AS $$ BEGIN "
                    "RAISE EXCEPTION 'tally refused'; END $$ LANGUAGE plpgsql"
                )
            )
            conn.execute(
                text(
                    "CREATE TRIGGER refuse BEFORE INSERT ON response_tally "
                    "FOR EACH ROW EXECUTE FUNCTION refuse()"
                )
            )
        entries = conn.execute(select(func.count()).select_from(LedgerEntry)).scalar()
    with pytest.raises(Exception, match="tally refused"):
        count_files(engine, get("dilemma").spark_counting(), [str(p) for p in files], spark=spark)
    with engine.connect() as conn:
        for table in (Run, IngestBatch, Quarantine, System, ResponseTally):
            assert conn.execute(select(func.count()).select_from(table)).scalar() == 0, table
        assert conn.execute(select(func.count()).select_from(LedgerEntry)).scalar() == entries
    assert verify(engine).ok
    engine.dispose()


def test_verify_recount_command(spark, files, tmp_path: Path) -> None:
    """``cuegap verify --recount`` states each file's check and the recount's result."""
    url = f"sqlite:///{tmp_path / 'cli.db'}"
    engine, _ = _counted_store(url, files, spark)
    engine.dispose()
    out = CliRunner().invoke(app, ["--db", url, "verify", "--recount"], env={"COLUMNS": "300"})
    assert out.exit_code == 0, out.output
    assert out.output.count("size and SHA-256 as counted") == 2
    assert "2 file(s) recounted into response_tally" in out.output
    assert "the tally is the same, row for row" in out.output


def test_provenance_names_the_counted_files(spark, files, tmp_path: Path) -> None:
    """The report's provenance lists each counted file with its digest, size and engine,
    and says that the raw lines stay where they are."""
    import hashlib

    import pyspark
    from jinja2 import Environment, FileSystemLoader, StrictUndefined

    import cuegap
    from cuegap.reports import counted_rows
    from cuegap.schema import provenance

    engine, _ = _counted_store(f"sqlite:///{tmp_path / 'prov.db'}", files, spark)
    rows = counted_rows(provenance(engine).batches)
    engine.dispose()
    want = [
        (str(p.resolve()), hashlib.sha256(p.read_bytes()).hexdigest(), f"{p.stat().st_size:,}")
        for p in files
    ]
    assert [(r["source"], r["sha256"], r["bytes"]) for r in rows] == want
    assert {r["engine"] for r in rows} == {f"spark {pyspark.__version__}"}
    assert [(r["read"], r["counted"], r["duplicate"], r["quarantined"]) for r in rows] == [
        ("10", "10", "0", "0"),
        ("4", "1", "1", "2"),
    ]
    env = Environment(
        loader=FileSystemLoader(Path(cuegap.__file__).parent / "templates"),
        autoescape=True,
        undefined=StrictUndefined,
    )
    html = env.get_template("partials/_counted_files.html.j2").render(cover={"counted": rows})
    assert "Raw lines stay in the lake: 2 file(s) were counted" in html
    assert all(sha in html for _path, sha, _size in want)
    assert (
        "_counted_files"
        in (Path(cuegap.__file__).parent / "templates/partials/_cover.html.j2").read_text()
    )


@pytest.fixture(params=["sqlite", "postgresql"])
def two_urls(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, str]]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'a.db'}", f"sqlite:///{tmp_path / 'b.db'}"
        return
    with pg_database() as a, pg_database() as b:
        yield a, b


def test_parquet_counts_as_its_jsonl(spark, two_urls, tmp_path: Path) -> None:
    """The same records written as JSONL and as Parquet (pyarrow) count to the same tally,
    the same read / counted / duplicate / quarantined and the same quarantine reasons."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from cuegap.schema import TALLY_KEYS

    lines = (DATA / "tiny_responses.jsonl").read_text().splitlines()[1:]  # no header
    records = [json.loads(x) for x in lines]
    records += [
        dict(records[0]),  # a duplicate
        dict(records[0], response="option2"),  # a conflict
        dict(records[0], repeat=2),  # counted: a repeat
        {k: v for k, v in records[1].items() if k != "item_id"},  # no item_id: quarantined
        dict(records[1], item_id="no-such-item"),  # quarantined
    ]
    jsonl = tmp_path / "records.jsonl"
    jsonl.write_text("".join(json.dumps(r) + "\n" for r in records))
    parquet = tmp_path / "records.parquet"
    columns = list(dict.fromkeys(k for r in records for k in r))  # every field, a column
    pq.write_table(pa.table({k: [r.get(k) for r in records] for k in columns}), parquet)
    tallies, counts, reasons = [], [], []
    for url, path in zip(two_urls, (jsonl, parquet), strict=True):
        engine, summaries = _counted_store(url, [path], spark)
        t = ResponseTally.__table__.c
        keys = [t[k] for k in TALLY_KEYS]
        with engine.connect() as conn:
            tallies.append(
                {
                    tuple(r[:-1]): int(r[-1])
                    for r in conn.execute(select(*keys, func.sum(t.n)).group_by(*keys))
                }
            )
            q = Quarantine
            reasons.append(
                list(conn.execute(select(q.line_no, q.field, q.reason).order_by(q.line_no)))
            )
        counts.append([(s.read, s.stored, s.duplicate, s.quarantined) for s in summaries])
        assert verify(engine).ok
        engine.dispose()
    assert counts[0] == counts[1] == [(15, 11, 1, 3)]
    assert sum(tallies[0].values()) == 11 and tallies[0] == tallies[1]
    assert len(reasons[0]) == 3 and reasons[0] == reasons[1]
