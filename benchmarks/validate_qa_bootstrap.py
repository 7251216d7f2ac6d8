"""Coverage of the QA bootstrap's intervals against planted truth (issue 13, §4).

Usage::

    .venv/bin/python benchmarks/validate_qa_bootstrap.py              # 2000 audits, 3 sizes
    .venv/bin/python benchmarks/validate_qa_bootstrap.py --audits 200 --sizes 40

Each simulated audit is one system: six dimensions, explicit and implicit cues, both
contexts, both polarities, ``size`` answers per (cue, context, dimension, polarity, gold)
cell, drawn as multinomial counts from planted answer shares (target, non-target, unknown,
unparsable) that differ by dimension. The planted system-level gap of every metric is the
score of the expected counts (the ratio of expectations), signed as :func:`qa_cue_gap`
signs it. Printed per cell size: the share of audits whose central 90 % interval
(:func:`cuegap.designs.qa.stats.qa_bootstrap`) covers the planted gap, per metric (target 85-95 %).

All audits are systems of one count table, so one bootstrap call handles them all; each
system's replicates come from its own random stream, so the audits are independent.
The tests run :func:`coverage` on 200 small audits (tests/test_qa_bootstrap.py).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from cuegap.designs.qa.stats import qa_bootstrap, qa_cue_gap, qa_scores, qa_system_scores

ANSWERS = ("target", "non_target", "unknown", "unparsable")
DIMENSIONS = ("age", "caste", "gender", "region", "religion", "ses")
CELLS = (
    ("ambiguous", "negative", "unknown"),
    ("ambiguous", "nonneg", "unknown"),
    ("disambiguated", "negative", "target"),
    ("disambiguated", "negative", "non_target"),
    ("disambiguated", "nonneg", "target"),
    ("disambiguated", "nonneg", "non_target"),
)


def planted_shares(seed: int = 7) -> dict[tuple[str, str, str, str, str], np.ndarray]:
    """Answer shares per (cue, dimension, context, polarity, gold), fixed by ``seed``.

    Explicit: mostly correct, a little stereotypical; implicit: fewer unknowns in ambiguous
    contexts and a stereotypical lean, stronger in some dimensions.
    """
    rng = np.random.default_rng(seed)
    shares = {}
    for k, dim in enumerate(DIMENSIONS):
        lean = 0.05 + 0.05 * k
        for cue in ("explicit", "implicit"):
            commit = 0.15 if cue == "explicit" else 0.45 + 0.05 * rng.random()
            tilt = 0.2 * lean if cue == "explicit" else lean
            for context, polarity, gold in CELLS:
                unp = 0.02 + 0.02 * rng.random()
                if context == "ambiguous":
                    st, anti = commit * (0.5 + tilt), commit * (0.5 - tilt)
                    unknown = 1 - commit
                else:
                    stereo_gold = (gold == "target") == (polarity == "negative")
                    right = 0.85 if stereo_gold else 0.85 - tilt
                    st = right if stereo_gold else (1 - right) * 0.8
                    anti = (1 - right) * 0.8 if stereo_gold else right
                    unknown = 1 - st - anti
                target, non_target = (st, anti) if polarity == "negative" else (anti, st)
                p = np.array([target, non_target, unknown, 0.0]) * (1 - unp)
                p[3] = unp
                shares[(cue, dim, context, polarity, gold)] = p / p.sum()
    return shares


def _table(values: dict, systems: list[str]) -> pd.DataFrame:
    rows = []
    for system in systems:
        for (cue, dim, context, polarity, gold), counts in values[system].items():
            for answer, n in zip(ANSWERS, counts, strict=True):
                rows.append((system, "zero-shot", cue, context, dim, "", polarity, gold, answer, n))
    cols = ["system", "strategy", "cue", "context", "dimension", "subgroup", "polarity", "gold"]
    return pd.DataFrame(rows, columns=[*cols, "answer", "n"])


def simulate_audits(n_audits: int, size: int, seed: int = 2026) -> pd.DataFrame:
    """Multinomial counts of ``n_audits`` systems (``audit0000``, ...) at ``size`` per cell."""
    rng = np.random.default_rng(seed)
    shares = planted_shares()
    systems = [f"audit{i:04d}" for i in range(n_audits)]
    values = {s: {key: rng.multinomial(size, p) for key, p in shares.items()} for s in systems}
    return _table(values, systems)


def planted_gap() -> pd.DataFrame:
    """The planted system-level gap per metric: the scores of the expected counts.

    The scores are ratios of counts, so the expected counts of any cell size give the same
    values; 10^9 answers per cell, rounded to integers, approximate them to 1e-9.
    """
    shares = planted_shares()
    expected = {"truth": {key: np.round(1e9 * p) for key, p in shares.items()}}
    scores = qa_scores(_table(expected, ["truth"]))
    return qa_cue_gap(qa_system_scores(scores))[["metric", "gap"]]


def coverage(
    n_audits: int = 200, size: int = 40, n_boot: int = 1000, seed: int = 2026
) -> pd.DataFrame:
    """Per metric: the share of audits whose ``level`` interval covers the planted gap."""
    counts = simulate_audits(n_audits, size, seed)
    truth = planted_gap().set_index("metric")["gap"]
    gap = qa_bootstrap(counts, n_boot=n_boot, seed=seed)["cue_gap"]
    gap = gap.assign(truth=gap["metric"].map(truth))
    gap["covered"] = (gap["gap_low"] <= gap["truth"]) & (gap["truth"] <= gap["gap_high"])
    gap["error"] = gap["gap"] - gap["truth"]
    return (
        gap.groupby("metric")
        .agg(coverage=("covered", "mean"), bias=("error", "mean"), audits=("covered", "size"))
        .reset_index()
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--audits", type=int, default=2000)
    parser.add_argument("--sizes", type=int, nargs="+", default=[20, 40, 200])
    parser.add_argument("--n-boot", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=2026)
    args = parser.parse_args(argv)
    for size in args.sizes:
        start = time.perf_counter()
        table = coverage(args.audits, size, args.n_boot, args.seed)
        took = time.perf_counter() - start
        print(f"cell size {size}, {args.audits} audits, {args.n_boot} replicates ({took:.1f} s)")
        for _, r in table.iterrows():
            print(
                f"  {r['metric']:<12} 90% interval coverage {100 * r['coverage']:5.1f}% "
                f"(target 85-95%)  mean error {r['bias']:+.4f}"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
