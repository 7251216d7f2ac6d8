"""Planted truth for the moral-dilemma gap's format sensitivity (issue 15), the long version.

Usage::

    .venv/bin/python benchmarks/bench_dilemma_formats.py                 # 200 audits + 5 stores
    .venv/bin/python benchmarks/bench_dilemma_formats.py --audits 50 --stores 0

Count level (``--audits``): each simulated audit has two systems answering under
``--variants`` prompt variants; per variant the counts come from
:func:`cuegap.designs.dilemma.stats._bayes_sim.simulate_counts` with a planted true macro gap: 8 pp
under
every variant for ``sys-01`` (format-insensitive) and 6 ± 6 pp alternately for ``sys-02``
(format-driven), each variant with its own stream.
:func:`cuegap.designs.dilemma.stats._formats.dilemma_gap_formats`
(δ = 2 pp, level 0.95) should leave the first alone and mark the second format-sensitive
in at least 90 % of audits each (``tests/test_dilemma_formats.py`` runs 20 audits).

Store level (``--stores``): the response simulator (``prompt_variants=4``,
``format_effect_pp=12`` on ``sim-system-01``, a synthetic bank of 50 dilemmas) → ingest
into SQLite → ``cuegap.designs.dilemma._analysis.analyze``; printed: how often the format-driven
flag became
``format-sensitive``, and the time per store.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from cuegap.designs.dilemma.stats._bayes_sim import simulate_counts
from cuegap.designs.dilemma.stats._formats import dilemma_gap_formats


def audit(a: int, *, variants: int = 6, pairs: int = 80) -> pd.DataFrame:
    """One simulated audit's decision counts (see the module docstring)."""
    parts = []
    for v in range(variants):
        shift = 6.0 if v % 2 == 0 else -6.0
        sim = simulate_counts(
            n_systems=2, pairs=pairs, gaps=[8.0, 6.0 + shift], dilemmas=20, seed=1000 * a + v
        )
        parts.append(sim.counts.assign(prompt_variant=f"v{v}"))
    return pd.concat(parts, ignore_index=True)


def classify(audits: int, *, variants: int, pairs: int, n_boot: int) -> tuple[int, int]:
    """(steady audits not marked, driven audits marked) over ``audits`` audits."""
    steady = driven = 0
    for a in range(audits):
        out = dilemma_gap_formats(audit(a, variants=variants, pairs=pairs), delta=2.0,
                                  n_boot=n_boot).set_index("system")  # fmt: skip
        steady += not bool(out.loc["sys-01", "format_sensitive"])
        driven += bool(out.loc["sys-02", "format_sensitive"])
    return steady, driven


def stores(n: int) -> tuple[int, int, float]:
    """(format-driven flags marked, stores with such a flag, seconds per store)."""
    from cuegap.designs.dilemma._analysis import analyze
    from cuegap.designs.dilemma._analysis_settings import AnalysisSettings
    from cuegap.designs.dilemma.simulate import simulate, synthetic_item_bank
    from cuegap.ingest import ingest_path
    from cuegap.schema import make_engine, upgrade

    marked = flagged = 0
    start = time.perf_counter()
    for i in range(n):
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            bank = synthetic_item_bank(seed=3, n_dilemmas=50)
            sim = simulate(root / "d", systems=2, seed=3 + 100 * i, item_bank=bank,
                           prompt_variants=4, format_effect_pp=12.0, format_driven=[1])  # fmt: skip
            engine = make_engine(f"sqlite:///{root / 's.db'}")
            upgrade(engine)
            ingest_path(engine, sim.itembank_path)
            ingest_path(engine, sim.responses_path)
            v = analyze(engine, AnalysisSettings(n_boot=200)).tables["verdicts"]
            engine.dispose()
            row = v.set_index("system").loc["sim-system-01"]
            if row["verdict_without_formats"] in ("flagged", "passed"):
                flagged += 1
                marked += row["verdict"] == "format-sensitive"
    return marked, flagged, (time.perf_counter() - start) / max(n, 1)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--audits", type=int, default=200)
    ap.add_argument("--variants", type=int, default=6)
    ap.add_argument("--pairs", type=int, default=80)
    ap.add_argument("--boot", type=int, default=200)
    ap.add_argument("--stores", type=int, default=5)
    args = ap.parse_args()
    t0 = time.perf_counter()
    steady, driven = classify(args.audits, variants=args.variants, pairs=args.pairs,
                              n_boot=args.boot)  # fmt: skip
    took = time.perf_counter() - t0
    print(f"count level: {args.audits} audits, {args.variants} variants, {args.pairs} pairs "
          f"per cell, {args.boot} bootstrap replicates ({took:.1f} s)")  # fmt: skip
    for label, hits in (("steady 8 pp gap not marked", steady),
                        ("format-driven 6 ± 6 pp gap marked", driven)):  # fmt: skip
        share = hits / max(args.audits, 1)
        print(f"  {label:<36} {hits:>4}/{args.audits}  {100 * share:5.1f} %  "
              f"(target >= 90 %: {'met' if share >= 0.9 else 'NOT met'})")  # fmt: skip
    if args.stores:
        marked, flagged, per = stores(args.stores)
        print(f"store level: {args.stores} simulated stores (2 systems x 4 variants, 50 "
              f"dilemmas), {per:.1f} s each (simulate, ingest, analyze)")  # fmt: skip
        print(f"  format-driven flag or pass marked format-sensitive: {marked}/{flagged}")


if __name__ == "__main__":
    main()
