"""QA Bayesian fit on the real shape of a published ImplicitBBQ result set (issue 27).

Usage::

    .venv/bin/python benchmarks/bench_qa_bayes.py            # default sampler settings
    .venv/bin/python benchmarks/bench_qa_bayes.py --quick    # 2 chains x 300 draws

Data: one system, three BBQ categories of two sub-groups each, explicit and implicit cues
only (no controls), ambiguous and disambiguated items: 640 answers per system x cue x
sub-group x context, 15,360 answers in all (the published GPT-4o set has 15,472), drawn
with the QA simulator's planted counts (:func:`cuegap.designs.qa.stats._sim.planted_qa_counts`,
seed 001's Table 2 ranges).

The fit runs in a fresh process so that its peak memory (VmHWM) is its own, with exactly
the settings of ``cuegap analyze --design qa --bayes`` (4 chains x 1000 draws, 1000 tuning
steps, nutpie, one retry, the r-hat / ESS / divergence gate) unless ``--quick``. Printed:
the model's pooling levels, the wall time and the CPU time (this process's threads and
its compiler subprocesses) of the fit (compile + sampling, every attempt), the load
average around it (on a shared machine the wall time is the CPU time stretched by the
other users' load), the peak memory, each attempt's diagnostics and whether the gate
passed. Target: under 60 s and 1 GB on the shared 2-core machine.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import resource
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

CATEGORIES = ("age", "gender", "race")
PER_CELL = 640


def _peak_mib() -> float:
    """Peak resident memory of this process (VmHWM from /proc/self/status)."""
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def _children_cpu() -> float:
    """CPU seconds of finished child processes (the C compiler, when one runs)."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def one_system_counts(seed: int = 7, n: int = PER_CELL):
    """One system, three categories of two sub-groups, explicit and implicit, ambiguous
    and disambiguated: 24 × ``n`` answers."""
    from cuegap.designs.qa.stats._sim import planted_qa_counts

    counts, truth = planted_qa_counts(
        [None], n=n, dimensions=CATEGORIES, subgroups=2, disambiguated=True, seed=seed
    )
    truth.pop("_dis", None)
    return counts, truth


def _fit(kw: dict, out: mp.Queue) -> None:
    from cuegap.designs.qa.stats import fit_qa_bayes, qa_bayes_tables
    from cuegap.designs.qa.stats._bayes_data import prepare_qa_counts
    from cuegap.designs.qa.stats._bayes_model import qa_model_levels

    counts, truth = one_system_counts()
    levels = qa_model_levels(prepare_qa_counts(counts))
    load = os.getloadavg()[0]
    start, cpu0, kids0 = time.perf_counter(), time.process_time(), _children_cpu()
    fit = fit_qa_bayes(counts, **kw)
    seconds = time.perf_counter() - start
    cpu = time.process_time() - cpu0 + _children_cpu() - kids0
    gap = qa_bayes_tables(fit)["qa_bayes_gap"].iloc[0]
    out.put({
        "answers": int(counts["n"].sum()), "levels": levels, "seconds": seconds, "cpu": cpu,
        "load": (load, os.getloadavg()[0]),
        "peak_mib": _peak_mib(), "converged": fit.converged, "message": fit.message,
        "diagnostics": fit.diagnostics.to_string(index=False),
        "gap": (gap["gap"], gap["gap_low"], gap["gap_high"]), "planted": next(iter(truth.values())),
    })  # fmt: skip


def main() -> None:
    """Fit once in a fresh process and print the figures."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="2 chains x 300 draws")
    ap.add_argument("--seed", type=int, default=2026)
    args = ap.parse_args()
    from cuegap.designs.dilemma._analysis_settings import BayesSettings

    b = BayesSettings()
    kw = b.fit_kwargs(seed=args.seed)
    if args.quick:
        kw |= {"draws": 300, "tune": 300, "chains": 2}
    ctx = mp.get_context("spawn")
    q: mp.Queue = ctx.Queue()
    p = ctx.Process(target=_fit, args=(kw, q))
    p.start()
    r = q.get()
    p.join()
    kept = [k for k, why in r["levels"].items() if not why]
    dropped = {k: why for k, why in r["levels"].items() if why}
    print(f"QA Bayesian fit, one system x {len(CATEGORIES)} categories x 2 sub-groups, "
          f"explicit + implicit, {r['answers']:,} answers")  # fmt: skip
    print(f"sampler: {kw['chains']} chains x {kw['draws']} draws, {kw['tune']} tuning, "
          f"{kw['sampler']}")  # fmt: skip
    print(
        f"levels: {', '.join(kept) or 'none'}; dropped: "
        + ("; ".join(f"{k} ({why})" for k, why in dropped.items()) or "none")
    )
    print(f"fit wall time (compile + every attempt): {r['seconds']:.1f} s  (target < 60 s); "
          f"CPU time {r['cpu']:.1f} s; load average {r['load'][0]:.1f} before, "
          f"{r['load'][1]:.1f} after, on {os.cpu_count()} cores")  # fmt: skip
    print(f"peak memory (VmHWM): {r['peak_mib']:.0f} MiB  (target < 1024 MiB)")
    print(f"gate: {'passed' if r['converged'] else 'FAILED'}: {r['message']}")
    print(r["diagnostics"])
    g, lo, hi = r["gap"]
    print(f"G = {g:+.3f} [{lo:+.3f}, {hi:+.3f}] (90% CrI); planted {r['planted']:+.3f}")


if __name__ == "__main__":
    main()
