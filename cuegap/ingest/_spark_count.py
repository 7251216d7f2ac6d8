"""The Spark job of ``cuegap count --engine spark``: raw files to a design's tally.

Spark reads each file where it lives (``binaryFiles``: local paths or any URL its file
systems read), and each task runs the design's partition parser on one file's lines (a
Parquet file's rows, whose columns are the JSONL fields, become those lines)
(:class:`cuegap.designs.Counting`). Records are then resolved by natural key, as
``cuegap ingest`` resolves them: the first occurrence (in the order the files were given,
then by line) is counted, a later one with the same text is a duplicate, one with another
text is quarantined as a conflict. Finally the counted keys are summed into the tally.
Only the tally, the per-file line counts and a bounded sample of quarantined lines come
back to the driver. pyspark is imported here only, and only when a job runs.
"""

from __future__ import annotations

import hashlib
import io
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from operator import add
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from cuegap.ingest._records import IngestError, RunInfo


@dataclass
class FileCount:
    """What the job found in one input file."""

    index: int
    path: str  # the local path or URL as given
    sha256: str = ""
    size: int = 0
    run: RunInfo = field(default_factory=RunInfo)
    read: int = 0
    stored: int = 0
    duplicate: int = 0
    quarantined: int = 0
    systems: list[str] = field(default_factory=list)  # in order of first counted line
    # (line, field, reason, raw); a conflict's reason is (line, "line" | "stored", file
    # index, first line, raw) until the driver names the file it conflicts with
    sample: list[tuple[int, str | None, Any, str]] = field(default_factory=list)


@dataclass
class SparkCounts:
    """The job's result: per-file counts and the tally, ``((file index, key), n)`` with the
    system's name in the key."""

    files: list[FileCount]
    tally: list[tuple[tuple[int, tuple[Any, ...]], int]]
    engine_version: str


def _url(path: str) -> str:
    """A path Spark reads: URLs as given, local paths made absolute ``file:`` URLs."""
    return path if "://" in path else Path(path).resolve().as_uri()


def _same_file(url: str) -> str:
    """One spelling of a file's URL, so that Spark's names match the ones given."""
    parsed = urlparse(url)
    if parsed.scheme in ("", "file"):
        return str(Path(unquote(parsed.path)).resolve())
    return url


PARQUET_MAGIC = b"PAR1"


def _parquet_lines(data: bytes) -> Iterator[bytes]:
    """A Parquet file's rows as JSONL lines: each row a dict of its columns (the JSONL
    fields), a null column left out as a missing field, in row order (no header line)."""
    import orjson
    import pyarrow.parquet as pq

    table = pq.read_table(io.BytesIO(data))
    for batch in table.to_batches():
        for row in batch.to_pylist():
            fields = {k: v for k, v in row.items() if v is not None}
            yield orjson.dumps(fields, default=str) + b"\n"


def _lines(data: bytes) -> Iterable[bytes]:
    """A file's lines: JSONL as it is, Parquet (told by its magic bytes) row by row."""
    if data[:4] == PARQUET_MAGIC and data[-4:] == PARQUET_MAGIC:
        return _parquet_lines(data)
    return io.BytesIO(data)


def _parse_file(item: tuple[str, bytes], index: dict[str, int], counting: Any, ctx: Any):
    """One task: a file's bytes to its digest, size and parsed rows, tagged with its index.

    JSONL lines, or a Parquet file's rows as dicts, go through the design's parser."""
    url, data = item
    name = _same_file(url)  # a local file is named by its path, as ingest names it
    i = index[name]
    yield ("file", i, hashlib.sha256(data).hexdigest(), len(data))
    try:
        for row in counting.parse(_lines(data), name, ctx):
            yield (row[0], i, *row[1:])
    except IngestError as exc:  # the whole file cannot be read (a bad header): say why
        yield ("error", i, str(exc))


def _resolve(group: tuple[str, Any]):
    """All records of one natural key: the first counted, the others duplicate or conflict."""
    _key, records = group
    ordered = sorted(records, key=lambda r: (r[0], r[1]))
    first = ordered[0]  # (file, line, content, tally key, raw)
    yield ("stored", first[0], first[3])
    for r in ordered[1:]:
        if r[2] == first[2]:
            yield ("duplicate", r[0], None)
        else:
            where = "line" if r[0] == first[0] else "stored"
            yield ("conflict", r[0], (r[1], where, first[0], first[1], r[4]))


def _keep(sample: list, row: tuple, limit: int) -> list:
    sample.append(row)
    if len(sample) > 2 * limit:
        sample.sort(key=lambda r: r[0])
        del sample[limit:]
    return sample


def _merge(a: list, b: list, limit: int) -> list:
    out = sorted(a + b, key=lambda r: r[0])
    return out[:limit]


def run_count_job(
    spark: Any, counting: Any, context: Any, paths: Sequence[str], *, sample: int = 1_000
) -> SparkCounts:
    """Count ``paths`` with ``counting``'s partition parser on the session ``spark``.

    Parameters
    ----------
    spark : pyspark.sql.SparkSession
        The session to run on (local or a cluster's).
    counting : cuegap.designs.Counting
        The design's tally and partition parser.
    context : object
        ``counting.context(conn)``, built on the driver; broadcast to every task.
    paths : sequence of str
        The files, local paths or URLs; duplicates are resolved in this order.
    sample : int
        Quarantined lines kept per file (the lowest line numbers); all are counted.

    Returns
    -------
    SparkCounts
        Per-file digests and counts, and the tally summed per key.
    """
    import pyspark
    from pyspark import StorageLevel

    sc = spark.sparkContext
    urls = [_url(p) for p in paths]
    index = {_same_file(u): i for i, u in enumerate(urls)}
    if len(index) != len(urls):
        raise ValueError("the same file is named twice in PATHS")
    ctx = sc.broadcast(context)
    rows = sc.binaryFiles(",".join(urls), minPartitions=len(urls)).flatMap(
        lambda item: _parse_file(item, index, counting, ctx.value)
    )
    rows.persist(StorageLevel.MEMORY_AND_DISK)  # read by several actions below
    files = [FileCount(i, p) for i, p in enumerate(paths)]
    for kind, i, *rest in rows.filter(lambda r: r[0] in ("file", "run", "error")).collect():
        if kind == "file":
            files[i].sha256, files[i].size = rest
        elif kind == "run":
            files[i].run = rest[0]
        else:
            rows.unpersist()
            raise IngestError(rest[0])  # it names the file
    for i, n in rows.filter(lambda r: r[0] != "file").map(lambda r: (r[1], 1)).countByKey().items():
        files[i].read = int(n) - 1  # less the "run" row
    outcomes = (
        rows.filter(lambda r: r[0] == "record")
        .map(lambda r: (r[2], (r[1], r[4], r[3], r[5], r[6])))
        .groupByKey()
        .flatMap(_resolve)
    )
    outcomes.persist(StorageLevel.MEMORY_AND_DISK)
    per_file = outcomes.map(lambda o: ((o[0], o[1]), 1)).reduceByKey(add).collect()
    for (kind, i), n in per_file:
        if kind == "stored":
            files[i].stored = n
        elif kind == "duplicate":
            files[i].duplicate = n
    first_seen = (
        outcomes.filter(lambda o: o[0] == "stored")
        .map(lambda o: ((o[1], o[2][0]), 1))
        .reduceByKey(add)
        .keys()
        .collect()
    )
    for i, system in sorted(first_seen):
        files[i].systems.append(system)
    # per file and key: a key's count stays under the file it was first counted in
    tally = outcomes.filter(lambda o: o[0] == "stored").map(lambda o: ((o[1], o[2]), 1))
    counted = tally.reduceByKey(add).collect()
    quarantined = rows.filter(lambda r: r[0] == "quarantine").map(
        lambda r: (r[1], (r[2], r[3], r[4], r[5]))
    )
    fld = counting.conflict_field  # the field the design's loader quarantines a conflict under
    conflicts = outcomes.filter(lambda o: o[0] == "conflict").map(
        lambda o: (o[1], (o[2][0], fld, o[2], o[2][4]))
    )
    both = quarantined.union(conflicts)
    for i, n in both.countByKey().items():
        files[i].quarantined = int(n)
    kept = both.aggregateByKey(
        [], lambda s, r: _keep(s, r, sample), lambda a, b: _merge(a, b, sample)
    ).collect()
    for i, lines in kept:
        files[i].sample = _merge(lines, [], sample)
    rows.unpersist()
    outcomes.unpersist()
    return SparkCounts(files, counted, pyspark.__version__)
