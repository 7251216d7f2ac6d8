"""Calibration of the hierarchical Bayesian model against planted truth (issue 4).

Usage::

    .venv/bin/python benchmarks/validate_bayes.py            # 100 audits (about 15 min)
    .venv/bin/python benchmarks/validate_bayes.py --quick    # 4 small audits, a smoke test

Each audit is a count table drawn straight from the binomial-logit generative model of
:mod:`cuegap.models._bayes_sim` (half of the systems small: ``--small-pairs`` (item,
individual) pairs per gender x race cell, the others at paper scale), fitted with
:func:`cuegap.models.fit_bayes`. Printed:

* coverage of the 90 % (and 50 %) posterior intervals of the Cue Visibility Gap per
  system x group and macro, against the planted gap (target 85-95 % for the 90 % one);
* RMSE against the planted rates of the posterior means and of the raw frequentist rates
  (:func:`cuegap.models.group_rates`), on the small systems' groups (shrinkage should win)
  and on the large ones;
* the share of fits that passed the convergence gate and the time per fit.

The tests run :func:`run_validation` on a few audits (tests/test_bayes.py).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from cuegap.models import bayes_tables, cue_visibility_gap, fit_bayes, group_rates
from cuegap.models._bayes_sim import simulate_counts

KEYS = ["system", "group_type", "group"]


def _rates_long(df: pd.DataFrame, cols: dict[str, str]) -> pd.DataFrame:
    """system, condition, group_type, group, quantity, value from wide rate columns."""
    out = df.assign(condition=df["condition"].astype(str))
    keep = ["system", "condition", "group_type", "group"]
    long = out[keep + list(cols)].melt(id_vars=keep, var_name="quantity", value_name="value")
    long["quantity"] = long["quantity"].map(cols)
    return long


def one_audit(
    seed: int,
    *,
    n_systems: int,
    small_pairs: int,
    large_pairs: int,
    draws: int,
    tune: int,
    chains: int,
) -> dict[str, pd.DataFrame | float | bool]:
    """Simulate one audit, fit it, and line up estimates with the truth.

    Returns
    -------
    dict
        ``gap``: per system x group (gender, race, macro, intersection) the planted gap
        and the posterior interval; ``rates``: per system x condition x group (gender,
        race) and quantity (favor, against, net) the truth, the posterior mean and the raw
        rate, with ``small`` marking the small systems; ``converged``; ``seconds``.
    """
    n_small = n_systems // 2
    pairs = [small_pairs] * n_small + [large_pairs] * (n_systems - n_small)
    sim = simulate_counts(n_systems=n_systems, pairs=pairs, seed=seed)
    small = {f"sys-{i + 1:02d}" for i in range(n_small)}
    start = time.perf_counter()
    fit = fit_bayes(sim.counts, draws=draws, tune=tune, chains=chains, seed=seed, retry=False)
    seconds = time.perf_counter() - start
    tabs = bayes_tables(fit)

    gap = tabs["bayes_gap"].merge(sim.gap, on=KEYS)
    gap["covered90"] = (gap["gap_q05"] <= gap["gap_pp"]) & (gap["gap_pp"] <= gap["gap_q95"])
    gap["covered50"] = (gap["gap_q25"] <= gap["gap_pp"]) & (gap["gap_pp"] <= gap["gap_q75"])

    raw = pd.concat([group_rates(sim.counts, by=b) for b in ("gender", "race")], ignore_index=True)
    raw_gap = cue_visibility_gap(raw)
    gap = gap.merge(
        raw_gap[["system", "group_type", "group", "gap_pp"]].rename(
            columns={"gap_pp": "raw_gap_pp"}
        ),
        on=KEYS,
        how="left",
    )
    gap["small"] = gap["system"].isin(small)

    qty = {"favor_rate": "favor", "against_rate": "against", "net_pp": "net"}
    truth = _rates_long(sim.truth[sim.truth["group_type"].isin(["gender", "race"])], qty)
    post = tabs["bayes_group_rates"]
    post = post[post["group_type"].isin(["gender", "race"])]
    bayes = _rates_long(post, {f"{k}_mean": v for k, v in qty.items()})
    rawl = _rates_long(raw, qty)
    keys = ["system", "condition", "group_type", "group", "quantity"]
    rates = truth.rename(columns={"value": "truth"})
    rates = rates.merge(bayes.rename(columns={"value": "bayes"}), on=keys)
    rates = rates.merge(rawl.rename(columns={"value": "raw"}), on=keys)
    # rates as pp too, so that one RMSE table reads in percentage points
    scale = np.where(rates["quantity"] == "net", 1.0, 100.0)
    for col in ("truth", "bayes", "raw"):
        rates[col] = rates[col] * scale
    rates["small"] = rates["system"].isin(small)
    return {"gap": gap, "rates": rates, "converged": fit.converged, "seconds": seconds}


def _rmse(err: pd.Series) -> float:
    return float(np.sqrt(np.nanmean(np.square(err))))


def run_validation(
    *,
    audits: int = 100,
    n_systems: int = 6,
    small_pairs: int = 6,
    large_pairs: int = 80,
    draws: int = 1000,
    tune: int = 1000,
    chains: int = 2,
    seed: int = 0,
    verbose: bool = False,
) -> dict[str, object]:
    """Fit ``audits`` simulated audits and summarise calibration and shrinkage.

    Returns
    -------
    dict
        ``coverage90`` and ``coverage50`` (DataFrames by group_type, plus ``all``),
        ``rmse`` (DataFrame: size, quantity, rmse_bayes, rmse_raw, n),
        ``converged_share``, ``seconds_per_fit``, ``gap`` and ``rates`` (all rows).
    """
    gaps, rates, conv, secs = [], [], [], []
    for i in range(audits):
        res = one_audit(
            seed + i,
            n_systems=n_systems,
            small_pairs=small_pairs,
            large_pairs=large_pairs,
            draws=draws,
            tune=tune,
            chains=chains,
        )
        gaps.append(res["gap"].assign(audit=i))
        rates.append(res["rates"].assign(audit=i))
        conv.append(res["converged"])
        secs.append(res["seconds"])
        if verbose:
            print(f"  audit {i + 1}/{audits}: {res['seconds']:.1f} s, converged={res['converged']}")
    gap = pd.concat(gaps, ignore_index=True)
    rate = pd.concat(rates, ignore_index=True)

    def coverage(col: str) -> pd.DataFrame:
        by = gap.groupby("group_type")[col].agg(["mean", "size"]).reset_index()
        main = gap[gap["group_type"] != "intersection"]
        allrow = pd.DataFrame(
            [
                {
                    "group_type": "all (gender, race, macro)",
                    "mean": main[col].mean(),
                    "size": len(main),
                }
            ]
        )
        return pd.concat([by, allrow], ignore_index=True).rename(
            columns={"mean": "coverage", "size": "n"}
        )

    rows = []
    for small, part in rate.groupby("small"):
        for q, sub in part.groupby("quantity"):
            rows.append(
                {
                    "size": "small" if small else "large",
                    "quantity": q,
                    "rmse_bayes": _rmse(sub["bayes"] - sub["truth"]),
                    "rmse_raw": _rmse(sub["raw"] - sub["truth"]),
                    "n": int(sub["raw"].notna().sum()),
                }
            )
    for small, sub in gap[gap["group_type"].isin(["gender", "race"])].groupby("small"):
        rows.append(
            {
                "size": "small" if small else "large",
                "quantity": "gap",
                "rmse_bayes": _rmse(sub["gap_mean"] - sub["gap_pp"]),
                "rmse_raw": _rmse(sub["raw_gap_pp"] - sub["gap_pp"]),
                "n": int(sub["raw_gap_pp"].notna().sum()),
            }
        )
    return {
        "coverage90": coverage("covered90"),
        "coverage50": coverage("covered50"),
        "rmse": pd.DataFrame(rows),
        "converged_share": float(np.mean(conv)),
        "seconds_per_fit": float(np.mean(secs)),
        "gap": gap,
        "rates": rate,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--audits", type=int, default=100)
    parser.add_argument("--systems", type=int, default=6)
    parser.add_argument("--small-pairs", type=int, default=6)
    parser.add_argument("--large-pairs", type=int, default=80)
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--tune", type=int, default=1000)
    parser.add_argument("--chains", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true", help="4 audits of 4 systems, 300 draws")
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args(argv)
    if args.quick:
        args.audits, args.systems, args.draws, args.tune = 4, 4, 300, 300
    print(
        f"validate_bayes: {args.audits} audits x {args.systems} systems "
        f"(half with {args.small_pairs} pairs per gender x race cell, half with "
        f"{args.large_pairs}), draws={args.draws} tune={args.tune} chains={args.chains}"
    )
    start = time.perf_counter()
    res = run_validation(
        audits=args.audits,
        n_systems=args.systems,
        small_pairs=args.small_pairs,
        large_pairs=args.large_pairs,
        draws=args.draws,
        tune=args.tune,
        chains=args.chains,
        seed=args.seed,
        verbose=args.verbose,
    )
    pd.set_option("display.width", 120)
    print("\nCoverage of the 90 % intervals of the gap (target 85-95 %):")
    print(res["coverage90"].to_string(index=False, float_format=lambda x: f"{x:.3f}"))
    print("\nCoverage of the 50 % intervals of the gap (target about 50 %):")
    print(res["coverage50"].to_string(index=False, float_format=lambda x: f"{x:.3f}"))
    print("\nRMSE against the planted values, pp (posterior mean vs raw frequentist rate):")
    rmse = res["rmse"].copy()
    rmse["bayes/raw"] = rmse["rmse_bayes"] / rmse["rmse_raw"]
    print(rmse.to_string(index=False, float_format=lambda x: f"{x:.3f}"))
    print(
        f"\nconverged (gate passed, no retry): {100 * res['converged_share']:.0f} % of fits; "
        f"{res['seconds_per_fit']:.1f} s per fit; total {time.perf_counter() - start:.0f} s"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
