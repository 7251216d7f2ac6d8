"""Prompt-variance benchmark (issue 15, "Speed and memory"): ingest time, analysis time and
peak memory of a simulated seed-003 §3 store, at full scale and at a fraction of it, in
one run.

Usage::

    .venv/bin/python benchmarks/bench_pv.py                        # fractions 0.1 and 1
    .venv/bin/python benchmarks/bench_pv.py --fractions 0.1        # quick
    .venv/bin/python benchmarks/bench_pv.py --db-url postgresql://... --fractions 0.1

Each fraction runs in a fresh process: ``simulate_pv(scale="paper", fraction=f)`` (11
systems × 9 BBQ categories × 22 combinations × 5 replicates, Difference-Awareness 8
subsets, the questions per category scaled by f: f = 1 is seed 003's 200 and 250, about
4.6 million answers), ingest of the banks and both answer files into a fresh store, then
``analyze_prompt_variance``. Prints seconds per step, answers per second of ingest and
the process's peak resident memory. Figures, not targets: no assertion.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

FILES = ("bbq_bank.jsonl", "diffAware_sim.jsonl", "responses_bbq.jsonl", "responses_da.jsonl")


def one(fraction: float, db_url: str | None) -> dict:
    """Simulate, ingest and analyse one fraction of the paper scale (in this process)."""
    from sqlalchemy import text

    from cuegap.designs.prompt_variance._analysis import analyze_prompt_variance
    from cuegap.designs.prompt_variance._simulate import simulate_pv
    from cuegap.ingest import ingest_path
    from cuegap.schema import make_engine, upgrade

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        t = time.perf_counter()
        sim = simulate_pv(root / "sim", scale="paper", fraction=fraction)
        t_sim = time.perf_counter() - t
        name = None
        if db_url is None:
            url = f"sqlite:///{root / 'pv.db'}"
        else:
            name = f"bench_pv_{uuid.uuid4().hex[:8]}"
            admin = make_engine(db_url)
            with admin.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
                conn.execute(text(f'CREATE DATABASE "{name}"'))
            url = db_url.rsplit("/", 1)[0] + f"/{name}"
        engine = make_engine(url)
        upgrade(engine)
        t = time.perf_counter()
        for f in FILES:
            ingest_path(engine, root / "sim" / f)
        t_ingest = time.perf_counter() - t
        t = time.perf_counter()
        analyze_prompt_variance(engine, force=True)
        t_analysis = time.perf_counter() - t
        engine.dispose()
        if name is not None:
            with admin.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
                conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    return {
        "fraction": fraction,
        "answers": sim.n_responses,
        "simulate_s": round(t_sim, 1),
        "ingest_s": round(t_ingest, 1),
        "answers_per_s": round(sim.n_responses / t_ingest),
        "analysis_s": round(t_analysis, 1),
        "peak_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fractions", default="0.1,1", help="comma-separated, in (0, 1]")
    parser.add_argument("--db-url", default=None, help="a PostgreSQL server URL (default SQLite)")
    parser.add_argument("--one", type=float, help=argparse.SUPPRESS)  # the child process
    args = parser.parse_args()
    if args.one is not None:
        print(json.dumps(one(args.one, args.db_url)))
        return
    rows = []
    for frac in (float(f) for f in args.fractions.split(",")):
        cmd = [sys.executable, __file__, "--one", str(frac)]
        if args.db_url:
            cmd += ["--db-url", args.db_url]
        out = subprocess.run(cmd, capture_output=True, text=True, check=True)
        rows.append(json.loads(out.stdout.strip().splitlines()[-1]))
        print(rows[-1], flush=True)
    backend = "PostgreSQL" if args.db_url else "SQLite"
    print(f"\n{backend}: fraction, answers, ingest s (answers/s), analysis s, peak MiB")
    for r in rows:
        print(
            f"{r['fraction']:>5} {r['answers']:>10,} {r['ingest_s']:>8} ({r['answers_per_s']:,})"
            f" {r['analysis_s']:>8} {r['peak_mib']:>8}"
        )


if __name__ == "__main__":
    main()
