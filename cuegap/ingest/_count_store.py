"""Writing what a counting engine found into the store: ``cuegap count``'s driver side.

Each input file becomes a run and an ingest batch, as ``cuegap ingest`` would make them
(name, size in ``mapping``, SHA-256, read = stored + duplicate + quarantined), with
``mapping`` saying which engine and version counted it, which tally it filled, which count
run it was part of and how many quarantined lines are kept. Quarantined lines are kept up
to a sample per file (all are counted). The tally gets one row per file and distinct key
(under the batch of the file the key was first counted in) with its count, and each batch
is sealed in the ledger with its tally rows (:mod:`cuegap.schema._counted`). All of it is
one transaction. Responses themselves stay in the files.
"""

from __future__ import annotations

import os
import sys
import uuid
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from sqlalchemy import insert, select
from sqlalchemy.engine import Connection, Engine
from sqlmodel import SQLModel

from cuegap.ingest._pass import _IngestPass
from cuegap.ingest._response_rules import conflict_reason
from cuegap.ingest._spark_count import FileCount, SparkCounts, _same_file, run_count_job
from cuegap.ingest._sql import _upsert_quarantine
from cuegap.ingest._summary import IngestSummary, utcnow
from cuegap.ingest._validate import storable
from cuegap.ingest.registry import get_reader
from cuegap.schema import IngestBatch, ItemBank, Run, ledger

#: Quarantined lines kept per counted file (the lowest line numbers); all are counted.
QUARANTINE_SAMPLE = 1_000


class _CountedFile(_IngestPass):
    """The run and batch of one counted file; nothing is streamed (``_flush`` unused)."""

    def __init__(self, engine: Engine, given: str, reader: Any) -> None:
        local = _same_file(given if "://" in given else Path(given).resolve().as_uri())
        super().__init__(engine, Path(local), reader, 1)
        self.source = storable(local)


def start_spark(master: str = "local[2]", conf: Mapping[str, str] | None = None) -> Any:
    """A Spark session for counting, whose Python workers run this Python (``sys.executable``,
    so they import this cuegap) unless ``spark.pyspark.python`` is set in ``conf``.

    Parameters
    ----------
    master : str
        Spark's master URL.
    conf : mapping of str to str, optional
        Further Spark settings.

    Returns
    -------
    pyspark.sql.SparkSession
    """
    from pyspark.sql import SparkSession

    conf = {"spark.ui.showConsoleProgress": "false", **(conf or {})}
    # PySpark reads the workers' Python from the environment when it starts the context
    os.environ["PYSPARK_PYTHON"] = conf.pop("spark.pyspark.python", sys.executable)
    builder = SparkSession.builder.master(master).appName("cuegap count")
    for key, value in conf.items():
        builder = builder.config(key, value)
    return builder.getOrCreate()


def count_files(
    engine: Engine,
    counting: Any,
    paths: Sequence[str],
    *,
    spark: Any = None,
    master: str = "local[2]",
    conf: Mapping[str, str] | None = None,
    sample: int = QUARANTINE_SAMPLE,
    report: Callable[[str], None] | None = None,
) -> list[IngestSummary]:
    """Count raw result files on Spark into the store's tally.

    Parameters
    ----------
    engine : Engine
        An initialised store holding the item banks the files answer.
    counting : cuegap.designs.Counting
        The design's tally and partition parser (``design.spark_counting()``).
    paths : sequence of str
        Result files, local paths or URLs Spark reads; a natural key met twice is counted
        once, in this order, as ``cuegap ingest`` of the files in this order would.
    spark : pyspark.sql.SparkSession, optional
        A session to run on; by default the process's active session, else one started
        with ``master`` and ``conf`` and stopped at the end.
    master : str
        Spark's master URL when a session is started (``local[2]``, ``spark://host:7077``).
    conf : mapping of str to str, optional
        Further Spark settings (``spark.executor.memory`` ...).
    sample : int
        Quarantined lines kept per file.
    report : callable, optional
        Called with a line of progress, and with each of the design's notes on what its
        analyses cannot see of counted files (``counting.notes``).

    Returns
    -------
    list of IngestSummary
        One per file, in order, with ``read == stored + duplicate + quarantined``.

    Raises
    ------
    ValueError
        When a file was already ingested or counted into this store, or named twice.
    """
    with engine.connect() as conn:
        context = counting.context(conn)
    if spark is None:  # a session already running in this process is used, not stopped
        from pyspark.sql import SparkSession

        spark = SparkSession.getActiveSession()
    own = spark is None
    if own:
        spark = start_spark(master, conf)
    try:
        if report:
            report(f"counting {len(paths)} file(s) on Spark {spark.version} ({master})")
        result = run_count_job(spark, counting, context, paths, sample=sample)
    finally:
        if own:
            spark.stop()
    summaries = write_counts(engine, counting, result, sample=sample)
    if counting.notes is not None and report is not None:
        with engine.connect() as conn:
            for line in counting.notes(conn, [s.batch_id for s in summaries]):
                report(line)
    return summaries


def write_counts(
    engine: Engine, counting: Any, result: SparkCounts, *, sample: int
) -> list[IngestSummary]:
    """Store a job's per-file runs, batches, quarantine sample and tally, in one transaction.

    Each file's batch is sealed in the ledger with the tally rows first counted in it, so a
    failure anywhere leaves nothing of the count behind.
    """
    reader = get_reader(counting.reader)
    seen: dict[str, str] = {}
    for f in result.files:
        if f.sha256 in seen:
            raise ValueError(
                f"{f.path}: the same content as {seen[f.sha256]} (sha256 {f.sha256[:12]}…); "
                "count each file once"
            )
        seen[f.sha256] = f.path
    token = uuid.uuid4().hex  # which batches one count resolved duplicates across
    table = SQLModel.metadata.tables[counting.tally]
    conflict = counting.conflict or conflict_reason
    with engine.begin() as conn:
        ledger.lock_ledger(conn)  # SQLite: the write lock before anything is read
        for f in result.files:
            if conn.execute(select(Run.id).where(Run.source_sha256 == f.sha256)).first():
                raise ValueError(
                    f"{f.path}: this file (sha256 {f.sha256[:12]}…) is already in the store; "
                    "count files into a store that has not ingested or counted them"
                )
        sources: list[str] = []
        systems: dict[str, int] = {}
        done = []
        for f in result.files:
            counted = _CountedFile(engine, f.path, reader)
            counted.mapping = {
                "engine": "spark",
                "engine_version": result.engine_version,
                "size": f.size,
                "quarantine_kept": min(sample, f.quarantined),
                "tally": counting.tally,
                "count": token,
            }
            sources.append(counted.source)
            _write_file(conn, counted, f, result.engine_version, sources, systems, conflict)
            done.append(counted)
        rows = []
        for (i, key), n in sorted(result.tally, key=lambda t: (t[0][0], repr(t[0][1]))):
            values = dict(zip(counting.keys, (systems[key[0]], *key[1:]), strict=True))
            rows.append({"batch_id": done[i].batch_id, **values, "n": n})
        for start in range(0, len(rows), 5_000):
            conn.execute(table.insert(), rows[start : start + 5_000])
        for counted in done:  # sealed with the tally rows counted in it
            ledger.record(conn, "batch", counted.batch_id)
    return [counted.summary for counted in done]


def _write_file(
    conn: Connection,
    done: _CountedFile,
    f: FileCount,
    version: str,
    sources: list[str],
    systems: dict[str, int],
    conflict: Callable[[str], str],
) -> None:
    """One counted file's run, batch (completed, with its counts) and quarantine sample."""
    done.sha, done.info = f.sha256, f.run
    info = f.run
    bank_id = None
    if info.item_bank:
        bank_id = conn.execute(select(ItemBank.id).where(ItemBank.name == info.item_bank)).scalar()
    now = utcnow()
    done.run_id = conn.execute(
        insert(Run).returning(Run.id),
        {
            "source_sha256": f.sha256,
            "source_path": done.source,
            "format": done.reader.name,
            "runner": info.runner,
            "runner_version": info.runner_version,
            "bank_id": bank_id,
            "started_at": info.started_at,
            "settings": info.settings,
            "ingested_at": now,
        },
    ).scalar_one()
    done.batch_id = conn.execute(
        insert(IngestBatch).returning(IngestBatch.id),
        {
            "run_id": done.run_id,
            "source_path": done.source,
            "source_sha256": f.sha256,
            "format": done.reader.name,
            "status": "completed",
            "lines_read": f.read,
            "stored": f.stored,
            "duplicate": f.duplicate,
            "quarantined": f.quarantined,
            "mapping": done.mapping,
            "started_at": now,
            "finished_at": now,
        },
    ).scalar_one()
    for name in f.systems:  # created, or updated from this file's header, as ingest does
        systems[name] = done._upsert_system(conn, name)
    kept: list[dict[str, Any]] = []
    for line, fld, reason, raw in f.sample:
        if isinstance(reason, tuple):  # a conflict: name the line it conflicts with
            _line, where, first_file, first_line, _raw = reason
            reason = conflict(
                f"line {first_line} of the same file"
                if where == "line"
                else f"the stored response from {sources[first_file]} line {first_line}"
            )
        done._quarantine(kept, line, raw, reason, fld)
    if kept:
        conn.execute(_upsert_quarantine(conn), kept)
    s = done.summary
    s.batch_id = done.batch_id
    s.path, s.read, s.stored, s.duplicate = f.path, f.read, f.stored, f.duplicate
    s.quarantined = f.quarantined
    s.note = f"counted on Spark {version}; {f.size:,} bytes, sha256 {f.sha256[:12]}…"
