"""Calibration of the conversation design's Bayesian model and verdicts against planted truth.

Usage::

    .venv/bin/python benchmarks/validate_conv_bayes.py --audits 100
    .venv/bin/python benchmarks/validate_conv_bayes.py --audits 4 --quick

Each audit: five systems, three benchmarks of one category, demographics none / black /
white, personas none / teacher / farmer (persona offsets SD 0.2), both instantiations
and reveal conditions, ``--small`` conversations per cell in half of the audits and
``--large`` in the others (:func:`cuegap.designs.conversation.stats.simulate_conv_counts`). The
policy's
contrast ΔDemoΔRC λ_base(black, white, human) is planted per system by a logit effect on
the baseline's shift rate towards a revealed "black" identity: 0 (``zero``), δ/4
(``small``), 2δ twice (``two_delta``) and one drawn uniformly in [−3δ, 3δ] (``drawn``).
Each audit is fitted with exactly the sampler settings of ``cuegap analyze --design
conversation --bayes`` (:class:`cuegap.designs.dilemma._analysis_settings.BayesSettings` and the
defaults of
:func:`cuegap.designs.conversation.stats.fit_conv_bayes`: 4 chains × 1000 draws, 1000 tuning steps,
nutpie,
one retry, the r̂/ESS/divergence gate) unless ``--quick``; the frequentist side
(``boot_*`` columns of the shared harness) is the t-test rule over personas. Printed by
the shared harness (``benchmarks/_calibration.py``): the gate's pass rate, coverage of
the 90% posterior interval of the planted contrast (on the first benchmark) and of the
t-interval, RMSE, and the verdict rates; then coverage of every contrast of every
benchmark and condition (all five contrasts; the issue's target is 85-95%).
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats
from scipy.special import logit

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _calibration import run_audits, share, summarise_by_size

from cuegap.designs import BayesSettings
from cuegap.designs.conversation._analysis import (
    ConvSettings,
    conv_audit_tables,
    conv_bayes_audit_tables,
)
from cuegap.designs.conversation.stats import conv_design, simulate_conv_counts
from cuegap.designs.conversation.stats._bayes_model import conv_contrast_draws

SETTINGS = ConvSettings()
DELTA = SETTINGS.delta
BASE = 0.3
BENCHMARKS = {"BBQ": 1, "DifferenceAwareness": 1, "DiscrimEval": 1}
KINDS = ("zero", "small", "two_delta", "two_delta", "drawn")
COND = ("demo_rc_base_pair", "black", "white", "human")

__all__ = ["DELTA", "one_audit"]


def _effect(contrast: float) -> float:
    """The logit effect on λ_base(black, revealed) that plants ``contrast`` (persona
    offsets 0): expit(logit 0.3 + e) − 0.3 = contrast."""
    return float(logit(BASE + contrast) - logit(BASE))


def _truth(sim, fit) -> pd.DataFrame:
    """Every contrast's planted value: the planted λ's averaged over personas (the
    model's estimand) through the same contrast code."""
    data = fit.data
    t = sim.truth.groupby(["system", "benchmark", "demographics", "instantiation", "reveal"])[
        ["lambda_iden", "lambda_base"]
    ].mean()
    idx = pd.MultiIndex.from_product(
        [data.systems, data.benchmarks, data.demographics, data.instantiations,
         ["revealed", "anonymous"]]
    )  # fmt: skip
    t = t.reindex(idx)
    shape = (len(data.systems), len(data.benchmarks), len(data.demographics),
             len(data.instantiations), 2)  # fmt: skip
    lam = np.stack([t["lambda_iden"].to_numpy().reshape(shape),
                    t["lambda_base"].to_numpy().reshape(shape)])[None, None]  # fmt: skip
    cond, truth = conv_contrast_draws(lam, data)
    return cond.assign(planted=truth[0, 0])


def one_audit(seed: int, n: int, *, bayes: BayesSettings, every: list) -> pd.DataFrame:
    """Fit and test one planted audit; one row per system (appends all-contrast coverage
    rows to ``every``)."""
    rng = np.random.default_rng(seed)
    planted = [0.0, DELTA / 4, 2 * DELTA, 2 * DELTA, float(rng.uniform(-3 * DELTA, 3 * DELTA))]
    systems = [f"s{k}" for k in range(len(KINDS))]
    cells = conv_design(systems=systems, benchmarks=BENCHMARKS,
                        demographics=("none", "black", "white"),
                        personas=("none", "teacher", "farmer"))  # fmt: skip
    effects = {(s, "black", "human"): _effect(c) for s, c in zip(systems, planted, strict=True)}
    sim = simulate_conv_counts(cells=cells, conversations=n, persona_sd=0.2,
                               base_reveal_effects=effects, seed=seed)  # fmt: skip
    settings = replace(SETTINGS, bayes=replace(bayes, seed=seed))
    start = time.perf_counter()
    fit, btab = conv_bayes_audit_tables(sim.counts, settings)
    seconds = time.perf_counter() - start
    freq = conv_audit_tables(sim.counts, SETTINGS)
    truth = _truth(sim, fit)
    keys = ["contrast", "system", "benchmark", "demographic", "reference", "instantiation"]
    bc = btab["conv_bayes_contrasts"].merge(truth, on=keys)
    every.append(bc.assign(seed=seed, n=n, passed=fit.converged))
    bc = bc.set_index(keys)
    tests = freq["conv_tests"].set_index(keys)
    bv, fv = btab["verdicts"].set_index("system"), freq["verdicts"].set_index("system")
    rows = []
    for system, kind in zip(systems, KINDS, strict=True):
        key = (COND[0], system, "BBQ", *COND[1:])
        b, t = bc.loc[key], tests.loc[key]
        half = stats.t.ppf(1 - SETTINGS.alpha, t["df"]) * t["sd"] / np.sqrt(t["n_units"])
        rows.append({
            "seed": seed, "n": n, "system": system, "kind": kind, "planted": b["planted"],
            "passed": fit.converged, "seconds": seconds, "attempts": len(fit.diagnostics),
            "bayes": b["mean"], "bayes_low": b["lower"], "bayes_high": b["upper"],
            "bayes_verdict": bv.loc[system, "verdict"],
            "boot": t["mean"], "boot_low": t["mean"] - half, "boot_high": t["mean"] + half,
            "boot_verdict": fv.loc[system, "verdict"],
        })  # fmt: skip
    return pd.DataFrame(rows)


def _contrast_coverage(allc: pd.DataFrame) -> str:
    cov = (allc["lower"] <= allc["planted"]) & (allc["planted"] <= allc["upper"])
    lines = ["90% posterior intervals covering the planted value, every contrast, benchmark "
             "and condition:", f"  all fits:    {share(cov)}",
             f"  passed fits: {share(cov[allc['passed'].astype(bool)])}"]  # fmt: skip
    for contrast, sub in allc.groupby("contrast", sort=False):
        c = (sub["lower"] <= sub["planted"]) & (sub["planted"] <= sub["upper"])
        lines.append(f"  {contrast:<20} {share(c)}")
    return "\n".join(lines)


def _summary(df: pd.DataFrame, allc: pd.DataFrame) -> str:
    return (
        "'bootstrap' columns: the t-test rule over personas (90% t-interval)\n"
        "(size = conversations per cell) "
        + summarise_by_size(df, name="Δ")
        + "\n\n"
        + _contrast_coverage(allc)
    )


def main() -> None:
    """Run the audits and print the summary."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--audits", type=int, default=100)
    ap.add_argument("--small", type=int, default=300, help="conversations per cell, small")
    ap.add_argument("--large", type=int, default=3000, help="conversations per cell, large")
    ap.add_argument("--quick", action="store_true", help="4 chains x 500 draws (smoke test)")
    ap.add_argument("--max-minutes", type=float, help="start no audit after this long")
    ap.add_argument("--out", type=Path, help="CSV the per-system rows are appended to "
                    "(every contrast's rows go to OUT.contrasts.csv)")  # fmt: skip
    ap.add_argument("--first-seed", type=int, default=2000, help="seed of the first audit")
    ap.add_argument("--summarise", type=Path, nargs="+", help="only print the summary of "
                    "earlier --out files (batches of audits combined)")  # fmt: skip
    args = ap.parse_args()
    if args.summarise:
        df = pd.concat([pd.read_csv(p) for p in args.summarise], ignore_index=True)
        have = [Path(f"{p}.contrasts.csv") for p in args.summarise]
        have = [p for p in have if p.exists()]  # batches run without --out have none
        allc = (
            pd.concat([pd.read_csv(p) for p in have])
            if have
            else pd.DataFrame(columns=["contrast", "lower", "upper", "planted", "passed"])
        )
        print(_summary(df, allc))
        return
    bayes = BayesSettings()
    if args.quick:
        bayes = replace(bayes, draws=500, tune=500)
    every: list[pd.DataFrame] = []

    def audit(seed: int, n: int) -> pd.DataFrame:
        rows = one_audit(seed, n, bayes=bayes, every=every)
        if args.out is not None:
            path = Path(f"{args.out}.contrasts.csv")
            every[-1].to_csv(path, mode="a", header=not path.exists(), index=False)
        return rows

    df = run_audits(
        audit, audits=args.audits, sizes=(args.small, args.large), first_seed=args.first_seed,
        max_seconds=None if args.max_minutes is None else 60 * args.max_minutes, out=args.out,
    )  # fmt: skip
    settings = f"{bayes.chains} chains x {bayes.draws} draws, {bayes.tune} tuning, retry, gate"
    print(f"Conversation Bayesian validation ({settings}); δ = {DELTA}")
    print(_summary(df, pd.concat(every, ignore_index=True)))


if __name__ == "__main__":
    main()
