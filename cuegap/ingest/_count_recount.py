"""``cuegap verify --recount``: count the counted files again and compare, row for row.

Each count run (the files one ``cuegap count`` resolved duplicates across, named by the
``count`` token in their batches' ``mapping``) is run again through the same Spark job and
the design's partition parser, on the files where they were counted. Its tally, per file
and key, and each file's read / stored / duplicate / quarantined must equal what the store
holds.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from sqlalchemy import select
from sqlalchemy.engine import Engine
from sqlmodel import SQLModel

from cuegap.ingest._count_store import start_spark
from cuegap.ingest._records import IngestError
from cuegap.ingest._spark_count import run_count_job
from cuegap.schema import IngestBatch, System, counted_batches


def _stored(engine: Engine, counting: Any, batch_ids: list[int]) -> dict[tuple, int]:
    table = SQLModel.metadata.tables[counting.tally]
    cols = [table.c.batch_id, *(table.c[k] for k in counting.keys), table.c.n]
    out: dict[tuple, int] = {}
    with engine.connect() as conn:
        for row in conn.execute(select(*cols).where(table.c.batch_id.in_(batch_ids))):
            key = (int(row[0]), tuple(row[1:-1]))
            out[key] = out.get(key, 0) + int(row[-1])
    return out


def recount_problems(
    engine: Engine,
    counting: Any,
    *,
    spark: Any = None,
    master: str = "local[2]",
    conf: Mapping[str, str] | None = None,
) -> tuple[list[str], int]:
    """Recount every file counted into ``counting``'s tally and name what differs.

    Parameters
    ----------
    engine : Engine
        The store.
    counting : cuegap.designs.Counting
        The design's tally and partition parser.
    spark : pyspark.sql.SparkSession, optional
        A session to run on; by default the active one, else one started with ``master``
        and ``conf`` and stopped at the end.
    master, conf
        As for :func:`cuegap.ingest.count_files`.

    Returns
    -------
    (list of str, int)
        One sentence per difference or file that could not be recounted, and how many files
        were recounted.
    """
    b = IngestBatch.__table__.c
    with engine.connect() as conn:
        batches = counted_batches(conn, counting.tally)
        if not batches:
            return [], 0
        rows = {
            r.id: r
            for r in conn.execute(
                select(
                    b.id, b.source_path, b.lines_read, b.stored, b.duplicate, b.quarantined
                ).where(b.id.in_(list(batches)))
            )
        }
        system_ids = dict(conn.execute(select(System.name, System.id)).all())
        context = counting.context(conn)
    runs: dict[str, list[int]] = {}
    for batch_id, mapping in batches.items():  # in id order: the order files were counted
        runs.setdefault(str(mapping.get("count") or f"batch {batch_id}"), []).append(batch_id)
    problems: list[str] = []
    done = 0
    if spark is None:
        from pyspark.sql import SparkSession

        spark = SparkSession.getActiveSession()
    own = spark is None
    if own:
        spark = start_spark(master, conf)
    try:
        for ids in runs.values():
            paths = [rows[i].source_path for i in ids]
            gone = [p for p in paths if "://" not in p and not Path(p).is_file()]
            if gone:
                problems += [f"counted file {p} is missing: it cannot be recounted" for p in gone]
                continue
            try:
                result = run_count_job(spark, counting, context, paths)
            except (IngestError, OSError, ValueError) as exc:
                problems.append(f"recount of {', '.join(paths)} failed: {exc}")
                continue
            done += len(paths)
            problems += _compare(engine, counting, ids, rows, result, system_ids)
    finally:
        if own:
            spark.stop()
    return problems, done


def _compare(engine, counting, ids, rows, result, system_ids) -> list[str]:
    problems = []
    for i, f in enumerate(result.files):
        r = rows[ids[i]]
        have = (r.lines_read, r.stored, r.duplicate, r.quarantined)
        want = (f.read, f.stored, f.duplicate, f.quarantined)
        if have != want:
            problems.append(
                f"counted file {r.source_path} (batch {ids[i]}): recounted read {want[0]:,} = "
                f"stored {want[1]:,} + duplicate {want[2]:,} + quarantined {want[3]:,}, the "
                f"store says {have[0]:,} = {have[1]:,} + {have[2]:,} + {have[3]:,}"
            )
    recounted: dict[tuple, int] = {}
    for (i, key), n in result.tally:
        system = system_ids.get(key[0], f"unknown system {key[0]!r}")
        recounted[(ids[i], (system, *key[1:]))] = n
    stored = _stored(engine, counting, ids)
    for batch_id in ids:
        mine = {k: n for k, n in stored.items() if k[0] == batch_id}
        again = {k: n for k, n in recounted.items() if k[0] == batch_id}
        differ = len(mine.keys() ^ again.keys()) + sum(
            1 for k in mine.keys() & again.keys() if mine[k] != again[k]
        )
        if differ:
            problems.append(
                f"counted file {rows[batch_id].source_path} (batch {batch_id}): {differ} "
                f"{counting.tally} row(s) differ from a recount of the file"
            )
    return problems
