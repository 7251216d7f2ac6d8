"""Counting on Spark against ``cuegap ingest``, on the same simulated dilemma files.

Usage::

    .venv/bin/python benchmarks/bench_spark_counts.py                 # 2 systems (~45k lines)
    .venv/bin/python benchmarks/bench_spark_counts.py --systems 20 --files 4
    .venv/bin/python benchmarks/bench_spark_counts.py --db postgresql://...   # PG stores

The dilemma simulator writes ``--systems`` systems' responses (about 22,000 lines each),
split into ``--files`` files. Each part runs in a fresh process, into a fresh store holding
the item bank:

* ``cuegap ingest`` of the files;
* ``cuegap count --engine spark`` in local mode with 1 and with 2 cores (the session's
  start is timed apart from the count).

Printed per part: wall time, lines per second, the Python driver's peak memory and, for
Spark, the peak of the JVM (in local mode the driver and the one executor) and of the
largest Python worker (VmHWM, read from /proc before the session stops), then the scaling
from 1 to 2 cores. The tallies of all parts are checked equal.

What issue 32 asks for at full scale (the conversation design at seed 003's 7.8M
transcripts, QA at 10x seed 001) needs those designs' ``spark_counting`` hooks, which only
the dilemma design has so far; ``--systems`` scales this one.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import resource
import sys
import tempfile
import time
from pathlib import Path


def _peak_mib(who: int) -> float:
    return resource.getrusage(who).ru_maxrss / 1024


def _hwm_mib(pid: int) -> float:
    """A live process's peak resident memory (VmHWM), in MiB; 0 when unreadable."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def _descendants(pid: int) -> list[int]:
    """Live descendants of ``pid`` (Linux /proc)."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    out, todo = [], [pid]
    while todo:
        for c in children.get(todo.pop(), []):
            out.append(c)
            todo.append(c)
    return out


def _tally(engine) -> dict:
    from sqlalchemy import func, select

    from cuegap.schema import TALLY_KEYS, ResponseTally

    t = ResponseTally.__table__.c
    keys = [t[k] for k in TALLY_KEYS]
    with engine.connect() as conn:
        return {
            tuple(r[:-1]): int(r[-1])
            for r in conn.execute(select(*keys, func.sum(t.n)).group_by(*keys))
        }


def _store(url: str, bank: Path):
    from cuegap.ingest import ingest_path
    from cuegap.schema import make_engine, upgrade

    engine = make_engine(url)
    upgrade(engine)
    ingest_path(engine, bank)
    return engine


def _part(kind: str, url: str, bank: str, files: list[str], queue: mp.Queue) -> None:
    """One part in its own process: ingest, or a count on ``kind`` (a Spark master)."""
    engine = _store(url, Path(bank))
    start_spark_s = jvm_mib = worker_mib = 0.0
    start = time.perf_counter()
    if kind == "ingest":
        from cuegap.ingest import ingest_path

        for f in files:
            ingest_path(engine, Path(f))
        lines = None
    else:
        from cuegap.designs import get
        from cuegap.ingest import count_files, start_spark

        spark = start_spark(kind)
        spark.sparkContext.setLogLevel("ERROR")
        start_spark_s = time.perf_counter() - start
        start = time.perf_counter()
        summaries = count_files(engine, get("dilemma").spark_counting(), files, spark=spark)
        lines = sum(s.read for s in summaries)
        jvm = spark.sparkContext._gateway.proc.pid  # local mode: the driver and executor JVM
        jvm_mib = _hwm_mib(jvm)
        worker_mib = max((_hwm_mib(p) for p in _descendants(jvm)), default=0.0)
        spark.stop()
    seconds = time.perf_counter() - start
    queue.put(
        {
            "kind": kind,
            "seconds": seconds,
            "session_s": start_spark_s,
            "lines": lines,
            "driver_mib": _peak_mib(resource.RUSAGE_SELF),
            "jvm_mib": jvm_mib,
            "worker_mib": worker_mib,
            "tally": _tally(engine),
        }
    )
    engine.dispose()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--systems", type=int, default=2, help="simulated systems (default 2)")
    parser.add_argument("--files", type=int, default=2, help="files to split them into")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--db", default=None, help="a PostgreSQL admin URL (default: SQLite)")
    args = parser.parse_args(argv)
    from cuegap.designs.dilemma.simulate import simulate

    tmp = Path(tempfile.mkdtemp(prefix="bench_spark_counts_"))
    simulate(tmp / "sim", systems=args.systems, seed=args.seed)
    lines = (tmp / "sim" / "responses.jsonl").read_text().splitlines(keepends=True)
    header, body = lines[0], lines[1:]
    files = []
    per = -(-len(body) // args.files)
    for i in range(args.files):
        f = tmp / f"part-{i}.jsonl"
        f.write_text(header + "".join(body[i * per : (i + 1) * per]))
        files.append(str(f))
    print(f"{len(body):,} response lines in {args.files} file(s), {args.systems} system(s)")
    ctx = mp.get_context("spawn")
    results = []
    for n, kind in enumerate(("ingest", "local[1]", "local[2]")):
        if args.db:
            from sqlalchemy import create_engine, text

            name = f"bench_spark_{n}_{int(time.time())}"
            with create_engine(args.db, isolation_level="AUTOCOMMIT").connect() as conn:
                conn.execute(text(f'CREATE DATABASE "{name}"'))
            url = args.db.rsplit("/", 1)[0] + "/" + name
        else:
            url = f"sqlite:///{tmp / f'store-{n}.db'}"
        queue = ctx.Queue()
        proc = ctx.Process(
            target=_part, args=(kind, url, str(tmp / "sim" / "itembank.json"), files, queue)
        )
        proc.start()
        result = queue.get()
        proc.join()
        results.append(result)
        rate = len(body) / result["seconds"]
        extra = (
            f", JVM (driver + executor) peak {result['jvm_mib']:,.0f} MiB, largest Python "
            f"worker peak {result['worker_mib']:,.0f} MiB, session start "
            f"{result['session_s']:.1f} s"
            if kind != "ingest"
            else ""
        )
        print(
            f"{kind:>9}: {result['seconds']:7.1f} s, {rate:9,.0f} lines/s, Python driver peak "
            f"{result['driver_mib']:,.0f} MiB{extra}"
        )
    same = all(r["tally"] == results[0]["tally"] for r in results)
    print(f"tallies identical across ingest, local[1] and local[2]: {same}")
    print(f"scaling 1 -> 2 cores: x{results[1]['seconds'] / results[2]['seconds']:.2f}")
    print(f"count local[2] vs ingest: x{results[0]['seconds'] / results[2]['seconds']:.2f}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
