"""Writing what a counting engine found into the store: ``cuegap count``'s driver side.

Each input file becomes a run and an ingest batch, as ``cuegap ingest`` would make them
(name, size in ``mapping``, SHA-256, read = stored + duplicate + quarantined, sealed in
the ledger), with ``mapping`` saying which engine and version counted it and how many
quarantined lines are kept. Quarantined lines are kept up to a sample per file (all are
counted). The tally gets one row per distinct key with its count; responses themselves
stay in the files.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from sqlalchemy import select
from sqlalchemy.engine import Engine
from sqlmodel import SQLModel

from cuegap.ingest._pass import _IngestPass
from cuegap.ingest._response_rules import conflict_reason
from cuegap.ingest._spark_count import FileCount, SparkCounts, _same_file, run_count_job
from cuegap.ingest._sql import _upsert_quarantine
from cuegap.ingest._summary import IngestSummary
from cuegap.ingest._validate import storable
from cuegap.ingest.registry import get_reader
from cuegap.schema import Run

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
        Called with a line of progress.

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
    return write_counts(engine, counting, result, sample=sample)


def write_counts(
    engine: Engine, counting: Any, result: SparkCounts, *, sample: int
) -> list[IngestSummary]:
    """Store a job's per-file runs, batches and quarantine sample, then its tally."""
    reader = get_reader(counting.reader)
    with engine.connect() as conn:
        for f in result.files:
            if conn.execute(select(Run.id).where(Run.source_sha256 == f.sha256)).first():
                raise ValueError(
                    f"{f.path}: this file (sha256 {f.sha256[:12]}…) is already in the store; "
                    "count files into a store that has not ingested or counted them"
                )
    sources: list[str] = []
    systems: dict[str, int] = {}
    summaries = []
    for f in result.files:
        done = _CountedFile(engine, f.path, reader)
        sources.append(done.source)
        summaries.append(_write_file(done, f, result.engine_version, sample, sources, systems))
    table = SQLModel.metadata.tables[counting.tally]
    rows = []
    for key, n in result.tally:  # the first key is the system, by name until now
        values = dict(zip(counting.keys, (systems[key[0]], *key[1:]), strict=True))
        rows.append({"batch_id": None, **values, "n": n})
    with engine.begin() as conn:
        for start in range(0, len(rows), 5_000):
            conn.execute(table.insert(), rows[start : start + 5_000])
    return summaries


def _write_file(
    done: _CountedFile,
    f: FileCount,
    version: str,
    sample: int,
    sources: list[str],
    systems: dict[str, int],
) -> IngestSummary:
    done.sha, done.info = f.sha256, f.run
    done.mapping = {
        "engine": "spark",
        "engine_version": version,
        "size": f.size,
        "quarantine_kept": min(sample, f.quarantined),
    }
    done._open_run(f.sha256)
    try:
        for name in f.systems:
            systems[name] = done._system(None, name)  # type: ignore[arg-type]
        kept: list[dict[str, Any]] = []
        for line, fld, reason, raw in f.sample:
            if isinstance(reason, tuple):  # a conflict: name the line it conflicts with
                _line, where, first_file, first_line, _raw = reason
                reason = conflict_reason(
                    f"line {first_line} of the same file"
                    if where == "line"
                    else f"the stored response from {sources[first_file]} line {first_line}"
                )
            done._quarantine(kept, line, raw, reason, fld)
        if kept:
            with done.engine.begin() as conn:
                conn.execute(_upsert_quarantine(conn), kept)
        s = done.summary
        s.path, s.read, s.stored, s.duplicate = f.path, f.read, f.stored, f.duplicate
        s.quarantined = f.quarantined
        s.note = f"counted on Spark {version}; {f.size:,} bytes, sha256 {f.sha256[:12]}…"
    except BaseException as exc:
        done._finish("failed", f"{type(exc).__name__}: {exc}")
        raise
    done._finish("completed", None)
    return done.summary
