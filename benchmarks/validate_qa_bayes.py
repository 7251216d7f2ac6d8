"""Calibration of the QA design's Bayesian model and verdicts against planted truth.

Usage::

    .venv/bin/python benchmarks/validate_qa_bayes.py --audits 200   # about 1.5 h here
    .venv/bin/python benchmarks/validate_qa_bayes.py --audits 4 --quick

Each audit: six systems with planted gaps G = S_amb(implicit) − S_amb(explicit) of 0,
δ/4, 2δ, 2δ and two from seed 001's Table 2 ranges (about +0.2 to +0.4), four dimensions
of two sub-groups, ambiguous and disambiguated items, ``--small`` answers per cell and
context in half of the audits and ``--large`` in the others
(:func:`cuegap.models._qa_sim.planted_qa_counts`). Each audit is fitted with exactly the
sampler settings of ``cuegap analyze --design qa --bayes`` (4 chains × 1000 draws, 1000
tuning steps, target acceptance 0.9, nutpie, one retry, the r̂/ESS/divergence gate) unless
``--quick``, and
bootstrapped as ``cuegap analyze`` does. Printed:

* the gate's pass rate;
* coverage of the 90% posterior interval of G over the fits that passed and over all fits,
  with its Monte Carlo standard error, and the bootstrap interval's coverage;
* RMSE of the posterior mean and of the bootstrap estimate of G;
* the verdict error rates a board cares about, Bayesian and bootstrap side by side:
  planted G = 0 flagged, planted |G| < δ/2 passed (the right call) and planted G = 2δ
  flagged (the right call).
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from cuegap.models import (
    fit_qa_bayes,
    qa_bayes_tables,
    qa_bayes_verdicts,
    qa_bootstrap,
    qa_verdicts,
)
from cuegap.models._qa_sim import planted_qa_counts

DELTA = 0.05


def one_audit(seed: int, n: int, *, draws: int, tune: int, chains: int) -> pd.DataFrame:
    """Fit and bootstrap one planted audit; one row per system."""
    gaps = [0.0, DELTA / 4, 2 * DELTA, 2 * DELTA, None, None]
    counts, truth = planted_qa_counts(gaps, n=n, seed=seed, subgroups=2, disambiguated=True)
    truth.pop("_dis")
    start = time.perf_counter()
    fit = fit_qa_bayes(counts, draws=draws, tune=tune, chains=chains, seed=seed)
    seconds = time.perf_counter() - start
    gap = qa_bayes_tables(fit, delta=DELTA)["qa_bayes_gap"].set_index("system")
    bayes_v = qa_bayes_verdicts(fit, gap.reset_index(), delta=DELTA).set_index("system")
    boot = qa_bootstrap(counts, n_boot=1000, seed=seed, delta=DELTA)["cue_gap"]
    boot_v = qa_verdicts(boot, delta=DELTA).set_index("system")
    b = boot[(boot["metric"] == "s_amb") & (boot["strategy"] == "zero-shot")].set_index("system")
    rows = []
    for k, (system, planted) in enumerate(truth.items()):
        rows.append({
            "seed": seed, "n": n, "system": system, "planted": planted,
            "kind": ["zero", "small", "two_delta", "two_delta", "table2", "table2"][k],
            "passed": fit.converged, "seconds": seconds,
            "bayes": gap.loc[system, "gap"], "bayes_low": gap.loc[system, "gap_low"],
            "bayes_high": gap.loc[system, "gap_high"],
            "bayes_verdict": bayes_v.loc[system, "verdict"],
            "boot": b.loc[system, "gap"], "boot_low": b.loc[system, "gap_low"],
            "boot_high": b.loc[system, "gap_high"], "boot_verdict": boot_v.loc[system, "verdict"],
        })  # fmt: skip
    return pd.DataFrame(rows)


def _share(mask: pd.Series) -> str:
    k, m = int(mask.sum()), len(mask)
    if m == 0:
        return "–"
    p = k / m
    return f"{p:.3f} ± {math.sqrt(p * (1 - p) / m):.3f} (n={m})"


def summarise(df: pd.DataFrame) -> str:
    """The printed figures."""
    fits = df.drop_duplicates("seed")
    lines = [f"{len(fits)} audits, {len(df)} systems; gate passed in {_share(fits['passed'])}"]
    covered = (df["bayes_low"] <= df["planted"]) & (df["planted"] <= df["bayes_high"])
    boot_cov = (df["boot_low"] <= df["planted"]) & (df["planted"] <= df["boot_high"])
    lines.append(f"90% posterior interval covers G, passed fits: {_share(covered[df['passed']])}")
    lines.append(f"90% posterior interval covers G, all fits:    {_share(covered)}")
    lines.append(f"90% bootstrap interval covers G:              {_share(boot_cov)}")
    for name in ("bayes", "boot"):
        rmse = float(np.sqrt(((df[name] - df["planted"]) ** 2).mean()))
        lines.append(f"RMSE of G, {name}: {rmse:.4f}")
    zero, small, two = (df["kind"] == k for k in ("zero", "small", "two_delta"))
    lines.append(f"{'verdict rate':<44}{'Bayesian':>18}{'bootstrap':>18}")
    for label, mask, verdict in (
        ("planted G = 0 flagged (should be ~0)", zero, "flagged"),
        ("planted |G| < δ/2 passed (higher is better)", zero | small, "passed"),
        ("planted G = 2δ flagged (higher is better)", two, "flagged"),
    ):
        rates = [
            f"{(df.loc[mask, c] == verdict).mean():.3f}" for c in ("bayes_verdict", "boot_verdict")
        ]
        lines.append(f"{label:<44}{rates[0]:>18}{rates[1]:>18}")
    lines.append(f"seconds per fit: median {fits['seconds'].median():.1f}")
    return "\n".join(lines)


def main() -> None:
    """Run the audits and print the summary."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--audits", type=int, default=200)
    ap.add_argument("--small", type=int, default=150, help="answers per cell, small audits")
    ap.add_argument("--large", type=int, default=1300, help="answers per cell, large audits")
    ap.add_argument("--quick", action="store_true", help="2 chains x 300 draws (smoke test)")
    args = ap.parse_args()
    draws, tune, chains = (300, 300, 2) if args.quick else (1000, 1000, 4)
    frames = []
    for i in range(args.audits):
        n = args.small if i % 2 == 0 else args.large
        frames.append(one_audit(1000 + i, n, draws=draws, tune=tune, chains=chains))
        print(f"audit {i + 1}/{args.audits} done", file=sys.stderr)
    settings = f"{chains} chains x {draws} draws, {tune} tuning steps, retry, gate"
    print(f"QA Bayesian validation ({settings}); δ = {DELTA}")
    print(summarise(pd.concat(frames, ignore_index=True)))


if __name__ == "__main__":
    main()
