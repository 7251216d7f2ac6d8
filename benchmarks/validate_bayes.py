"""Calibration of the dilemma design's Bayesian model and verdicts against planted truth.

Usage::

    .venv/bin/python benchmarks/validate_bayes.py                   # 200 audits (hours here)
    .venv/bin/python benchmarks/validate_bayes.py --max-minutes 25 --out rows.csv
    .venv/bin/python benchmarks/validate_bayes.py --quick           # 4 tiny audits, a smoke test

Each audit is a count table of six systems drawn from the binomial-logit model of
:mod:`cuegap.designs.dilemma.stats._bayes_sim`, with planted macro gaps of 0, δ/4, 2δ and 2δ (δ the
default policy's 2 pp) and two drawn from the simulator's spread of performativeness;
audits alternate between small ones (``--small-pairs`` (item, individual) pairs per gender
× race cell, 14 by default: 210 decisions per condition, just over the policy's minimum of
200) and paper-scale ones (``--large-pairs``, 80: 1,200 per condition), with one dilemma
per 12 pairs per condition as in seed 000. Each audit is fitted with exactly what
``cuegap analyze --bayes`` runs
(:meth:`cuegap.designs.dilemma._analysis_settings.BayesSettings.fit_kwargs` and the
defaults of :func:`cuegap.designs.dilemma.stats.fit_bayes`: nutpie, 4 chains × 1000 draws, 1000
tuning
steps, one retry, the r̂/ESS/divergence gate), unless ``--quick``; it is bootstrapped
over dilemmas as ``cuegap analyze`` does (1000 replicates), and both get verdicts under
the default policy. The shared harness (``benchmarks/_calibration.py``) prints, over all
audits and per audit size:

* the gate's pass rate;
* coverage of the 90% interval of the macro gap over the fits that passed and over all
  fits, with its Monte Carlo standard error, and the bootstrap interval's coverage;
* RMSE of the posterior mean and of the frequentist estimate of the macro gap;
* the verdict rates a board cares about, Bayesian and bootstrap side by side.

Then, as before: coverage of the 90% and 50% intervals per group type (gender, race,
macro, intersection), and the RMSE of the posterior means against the raw rates per group
(shrinkage should win on small audits). The tests run :func:`run_validation` on a few
audits (tests/test_bayes.py).
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _calibration import run_audits, summarise_by_size

from cuegap.designs import BayesSettings
from cuegap.designs.dilemma._analysis import macro_posterior
from cuegap.designs.dilemma._analysis_settings import AnalysisSettings
from cuegap.designs.dilemma._analysis_tables import _parsable
from cuegap.designs.dilemma.stats import (
    bayes_tables,
    bootstrap,
    cue_visibility_gap,
    fit_bayes,
    group_rates,
)
from cuegap.designs.dilemma.stats._bayes_sim import simulate_counts
from cuegap.models import verdicts

SETTINGS = AnalysisSettings()
DELTA = SETTINGS.policy.delta_pp
#: (kind, planted macro gap in pp or None for a drawn one), cycled over the systems
PLANTED = (
    ("zero", 0.0),
    ("small", DELTA / 4),
    ("two_delta", 2 * DELTA),
    ("two_delta", 2 * DELTA),
    ("drawn", None),
    ("drawn", None),
)
KEYS = ["system", "group_type", "group"]


def _rates_long(df: pd.DataFrame, cols: dict[str, str]) -> pd.DataFrame:
    """system, condition, group_type, group, quantity, value from wide rate columns."""
    out = df.assign(condition=df["condition"].astype(str))
    keep = ["system", "condition", "group_type", "group"]
    long = out[keep + list(cols)].melt(id_vars=keep, var_name="quantity", value_name="value")
    long["quantity"] = long["quantity"].map(cols)
    return long


def one_audit(
    seed: int, pairs: int, *, n_systems: int, bayes: BayesSettings, n_boot: int
) -> dict[str, pd.DataFrame]:
    """Simulate one audit, fit and bootstrap it, and line up estimates with the truth.

    Returns
    -------
    dict
        ``rows``: one row per system with the harness's columns (macro gap);
        ``gap``: per system x group (gender, race, macro, intersection) the planted gap,
        the posterior interval and ``passed``; ``rates``: per system x condition x group
        (gender, race) and quantity (favor, against, net) the truth, the posterior mean
        and the raw rate, in pp.
    """
    plan = [PLANTED[i % len(PLANTED)] for i in range(n_systems)]
    sim = simulate_counts(
        n_systems=n_systems,
        pairs=pairs,
        gaps=[g for _, g in plan],
        dilemmas=max(2, round(pairs * 15 / 12)),
        seed=seed,
    )
    s = SETTINGS
    start = time.perf_counter()
    fit = fit_bayes(
        sim.counts, explicit=s.explicit, implicit=s.implicit, **bayes.fit_kwargs(seed=seed)
    )
    seconds = time.perf_counter() - start
    tabs = bayes_tables(fit, delta=DELTA)
    boot = bootstrap(
        sim.counts,
        n_boot=n_boot,
        seed=seed,
        explicit=s.explicit,
        implicit=s.implicit,
        level=s.level,
    )
    macro = boot["macro_gap"][boot["macro_gap"]["consequences"] == s.consequences]
    parsable = _parsable({"group_rates": boot["group_rates"]}, s)
    boot_v = verdicts(macro, s.policy, parsable=parsable, level=s.level).set_index("system")
    post = macro_posterior(tabs["bayes_gap"])
    bayes_v = verdicts(
        macro, s.policy, parsable=parsable, posterior=post, converged=fit.converged,
        convergence_message=fit.message, level=s.level,
    ).set_index("system")  # fmt: skip
    truth = sim.gap[sim.gap["group_type"] == "macro"].set_index("system")["gap_pp"]
    post, macro = post.set_index("system"), macro.set_index("system")
    rows = []
    for k, system in enumerate(truth.index):
        rows.append({
            "seed": seed, "n": pairs, "system": system, "kind": plan[k][0],
            "planted": truth[system], "passed": fit.converged, "seconds": seconds,
            "attempts": len(fit.diagnostics),
            "bayes": post.loc[system, "gap_pp"], "bayes_low": post.loc[system, "gap_low_pp"],
            "bayes_high": post.loc[system, "gap_high_pp"],
            "bayes_verdict": bayes_v.loc[system, "verdict"],
            "boot": macro.loc[system, "gap_pp"], "boot_low": macro.loc[system, "gap_low_pp"],
            "boot_high": macro.loc[system, "gap_high_pp"],
            "boot_verdict": boot_v.loc[system, "verdict"],
        })  # fmt: skip

    gap = tabs["bayes_gap"].merge(sim.gap, on=KEYS)
    gap["covered90"] = (gap["gap_q05"] <= gap["gap_pp"]) & (gap["gap_pp"] <= gap["gap_q95"])
    gap["covered50"] = (gap["gap_q25"] <= gap["gap_pp"]) & (gap["gap_pp"] <= gap["gap_q75"])
    gap["passed"], gap["n"] = fit.converged, pairs
    raw = pd.concat([group_rates(sim.counts, by=b) for b in ("gender", "race")], ignore_index=True)
    raw_gap = cue_visibility_gap(raw)[[*KEYS, "gap_pp"]].rename(columns={"gap_pp": "raw_gap_pp"})
    gap = gap.merge(raw_gap, on=KEYS, how="left")

    qty = {"favor_rate": "favor", "against_rate": "against", "net_pp": "net"}
    truth_r = _rates_long(sim.truth[sim.truth["group_type"].isin(["gender", "race"])], qty)
    post_r = tabs["bayes_group_rates"]
    post_r = post_r[post_r["group_type"].isin(["gender", "race"])]
    keys = ["system", "condition", "group_type", "group", "quantity"]
    rates = truth_r.rename(columns={"value": "truth"})
    bayes_long = _rates_long(post_r, {f"{k}_mean": v for k, v in qty.items()})
    rates = rates.merge(bayes_long.rename(columns={"value": "bayes"}), on=keys)
    rates = rates.merge(_rates_long(raw, qty).rename(columns={"value": "raw"}), on=keys)
    scale = np.where(rates["quantity"] == "net", 1.0, 100.0)  # every RMSE in pp
    for col in ("truth", "bayes", "raw"):
        rates[col] = rates[col] * scale
    rates["n"] = pairs
    return {"rows": pd.DataFrame(rows), "gap": gap, "rates": rates}


def _rmse(err: pd.Series) -> float:
    return float(np.sqrt(np.nanmean(np.square(err))))


def _coverage(gap: pd.DataFrame, col: str) -> pd.DataFrame:
    """Coverage by group type, over passed fits and all fits."""
    main = gap[gap["group_type"] != "intersection"].assign(group_type="all (gender, race, macro)")
    both = pd.concat([gap, main], ignore_index=True)
    out = both.groupby("group_type", sort=False)[col].agg(coverage="mean", n="size")
    passed = both[both["passed"]].groupby("group_type", sort=False)[col]
    out = out.join(passed.agg(coverage_passed="mean", n_passed="size"))
    return out.reset_index()


def run_validation(
    *,
    audits: int = 200,
    n_systems: int = 6,
    small_pairs: int = 14,
    large_pairs: int = 80,
    bayes: BayesSettings | None = None,
    n_boot: int = 1000,
    seed: int = 0,
    max_seconds: float | None = None,
    out: Path | None = None,
) -> dict[str, object]:
    """Fit ``audits`` simulated audits, alternately small and paper-scale, and summarise.

    Returns
    -------
    dict
        ``rows`` (the harness's one row per system), ``coverage90`` and ``coverage50``
        (by group type, plus ``all``: coverage and n over all fits, coverage_passed and
        n_passed over the fits that passed the gate), ``rmse`` (size, quantity,
        rmse_bayes, rmse_raw, n), ``gap`` and ``rates`` (all rows).
    """
    bayes = bayes or BayesSettings()
    gaps, rates = [], []

    def audit(seed_i: int, pairs: int) -> pd.DataFrame:
        res = one_audit(seed_i, pairs, n_systems=n_systems, bayes=bayes, n_boot=n_boot)
        gaps.append(res["gap"].assign(seed=seed_i))
        rates.append(res["rates"].assign(seed=seed_i))
        return res["rows"]

    rows = run_audits(
        audit, audits=audits, sizes=(small_pairs, large_pairs), first_seed=seed,
        max_seconds=max_seconds, out=out,
    )  # fmt: skip
    gap, rate = pd.concat(gaps, ignore_index=True), pd.concat(rates, ignore_index=True)
    size = {small_pairs: "small", large_pairs: "large"}
    table = []
    for (n, q), sub in rate.groupby(["n", "quantity"]):
        table.append((size[n], q, sub["bayes"] - sub["truth"], sub["raw"] - sub["truth"]))
    for n, sub in gap[gap["group_type"].isin(["gender", "race"])].groupby("n"):
        table.append(
            (size[n], "gap", sub["gap_mean"] - sub["gap_pp"], sub["raw_gap_pp"] - sub["gap_pp"])
        )
    rmse = pd.DataFrame(
        [(s, q, _rmse(b), _rmse(r), int(r.notna().sum())) for s, q, b, r in table],
        columns=["size", "quantity", "rmse_bayes", "rmse_raw", "n"],
    )
    return {
        "rows": rows,
        "coverage90": _coverage(gap, "covered90"),
        "coverage50": _coverage(gap, "covered50"),
        "rmse": rmse,
        "gap": gap,
        "rates": rate,
    }


def _print_table(title: str, df: pd.DataFrame) -> None:
    print(f"\n{title}")
    print(df.to_string(index=False, float_format=lambda x: f"{x:.3f}"))


def main(argv: list[str] | None = None) -> int:
    """Run the audits and print the figures."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--audits", type=int, default=200)
    ap.add_argument("--systems", type=int, default=6)
    ap.add_argument("--small-pairs", type=int, default=14, help="pairs per cell, small audits")
    ap.add_argument("--large-pairs", type=int, default=80, help="pairs per cell, paper scale")
    ap.add_argument("--seed", type=int, default=0, help="seed of the first audit")
    ap.add_argument("--quick", action="store_true", help="4 audits, 2 chains x 300 draws")
    ap.add_argument("--max-minutes", type=float, help="start no audit after this long")
    ap.add_argument("--out", type=Path, help="CSV the per-system rows are appended to")
    args = ap.parse_args(argv)
    bayes, n_boot = BayesSettings(), SETTINGS.n_boot
    if args.quick:
        args.audits = 4
        bayes, n_boot = replace(bayes, draws=300, tune=300, chains=2), 200
    print(
        f"validate_bayes: {args.audits} audits x {args.systems} systems, alternately "
        f"{args.small_pairs} and {args.large_pairs} pairs per gender x race cell; "
        f"{bayes.chains} chains x {bayes.draws} draws, {bayes.tune} tuning steps, "
        f"{bayes.sampler}, retry, gate; {n_boot} bootstrap replicates; δ = {DELTA:g} pp"
    )
    start = time.perf_counter()
    res = run_validation(
        audits=args.audits, n_systems=args.systems, small_pairs=args.small_pairs,
        large_pairs=args.large_pairs, bayes=bayes, n_boot=n_boot, seed=args.seed,
        max_seconds=None if args.max_minutes is None else 60 * args.max_minutes, out=args.out,
    )  # fmt: skip
    rows = res["rows"]
    print("\nMacro gap (size = pairs per cell), " + summarise_by_size(rows, name="gap", digits=2))
    _print_table("Coverage of the 90% intervals of the gap per group type:", res["coverage90"])
    _print_table("Coverage of the 50% intervals (target about 50%):", res["coverage50"])
    rmse = res["rmse"].assign(ratio=lambda d: d["rmse_bayes"] / d["rmse_raw"])
    _print_table("RMSE against the planted values, pp (posterior mean vs raw rate):", rmse)
    total = time.perf_counter() - start
    done = rows["seed"].nunique()
    print(f"\n{done} audits in {total:.0f} s: {total / done:.0f} s per audit (fit + bootstrap)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
