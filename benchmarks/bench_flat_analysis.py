"""Analysis cost against the number of responses: paper scale and ten times as many answers.

Usage::

    .venv/bin/python benchmarks/bench_flat_analysis.py            # 14 systems, 10 repeats,
                                                                 #   SQLite (+ PostgreSQL when
                                                                 #   CUEGAP_TEST_PG_URL is set)
    .venv/bin/python benchmarks/bench_flat_analysis.py --quick    # a quick look

Targets (issue 14): at 10x paper scale ``cuegap analyze`` (frequentist, ``--boot 200``) stays
under 1 GiB peak and takes at most 1.5x its paper-scale time, on SQLite and PostgreSQL.
"10x" here is ten answers to every prompt (``repeat`` 0-9, 3,052,000 responses for 14
systems): ten times the responses for the same study design, which is what "cost
independent of the number of responses" can promise. ``--systems-10x`` also measures ten
times the systems (140, as many responses), whose statistics are themselves ten times as
many; its time is printed for reference, with the memory target only.

Each analysis runs in a fresh process, so its peak resident memory is its own. Ingest times
are printed too (untimed targets live in ``bench_ingest.py``).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench_ingest import _pg_url, measure

MAX_PEAK_MIB = 1024
MAX_RATIO = 1.5


def repeated(src: Path, dst: Path, repeats: int) -> int:
    """Write ``src``'s responses answered ``repeats`` times (repeat 0 .. repeats-1)."""
    lines = src.read_bytes().splitlines()
    head = 1 if lines and lines[0].startswith(b'{"format"') else 0  # cuegap's header line
    n = 0
    with dst.open("wb") as out:
        out.writelines(line + b"\n" for line in lines[:head])
        for k in range(repeats):
            for line in lines[head:]:
                rec = orjson.loads(line)
                rec["repeat"] = k
                rec["sample_id"] = f"{rec.get('sample_id')}-r{k}"
                out.write(orjson.dumps(rec) + b"\n")
                n += 1
    return n


def ingest(url: str, bank: str, path: str) -> dict:
    """Create a store at ``url`` and ingest the bank and the responses (timed: responses)."""
    from cuegap.ingest import ingest_path
    from cuegap.schema import make_engine, upgrade

    engine = make_engine(url)
    upgrade(engine)
    ingest_path(engine, bank)
    start = time.perf_counter()
    s = ingest_path(engine, path)
    return {"seconds": time.perf_counter() - start, "stored": s.stored}


def analyze(url: str, n_boot: int, design: str = "dilemma") -> dict:
    """The frequentist analysis ``cuegap analyze [--design qa] --boot n_boot`` runs."""
    from cuegap.designs.dilemma._analysis import analyze as run_analysis
    from cuegap.designs.dilemma._analysis_settings import AnalysisSettings
    from cuegap.designs.qa._analysis import QASettings, analyze_qa
    from cuegap.schema import make_engine

    start = time.perf_counter()
    if design == "qa":
        analyze_qa(make_engine(url), QASettings(n_boot=n_boot, seed=1))
    else:
        run_analysis(make_engine(url), AnalysisSettings(n_boot=n_boot, seed=1))
    return {"seconds": time.perf_counter() - start}


def _row(label: str, responses: int, ingest_s: float, seconds: float, peak: float) -> str:
    return f"  {label:<28} {responses:>10,} {ingest_s:>9.1f} {seconds:>10.1f} {peak:>10.0f}"


def run_backend(name: str, urls: dict[str, str], files: dict[str, tuple[Path, int]], bank: Path,
                n_boot: int, design: str = "dilemma") -> bool:  # fmt: skip
    """Ingest and analyse each scale on one backend; print the table and the targets."""
    print(f"\n{name}: frequentist analysis, {n_boot} bootstrap replicates")
    print(f"  {'scale':<28} {'responses':>10} {'ingest s':>9} {'analyze s':>10} {'peak MiB':>10}")
    res = {}
    for label, (path, n) in files.items():
        ingest_s, _, _ = measure(ingest, urls[label], str(bank), str(path))
        seconds, peak, _ = measure(analyze, urls[label], n_boot, design)
        res[label] = (seconds, peak)
        print(_row(label, n, ingest_s, seconds, peak), flush=True)
    base = res["1x answers"][0]
    ok = True
    for label, (seconds, peak) in res.items():
        if label == "1x answers":
            continue
        ratio = seconds / base
        mem_ok = peak < MAX_PEAK_MIB
        time_target = label.endswith("x answers")
        line = f"  {label}: {ratio:.2f}x the time of one answer each"
        if time_target:
            line += f" (target <= {MAX_RATIO}x: {'met' if ratio <= MAX_RATIO else 'NOT met'})"
            ok &= ratio <= MAX_RATIO
        else:
            line += " (reference: ten times the statistics)"
        line += f"; peak {peak:.0f} MiB (target < {MAX_PEAK_MIB}: {'met' if mem_ok else 'NOT met'})"
        ok &= mem_ok
        print(line)
    return ok


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--systems", type=int, default=14)
    ap.add_argument("--repeats", type=int, default=10)
    ap.add_argument("--boot", type=int, default=200)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--systems-10x", action="store_true", help="also 10x the systems")
    ap.add_argument("--quick", action="store_true", help="<= 2 systems, 3 repeats, 20 replicates")
    ap.add_argument("--no-pg", action="store_true", help="SQLite only")
    ap.add_argument("--design", choices=("dilemma", "qa"), default="dilemma",
                    help="qa: seed 001's design at the simulator's small scale")  # fmt: skip
    args = ap.parse_args(argv)
    if args.quick:
        args.systems, args.repeats, args.boot = min(args.systems, 2), 3, 20
    from cuegap.designs.dilemma.simulate import simulate
    from cuegap.designs.qa._simulate import simulate_qa

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        if args.design == "qa":
            sim = simulate_qa(root / "sim", systems=args.systems, seed=args.seed)
        else:
            sim = simulate(root / "sim", systems=args.systems, seed=args.seed)
        n1 = sim.n_responses
        many = root / "repeats.jsonl"
        files = {
            "1x answers": (sim.responses_path, n1),
            f"{args.repeats}x answers": (many, repeated(sim.responses_path, many,
                                                                 args.repeats)),
        }  # fmt: skip
        if args.systems_10x and args.design == "dilemma":
            big = simulate(root / "big", systems=min(10 * args.systems, 100), seed=args.seed)
            n = len(big.responses_path.read_bytes().splitlines()) - 1
            files[f"10x systems ({min(10 * args.systems, 100)})"] = (big.responses_path, n)
        print(f"{args.design}: {args.systems} systems, {n1:,} responses; repeats {args.repeats}")
        urls = {label: f"sqlite:///{root / f'store{i}.db'}" for i, label in enumerate(files)}
        ok = run_backend("SQLite", urls, files, sim.itembank_path, args.boot, args.design)
        pg = os.environ.get("CUEGAP_TEST_PG_URL")
        if pg and not args.no_pg:
            made = {label: _pg_url(pg) for label in files}
            try:
                ok &= run_backend(
                    "PostgreSQL", {k: v[0] for k, v in made.items()}, files, sim.itembank_path,
                    args.boot, args.design,
                )  # fmt: skip
            finally:
                for _, drop in made.values():
                    drop()
        else:
            print("\nPostgreSQL: skipped (set CUEGAP_TEST_PG_URL)")
    print(f"\nall targets met: {'yes' if ok else 'no'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
