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


def analyse(engine: object) -> dict:
    """conv_counts and the models layer; seconds and peak traced MiB."""
    from cuegap.models import conv_consistency, conv_contrasts, conv_shift_rates, conv_tests
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


def one(
    scale: str, questions: int | None, fraction: float, systems: int, pg_url: str | None
) -> dict:
    """Simulate, ingest and analyse one size."""
    from cuegap.ingest import ingest_path
    from cuegap.schema import make_engine, upgrade
    from cuegap.simulate import simulate_conv

    out: dict = {}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        t = time.perf_counter()
        sim = simulate_conv(
            root / "ws", systems=systems, scale=scale, questions=questions, fraction=fraction
        )
        out.update(transcripts=sim.n_transcripts, simulate_s=time.perf_counter() - t)
        for kind in ("sqlite", "postgresql") if pg_url else ("sqlite",):
            url, handle = _store(kind, root, pg_url)
            try:
                engine = make_engine(url)
                upgrade(engine)
                t = time.perf_counter()
                s = ingest_path(engine, root / "ws")
                dt = time.perf_counter() - t
                assert s.read == sim.n_transcripts and s.stored + s.quarantined == s.read
                out[f"{kind}_ingest_s"] = dt
                out[f"{kind}_per_s"] = sim.n_transcripts / dt
                out.update({f"{kind}_{k}": v for k, v in analyse(engine).items()})
                engine.dispose()
            finally:
                _drop(handle)
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
    args = ap.parse_args()
    systems = args.systems or (8 if args.scale == "paper" else 3)
    pg = None if args.no_pg else args.db_url
    q_full = args.questions or (40 if args.scale == "small" else None)
    rows = [
        (label, one(args.scale, q_full, f, systems, pg))
        for label, f in (("full", 1.0), ("tenth", 0.1))
    ]
    keys = sorted({k for _l, r in rows for k in r}, key=lambda k: (k.split("_")[0], k))
    print(f"{'':28}" + "".join(f"{label:>14}" for label, _r in rows) + f"{'ratio':>10}")
    for k in keys:
        vals = [r.get(k) for _l, r in rows]
        ratio = vals[0] / vals[1] if all(isinstance(v, int | float) and v for v in vals) else None
        cells = "".join(f"{v:>14,.2f}" if isinstance(v, float) else f"{v!s:>14}" for v in vals)
        print(f"{k:28}{cells}" + (f"{ratio:>10.2f}" if ratio is not None else ""))


if __name__ == "__main__":
    main()
