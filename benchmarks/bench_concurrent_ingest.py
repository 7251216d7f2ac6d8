"""Concurrent ingest benchmark: aggregate rows/s of 1, 2 and 4 ingesters into one PostgreSQL.

Usage::

    .venv/bin/python benchmarks/bench_concurrent_ingest.py               # 4 systems, 87k rows
    .venv/bin/python benchmarks/bench_concurrent_ingest.py --systems 2 --repeats 1   # quick

This is how a team scales ingest on a shared server: each person ingests their own
(disjoint) files into one store at the same time. The simulated responses are split into
``k`` disjoint files of equal size (whole systems' lines interleaved, so every file holds
every system), and ``k`` processes ingest them at once into a fresh database holding the
schema and the item bank. Each process starts its clock after a barrier, once its imports
and connection are done; the aggregate throughput is all rows over the time from the
first start to the last finish. Each ``k`` is run ``--repeats`` times on a fresh
database, and the median is printed, with the speed-up over one ingester.

PostgreSQL comes from ``--pg`` (an admin URL; default ``$CUEGAP_TEST_PG_URL``).
Mind the machine's cores (``os.cpu_count()`` is printed): each ingester is one Python
process parsing JSON, and the server needs CPU too.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

COUNTS = (1, 2, 4)


def _ingest(url: str, path: str, barrier, queue) -> None:
    from cuegap.ingest import ingest_path
    from cuegap.schema import make_engine

    engine = make_engine(url)
    with engine.connect():
        pass  # open the pool's first connection before the clock starts
    barrier.wait()
    start = time.perf_counter()
    try:
        s = ingest_path(engine, Path(path))
        queue.put(("ok", start, time.perf_counter(), s.read, s.stored))
    except Exception as exc:  # reported by the parent
        queue.put(("error", f"{type(exc).__name__}: {exc}"))
    finally:
        engine.dispose()


def _fresh_store(admin_url: str, bank: Path) -> tuple[str, callable]:
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url

    from cuegap.ingest import ingest_path
    from cuegap.schema import make_engine, upgrade

    admin = create_engine(admin_url, isolation_level="AUTOCOMMIT")
    name = f"cuegap_bench_{uuid.uuid4().hex[:8]}"
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    url = make_url(admin_url).set(database=name).render_as_string(hide_password=False)
    engine = make_engine(url)
    upgrade(engine)
    ingest_path(engine, bank)
    engine.dispose()

    def drop() -> None:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()

    return url, drop


def _split(responses: Path, k: int, out: Path) -> list[Path]:
    """``k`` disjoint files with every k-th line each, each with the header."""
    header, *lines = responses.read_text().splitlines()
    paths = []
    for i in range(k):
        path = out / f"part-{k}-{i}.jsonl"
        path.write_text("\n".join([header, *lines[i::k]]) + "\n")
        paths.append(path)
    return paths


def run_once(url: str, paths: list[Path]) -> tuple[float, int]:
    """Ingest ``paths`` at once, one process each; (seconds, rows stored)."""
    ctx = mp.get_context("spawn")
    barrier, queue = ctx.Barrier(len(paths)), ctx.Queue()
    procs = [ctx.Process(target=_ingest, args=(url, str(p), barrier, queue)) for p in paths]
    for p in procs:
        p.start()
    results = [queue.get(timeout=1800) for _ in procs]
    for p in procs:
        p.join()
    errors = [r[1] for r in results if r[0] != "ok"]
    if errors:
        raise SystemExit(f"ingest failed: {errors}")
    seconds = max(r[2] for r in results) - min(r[1] for r in results)
    return seconds, sum(r[4] for r in results)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--systems", type=int, default=4, help="simulated systems (21,800 rows each)")
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--repeats", type=int, default=3, help="runs per ingester count (median)")
    ap.add_argument("--limit", type=int, help="use only the first N responses (a smoke test)")
    ap.add_argument(
        "--pg",
        default=os.environ.get("CUEGAP_TEST_PG_URL"),
        help="PostgreSQL admin URL (default $CUEGAP_TEST_PG_URL)",
    )
    args = ap.parse_args(argv)
    if not args.pg:
        print("error: no PostgreSQL server: pass --pg URL or set CUEGAP_TEST_PG_URL")
        return 2
    from cuegap.designs.dilemma.simulate import simulate

    admin_url = args.pg.replace("postgresql://", "postgresql+psycopg://", 1)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        sim = simulate(root / "data", systems=args.systems, seed=args.seed)
        responses, n = sim.responses_path, sim.n_responses
        if args.limit:
            header, *lines = responses.read_text().splitlines()
            responses, n = root / "limited.jsonl", min(args.limit, len(lines))
            responses.write_text("\n".join([header, *lines[:n]]) + "\n")
        print(
            f"{n:,} responses, {args.systems} systems; {os.cpu_count()} CPU "
            f"cores; median of {args.repeats} run(s) per row"
        )
        print(f"{'ingesters':>9}  {'seconds':>8}  {'rows/s':>9}  {'speed-up':>8}")
        base = None
        for k in COUNTS:
            paths = _split(responses, k, root)
            times = []
            for _ in range(args.repeats):
                url, drop = _fresh_store(admin_url, sim.itembank_path)
                try:
                    seconds, stored = run_once(url, paths)
                finally:
                    drop()
                if stored != n:
                    raise SystemExit(f"stored {stored:,} of {n:,} rows")
                times.append(seconds)
            seconds = statistics.median(times)
            rate = n / seconds
            base = base or rate
            print(f"{k:>9}  {seconds:>8.2f}  {rate:>9,.0f}  {rate / base:>7.2f}x", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
