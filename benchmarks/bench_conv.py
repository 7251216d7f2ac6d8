"""Conversation-design benchmark (issue 16, "Speed and memory"): ingest time, count and
analysis time and peak memory of a simulated MAC-Fairness workspace, at a scale and at a
tenth of it, in one run.

Usage::

    .venv/bin/python benchmarks/bench_conv.py                    # small: 3 systems x 5
                                                                 # categories x 40 questions
    .venv/bin/python benchmarks/bench_conv.py --questions 100 --no-pg
    .venv/bin/python benchmarks/bench_conv.py --scale paper      # seed 003: 7.8M transcripts
    .venv/bin/python benchmarks/bench_conv.py --db-url postgresql://user@host/postgres

For each of the two sizes (the full one first, then questions per category divided by
10): ``simulate_conv`` writes the workspace (one JSON file per conversation),
``ingest_path`` reads the folder into a fresh SQLite store (and a fresh PostgreSQL
database unless ``--no-pg``), then ``conv_counts`` (the SQL GROUP BY) and the models layer
(``conv_shift_rates``, ``conv_contrasts``, ``conv_tests`` per persona,
``conv_consistency``) run on it. Prints seconds per step, transcripts per second of
ingest, the analysis's peak traced memory (tracemalloc: counts and models) and the
process's peak resident memory, and the full / tenth ratios. Figures, not targets.
"""

from __future__ import annotations

import argparse
import os
import resource
import tempfile
import time
import tracemalloc
import uuid
from pathlib import Path

DEFAULT_PG = os.environ.get("CUEGAP_TEST_PG_URL")


def _store(kind: str, root: Path, pg_url: str | None) -> tuple[str, object]:
    from sqlalchemy import text

    from cuegap.schema import make_engine

    if kind == "sqlite":
        return f"sqlite:///{root / 'conv.db'}", None
    name = f"bench_conv_{uuid.uuid4().hex[:8]}"
    admin = make_engine(pg_url)
    with admin.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    return pg_url.rsplit("/", 1)[0] + f"/{name}", (admin, name)


def _drop(handle: object) -> None:
    from sqlalchemy import text

    if handle is None:
        return
    admin, name = handle  # type: ignore[misc]
    with admin.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


def _pg_size(handle: object) -> int:
    """Bytes of the benchmark's PostgreSQL database (tables, indexes, TOAST)."""
    from sqlalchemy import text

    admin, name = handle  # type: ignore[misc]
    with admin.connect() as conn:
        return int(conn.execute(text("SELECT pg_database_size(:n)"), {"n": name}).scalar())


def analyse(engine: object) -> dict:
    """conv_counts and the models layer; seconds and peak traced MiB."""
    from cuegap.designs.conversation.stats import (
        conv_consistency,
        conv_contrasts,
        conv_shift_rates,
        conv_tests,
    )
    from cuegap.schema import conv_counts

    tracemalloc.start()
    t = time.perf_counter()
    counts = conv_counts(engine)
    t_counts = time.perf_counter() - t
    t = time.perf_counter()
    conv_shift_rates(counts)
    conv_contrasts(counts)
    tests = conv_tests(counts, unit="persona")
    conv_consistency(tests)
    t_models = time.perf_counter() - t
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return {"cells": len(counts), "counts_s": t_counts, "models_s": t_models,
            "analysis_peak_mib": peak / 2**20}  # fmt: skip


class Backend:
    """One store in a worker process of its own, so that the backends ingest side by side
    and each reports its own peak memory."""

    def __init__(self, kind: str, root: Path, pg_url: str | None) -> None:
        import concurrent.futures as cf
        import multiprocessing as mp

        self.kind = kind
        self.url, self.handle = _store(kind, root, pg_url)
        self.pool = cf.ProcessPoolExecutor(1, mp_context=mp.get_context("spawn"))
        self.pool.submit(_w_open, self.url).result()

    def close(self) -> None:
        self.pool.shutdown()
        _drop(self.handle)


_ENGINE: list = []


def _w_open(url: str) -> None:
    from cuegap.schema import make_engine, upgrade

    engine = make_engine(url)
    upgrade(engine)
    _ENGINE[:] = [engine]


def _w_ingest(path: str) -> tuple[float, int, int, int]:
    from cuegap.ingest import ingest_path

    t = time.perf_counter()
    s = ingest_path(_ENGINE[0], Path(path))
    return time.perf_counter() - t, s.read, s.stored, s.quarantined


def _w_analyse() -> dict:
    out = analyse(_ENGINE[0])
    out["peak_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return out


def one(
    scale: str,
    questions: int | None,
    fraction: float,
    systems: int,
    pg_url: str | None,
    *,
    by_system: bool,
    sqlite: bool = True,
    serial: bool,
    workdir: str | None,
    label: str,
) -> dict:
    """Simulate, ingest and analyse one size.

    With ``by_system`` the workspace is written one system at a time (the same files as
    one call) and each part is ingested as a pass of its own, then deleted: the disk holds
    the stores and at most two parts. Unless ``serial``, the next part is simulated while
    the backends ingest the current one, each backend in its own process.
    """
    import shutil

    from cuegap.designs.conversation._simulate import simulate_conv

    out: dict = {}
    parts = [[k] for k in range(systems)] if by_system else [None]
    with tempfile.TemporaryDirectory(dir=workdir) as tmp:
        root = Path(tmp)
        kinds = (("sqlite",) if sqlite else ()) + (("postgresql",) if pg_url else ())
        backends = [Backend(kind, root, pg_url) for kind in kinds]
        totals = {b.kind: [0.0, 0, 0, 0] for b in backends}
        rates: dict[str, list[float]] = {b.kind: [] for b in backends}
        sim_s, n_sim = 0.0, 0
        pending: list = []

        def settle() -> None:
            for b, fut, ws in pending:
                dt, read, stored, quar = fut.result()
                assert stored + quar <= read
                tot = totals[b.kind]
                for i, v in enumerate((dt, read, stored, quar)):
                    tot[i] += v
                rates[b.kind].append(read / dt)
                # the store's size after each pass: the rate is read against it
                size = (_pg_size(b.handle) if b.kind == "postgresql"
                        else (root / "conv.db").stat().st_size)  # fmt: skip
                print(f"  [{label}] {ws.name} -> {b.kind}: {read:,} in {dt:,.1f} s "
                      f"({read / dt:,.0f}/s; store {size / 2**30:,.2f} GiB)",
                      flush=True)  # fmt: skip
            for ws in {ws for _b, _f, ws in pending}:
                shutil.rmtree(ws, ignore_errors=True)
            pending.clear()

        try:
            for k, only in enumerate(parts):
                ws = root / f"ws{k:02d}"
                t = time.perf_counter()
                sim = simulate_conv(ws, systems=systems, scale=scale, questions=questions,
                                    fraction=fraction, only_systems=only)  # fmt: skip
                sim_s += time.perf_counter() - t
                n_sim += sim.n_transcripts
                settle()  # the previous part: at most two parts on disk
                for b in backends:
                    fut = b.pool.submit(_w_ingest, str(ws))
                    pending.append((b, fut, ws))
                    if serial:
                        settle()
            settle()
            out.update(transcripts=n_sim, simulate_s=sim_s)
            for b in backends:
                dt, read, stored, quar = totals[b.kind]
                assert read == n_sim and stored + quar == read, (b.kind, totals[b.kind])
                out[f"{b.kind}_ingest_s"] = dt
                out[f"{b.kind}_per_s"] = read / dt
                out[f"{b.kind}_first_part_per_s"] = rates[b.kind][0]
                out[f"{b.kind}_last_part_per_s"] = rates[b.kind][-1]
                got = b.pool.submit(_w_analyse).result()
                out.update({f"{b.kind}_{key}": v for key, v in got.items()})
                if b.kind == "sqlite":
                    out["sqlite_store_gib"] = (root / "conv.db").stat().st_size / 2**30
                else:
                    out["postgresql_store_gib"] = _pg_size(b.handle) / 2**30
        finally:
            for b in backends:
                b.close()
    out["peak_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scale", choices=("small", "paper"), default="small")
    ap.add_argument("--questions", type=int, default=None,
                    help="questions per category at full size (default: 40 small, the "
                    "paper's 200 / 250 / 1,000 for paper)")  # fmt: skip
    ap.add_argument("--systems", type=int, default=None, help="default 3 small, 8 paper")
    ap.add_argument("--db-url", default=DEFAULT_PG, help="PostgreSQL server (admin URL)")
    ap.add_argument("--no-pg", action="store_true", help="SQLite only")
    ap.add_argument(
        "--no-sqlite",
        action="store_true",
        help="PostgreSQL only (e.g. after a SQLite run, on a disk too small for both)",
    )
    ap.add_argument(
        "--by-system",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="write and ingest one system at a time (default: with --scale "
        "paper, so that the files of 8M transcripts need not be on disk at once)",
    )
    ap.add_argument(
        "--serial",
        action="store_true",
        help="simulate, then ingest each backend in turn (clean timings on a "
        "machine with few cores; by default they overlap)",
    )
    ap.add_argument("--workdir", default=None, help="folder for the stores and files")
    ap.add_argument(
        "--fraction",
        type=float,
        default=1.0,
        help="the full size as a fraction of the scale's (the second size is a "
        "tenth of it), e.g. 0.1 for a quick paper-scale run",
    )
    args = ap.parse_args()
    systems = args.systems or (8 if args.scale == "paper" else 3)
    pg = None if args.no_pg else args.db_url
    if args.no_sqlite and not pg:
        ap.error("--no-sqlite needs a PostgreSQL server (--db-url or CUEGAP_TEST_PG_URL)")
    q_full = args.questions or (40 if args.scale == "small" else None)
    by_system = args.scale == "paper" if args.by_system is None else args.by_system
    names = (["sqlite"] if not args.no_sqlite else []) + (["postgresql"] if pg else [])
    print(f"scale {args.scale}, {systems} systems, backends: {', '.join(names)}"
          + (", one system at a time" if by_system else "")
          + (", serial" if args.serial else ", simulation and backends overlapping"),
          flush=True)  # fmt: skip
    rows = []
    for label, f in (("tenth", args.fraction / 10), ("full", args.fraction)):  # quick first
        got = one(args.scale, q_full, f, systems, pg, by_system=by_system,
                  sqlite=not args.no_sqlite, serial=args.serial, workdir=args.workdir,
                  label=label)  # fmt: skip
        print(f"{label}: {got}", flush=True)
        rows.append((label, got))
    rows.reverse()  # full, then tenth: the ratio is full / tenth
    keys = sorted({k for _l, r in rows for k in r}, key=lambda k: (k.split("_")[0], k))
    print(f"{'':28}" + "".join(f"{label:>14}" for label, _r in rows) + f"{'ratio':>10}")
    for k in keys:
        vals = [r.get(k) for _l, r in rows]
        ratio = vals[0] / vals[1] if all(isinstance(v, int | float) and v for v in vals) else None
        cells = "".join(f"{v:>14,.2f}" if isinstance(v, float) else f"{v!s:>14}" for v in vals)
        print(f"{k:28}{cells}" + (f"{ratio:>10.2f}" if ratio is not None else ""))
    full = rows[0][1]
    for kind in names:  # issue 31: the last pass keeps >= 80 % of the first pass's rate
        first, last = full.get(f"{kind}_first_part_per_s"), full.get(f"{kind}_last_part_per_s")
        if first and last:
            kept = last / first
            print(f"{kind}: last pass {last:,.0f}/s = {kept:.2f} x the first's {first:,.0f}/s "
                  f"(target >= 0.80: {'met' if kept >= 0.8 else 'not met'})")  # fmt: skip


if __name__ == "__main__":
    main()
