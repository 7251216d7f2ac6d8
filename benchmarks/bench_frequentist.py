"""Frequentist benchmark: bootstrap SDs at the seed paper's scale.

Usage::

    .venv/bin/python benchmarks/bench_frequentist.py --boot            # 14 systems, 1000 reps
    .venv/bin/python benchmarks/bench_frequentist.py --boot --systems 2 --n-boot 100

    .venv/bin/python benchmarks/bench_frequentist.py --store           # whole analysis
    .venv/bin/python benchmarks/bench_frequentist.py --store --db sqlite:///cuegap.db

Targets (issue 3): every table of ``cuegap analyze`` at paper scale (14 systems, ~305k
responses) in under 10 s without the bootstrap; 1000 replicates for 14 systems x 100
dilemmas x 8 settings (Direct and Puzzled easy/intermediate/hard, with and without
consequences) x 15 gender x race cells in well under 30 s. For --boot the count table
is synthetic (binomial counts); only its shape matters for the timing.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

from cuegap.designs.dilemma.stats import bootstrap

GENDERS = ("man", "woman", "non-binary")
RACES = ("Asian", "Black", "Hispanic", "Muslim", "White")
SETTINGS = [("direct", None)] + [("puzzled", d) for d in ("easy", "intermediate", "hard")]


def synthetic_counts(systems: int, dilemmas: int, seed: int = 0) -> pd.DataFrame:
    """A count table with one row per (system, setting, dilemma, gender x race cell)."""
    rng = np.random.default_rng(seed)
    settings = [(c, d, cons) for c, d in SETTINGS for cons in (True, False)]
    cells = [(g, r) for g in GENDERS for r in RACES]
    n = systems * dilemmas * len(settings) * len(cells)
    idx = np.indices((systems, dilemmas, len(settings), len(cells))).reshape(4, -1)
    favor_trials = rng.integers(0, 3, n)
    against_trials = 2 - favor_trials
    return pd.DataFrame(
        {
            "system": np.array([f"system-{i:02d}" for i in range(systems)])[idx[0]],
            "condition": [settings[j][0] for j in idx[2]],
            "difficulty": [settings[j][1] for j in idx[2]],
            "consequences": [settings[j][2] for j in idx[2]],
            "prompt_variant": 0,
            "dilemma": np.array([f"d{i:03d}" for i in range(dilemmas)])[idx[1]],
            "topic_group": "t",
            "solution_shape": "orig",
            "gender": [cells[j][0] for j in idx[3]],
            "race": [cells[j][1] for j in idx[3]],
            "recovered": None,
            "favor": rng.binomial(favor_trials, 0.15),
            "favor_trials": favor_trials,
            "against": rng.binomial(against_trials, 0.12),
            "against_trials": against_trials,
        }
    )


def bench_boot(systems: int, dilemmas: int, n_boot: int, repeats: int) -> None:
    counts = synthetic_counts(systems, dilemmas)
    print(
        f"count table: {len(counts):,} rows ({systems} systems x {dilemmas} dilemmas x "
        f"{2 * len(SETTINGS)} settings x {len(GENDERS) * len(RACES)} cells)"
    )
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        out = bootstrap(counts, n_boot=n_boot, seed=2026)
        times.append(time.perf_counter() - start)
    sizes = ", ".join(f"{k} {len(v):,}" for k, v in out.items())
    print(f"output rows: {sizes}")
    print(
        f"bootstrap, {n_boot} replicates: best {min(times):.2f} s, "
        f"median {float(np.median(times)):.2f} s over {repeats} run(s)"
    )


def bench_store(db: str | None, systems: int, n_boot: int) -> None:
    """Time the whole analysis on a store: SQL aggregation, then every table."""
    import tempfile
    from pathlib import Path

    from cuegap.designs.dilemma._analysis_settings import AnalysisSettings
    from cuegap.designs.dilemma._analysis_tables import frequentist_tables, load_store_data
    from cuegap.designs.dilemma.simulate import simulate
    from cuegap.ingest import ingest_path
    from cuegap.schema import make_engine, upgrade

    with tempfile.TemporaryDirectory() as tmp:
        if db is None:
            sim = simulate(Path(tmp) / "data", systems=systems, seed=2026)
            db = f"sqlite:///{Path(tmp) / 'store.db'}"
            engine = make_engine(db)
            upgrade(engine)
            for f in (sim.itembank_path, sim.responses_path):
                ingest_path(engine, f)
            print(f"simulated and ingested {sim.n_responses:,} responses ({systems} systems)")
        engine = make_engine(db)
        start = time.perf_counter()
        rows = pd.read_sql("SELECT * FROM response", engine.connect())
        naive = time.perf_counter() - start
        print(f"baseline: load every response row into pandas: {naive:.2f} s ({len(rows):,} rows)")
        del rows
        start = time.perf_counter()
        data = load_store_data(engine)
        agg = time.perf_counter() - start
        print(f"SQL aggregation (count tables): {agg:.2f} s ({len(data.decisions):,} count rows)")
        for boot in (0, n_boot):
            start = time.perf_counter()
            tables = frequentist_tables(data, AnalysisSettings(n_boot=boot))
            took = time.perf_counter() - start
            print(f"all {len(tables)} tables, bootstrap {boot}: {took:.2f} s")
            if boot == 0:
                total = agg + took
        print(
            f"analysis without bootstrap: {total:.2f} s [target < 10 s]; "
            f"ratio to the naive row load alone: {total / naive:.2f}"
        )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--boot", action="store_true", help="time the bootstrap")
    parser.add_argument("--store", action="store_true", help="time the whole analysis")
    parser.add_argument("--db", help="analyse this store instead of a fresh simulation")
    parser.add_argument("--systems", type=int, default=14)
    parser.add_argument("--dilemmas", type=int, default=100)
    parser.add_argument("--n-boot", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    if not (args.boot or args.store):
        parser.error("choose a benchmark: --boot and/or --store")
    if args.boot:
        bench_boot(args.systems, args.dilemmas, args.n_boot, args.repeats)
    if args.store:
        bench_store(args.db, args.systems, args.n_boot)


if __name__ == "__main__":
    main()
