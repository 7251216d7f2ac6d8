"""Bayesian fit benchmark: counts model vs the row-level models a user would otherwise fit.

Usage::

    .venv/bin/python benchmarks/bench_bayes.py             # 14 systems x 8 groups x 2 conditions
    .venv/bin/python benchmarks/bench_bayes.py --quick     # 3 systems, 200 draws: a smoke test
    .venv/bin/python benchmarks/bench_bayes.py --no-bambi --no-rows   # the counts model only

Data: 14 systems x 3 genders x 5 races (8 groups) x Direct / Puzzled-hard at paper scale
(80 (item, individual) pairs per gender x race cell: about 400 decisions per gender and 240
per race per condition), drawn with :func:`cuegap.designs.dilemma.stats._bayes_sim.simulate_counts`.

Printed, each part in a fresh process (so that its peak memory, VmHWM, is its own):

* the counts model (:func:`cuegap.designs.dilemma.stats.fit_bayes`, nutpie): compile time, cold and
warm
  fit time (target: warm < 60 s), diagnostics;
* bambi (``--no-bambi`` skips it): the row-level hierarchical logistic regression a user
  would write, ``y ~ 0 + ec + ec:gender + ec:race + (0 + ec | system) +
  (0 + ec:gender | system) + (0 + ec:race | system)`` with ``ec`` = event x condition, one
  row per decision, fitted with the same draws by nutpie (``--bambi-sampler pymc``: bambi's
  default PyMC NUTS, which here takes about 2 s per draw at full size);
  the speed ratio (target >= 10x) and how far its posterior means of the group rates are
  from ours (its priors and coding differ, so agreement is up to the prior's influence);
* the same model as ours on rows (``--no-rows`` skips it): Bernoulli per decision, same
  priors, same sampler: the same posterior, so the means must agree within Monte Carlo
  error; the ratio is what aggregating first buys with everything else equal.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def _peak_mib() -> float:
    """Peak resident memory of this process (VmHWM from /proc/self/status)."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _counts(systems: int, pairs: int, seed: int) -> pd.DataFrame:
    from cuegap.designs.dilemma.stats._bayes_sim import simulate_counts

    return simulate_counts(n_systems=systems, pairs=pairs, seed=seed).counts


def _group_draws(p: np.ndarray, data) -> tuple[np.ndarray, list[tuple]]:
    """Group rates (gender, race) per draw from cell probabilities (chain, draw, cells...)."""
    from cuegap.designs.dilemma.stats._bayes_post import _weights

    wg, wr = _weights(data.trials, axis=-1), _weights(data.trials, axis=-2)
    by_g = (p * wg).sum(-1) / wg.sum(-1)
    by_r = (p * wr).sum(-2) / wr.sum(-2)
    rates = np.concatenate([by_g, by_r], axis=-1)  # (ch, dr, event, C, S, K)
    keys = [
        (e, c, s, gt, g)
        for e in ("favor", "against")
        for c in data.condition_labels
        for s in data.systems
        for gt, g in [("gender", x) for x in data.genders] + [("race", x) for x in data.races]
    ]
    return rates, keys


def _summarise(rates: np.ndarray, keys: list[tuple]) -> pd.DataFrame:
    import arviz as az

    ch, dr = rates.shape[:2]
    flat = rates.reshape(ch, dr, -1)
    ess = np.asarray(az.ess(az.convert_to_dataset(flat), method="bulk")["x"]).ravel()
    out = pd.DataFrame(keys, columns=["event", "condition", "system", "group_type", "group"])
    out["mean"] = flat.mean((0, 1))
    out["sd"] = flat.reshape(ch * dr, -1).std(0, ddof=1)
    out["mcse"] = out["sd"] / np.sqrt(ess)
    return out


def part_counts(counts: pd.DataFrame, draws: int, tune: int, chains: int) -> dict:
    """The counts model: cold fit (compiles), then a warm fit of the same size."""
    from cuegap.designs.dilemma.stats import fit_bayes
    from cuegap.designs.dilemma.stats._bayes_post import rate_draws

    cold = fit_bayes(counts, draws=draws, tune=tune, chains=chains, seed=1, retry=False)
    start = time.perf_counter()
    warm = fit_bayes(counts, draws=draws, tune=tune, chains=chains, seed=2, retry=False)
    warm_s = time.perf_counter() - start
    data = warm.data
    rates = rate_draws(warm.idata.posterior, data)[..., : len(data.genders) + len(data.races)]
    _, keys = _group_draws(np.zeros((1, 1, *data.trials.shape)), data)
    d0, d1 = cold.diagnostics.iloc[0], warm.diagnostics.iloc[0]
    return {
        "compile_s": float(d0["compile_seconds"]),
        "cold_s": float(d0["seconds"]),
        "warm_s": warm_s,
        "warm_sampling_s": float(d1["seconds"] - d1["compile_seconds"]),
        "diag": d1.to_dict(),
        "converged": warm.converged,
        "message": warm.message,
        "means": _summarise(rates, keys),
        "cells": int((data.trials > 0).sum()),
        "decisions": int(data.trials.sum()),
    }


def part_rows(counts: pd.DataFrame, draws: int, tune: int, chains: int) -> dict:
    """Our model on one Bernoulli row per decision, same priors, sampled with nutpie."""
    import nutpie

    from cuegap.designs.dilemma.stats._bayes_model import (
        PARAMS,
        build_model,
        cell_logits,
        prepare_counts,
        quiet,
    )

    data = prepare_counts(counts)
    start = time.perf_counter()
    with quiet(False):
        compiled = nutpie.compile_pymc_model(build_model(data, rows=True))
    compile_s = time.perf_counter() - start
    start = time.perf_counter()
    with quiet(False):
        idata = nutpie.sample(
            compiled, draws=draws, tune=tune, chains=chains, seed=3, progress_bar=False
        )
    sample_s = time.perf_counter() - start
    post = idata.posterior[[v for v in idata.posterior.data_vars if v in PARAMS]]
    p = 1 / (1 + np.exp(-cell_logits(post, stacked=False)))
    rates, keys = _group_draws(p, data)
    return {
        "compile_s": compile_s,
        "fit_s": compile_s + sample_s,
        "sample_s": sample_s,
        "divergences": int(idata.sample_stats["diverging"].sum()),
        "means": _summarise(rates, keys),
    }


def part_bambi(counts: pd.DataFrame, draws: int, tune: int, chains: int, sampler: str) -> dict:
    """bambi's row-level hierarchical logistic regression (bambi's priors)."""
    import warnings

    import bambi as bmb

    from cuegap.designs.dilemma.stats._bayes_model import expand_rows, prepare_counts, quiet

    data = prepare_counts(counts)
    rows = expand_rows(data)
    rows["ec"] = rows["event"] + "|" + rows["condition"]
    df = rows[["y", "ec", "system", "gender", "race"]].copy()
    for col in ("ec", "system", "gender", "race"):
        df[col] = df[col].astype("category")
    formula = (
        "y ~ 0 + ec + ec:gender + ec:race + (0 + ec | system) + (0 + ec:gender | system)"
        " + (0 + ec:race | system)"
    )
    start = time.perf_counter()
    with quiet(False), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = bmb.Model(formula, df, family="bernoulli")
        idata = model.fit(
            draws=draws,
            tune=tune,
            chains=chains,
            cores=min(chains, 2),
            random_seed=4,
            progressbar=False,
            inference_method=sampler,
        )
    fit_s = time.perf_counter() - start
    # bambi's predict() fails on this formulae/pandas combination, so the linear predictor
    # of one row per cell is computed from its own design matrices and posterior
    first = rows.groupby([f"{a}_idx" for a in data.coords()], sort=True).head(1).index
    comp = model.components[model.family.likelihood.parent]
    post = idata.posterior
    eta = 0.0
    for matrix, group in ((comp.design.common, False), (comp.design.group, True)):
        x = np.asarray(matrix)[np.asarray(first)]
        for term, sl in matrix.slices.items():
            var = post[term]
            if group:
                factor = next(d for d in var.dims if d.endswith("__factor_dim"))
                expr = next(d for d in var.dims if d.endswith("__expr_dim"))
                var = var.transpose("chain", "draw", factor, expr)
            coef = np.asarray(var).reshape(var.shape[0], var.shape[1], -1)
            eta = eta + np.einsum("rk,cdk->cdr", x[:, sl], coef)
    p_rows = 1.0 / (1.0 + np.exp(-np.asarray(eta)))
    cells = np.ravel_multi_index(
        tuple(rows.loc[first, f"{a}_idx"].to_numpy() for a in data.coords()), data.trials.shape
    )
    p = np.zeros((*p_rows.shape[:2], data.trials.size))  # empty cells weigh nothing
    p[..., cells] = p_rows
    p = p.reshape(*p.shape[:2], *data.trials.shape)
    rates, keys = _group_draws(p, data)
    div = int(idata.sample_stats["diverging"].sum()) if "diverging" in idata.sample_stats else -1
    return {"fit_s": fit_s, "rows": len(df), "divergences": div, "means": _summarise(rates, keys)}


def _child(name: str, args: tuple, queue) -> None:
    try:
        out = globals()[name](*args)
        out["peak_mib"] = _peak_mib()
        queue.put(out)
    except Exception as exc:  # report, do not hang the parent
        queue.put({"error": f"{type(exc).__name__}: {exc}"})


def measure(name: str, *args: object, timeout: float | None = None) -> dict:
    """Run a part in a fresh (spawned) process and return its results.

    With ``timeout`` (seconds), a part still running then is stopped and
    ``{"timeout": seconds}`` is returned.
    """
    import queue as queue_mod

    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    proc = ctx.Process(target=_child, args=(name, args, queue))
    start = time.perf_counter()
    proc.start()
    try:
        out = queue.get(timeout=timeout)
    except queue_mod.Empty:
        proc.terminate()
        proc.join()
        return {"timeout": time.perf_counter() - start}
    proc.join()
    return out


def compare(ours: pd.DataFrame, other: pd.DataFrame) -> dict[str, float]:
    """How far another fit's posterior means of the group rates are from ours."""
    keys = ["event", "condition", "system", "group_type", "group"]
    m = ours.merge(other, on=keys, suffixes=("", "_o"))
    diff = 100 * (m["mean_o"] - m["mean"])
    mcse = 100 * np.sqrt(m["mcse"] ** 2 + m["mcse_o"] ** 2)
    z = diff / mcse
    return {
        "n": len(m),
        "max_abs_pp": float(diff.abs().max()),
        "median_abs_pp": float(diff.abs().median()),
        "max_abs_over_sd": float((diff.abs() / (100 * m["sd"])).max()),
        "share_within_3_mcse": float((z.abs() < 3).mean()),
        "median_mcse_pp": float(mcse.median()),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--systems", type=int, default=14)
    parser.add_argument("--pairs", type=int, default=80, help="pairs per gender x race cell")
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--tune", type=int, default=1000)
    parser.add_argument("--chains", type=int, default=4)
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--no-bambi", action="store_true", help="skip the bambi fit")
    parser.add_argument("--no-rows", action="store_true", help="skip our model on rows")
    parser.add_argument(
        "--bambi-sampler",
        default="nutpie",
        choices=["nutpie", "pymc"],
        help="bambi's inference_method (pymc, bambi's default, takes hours at full size here)",
    )
    parser.add_argument(
        "--bambi-timeout",
        type=float,
        default=1800.0,
        help="stop the bambi fit after this many seconds and print a lower bound",
    )
    parser.add_argument("--quick", action="store_true", help="3 systems, 200 draws, 2 chains")
    args = parser.parse_args(argv)
    if args.quick:
        args.systems, args.draws, args.tune, args.chains = 3, 200, 200, 2
    counts = _counts(args.systems, args.pairs, args.seed)
    print(
        f"bench_bayes: {args.systems} systems x 3 genders x 5 races x direct/puzzled:hard, "
        f"{args.pairs} pairs per cell; draws={args.draws} tune={args.tune} "
        f"chains={args.chains}"
    )
    ours = measure("part_counts", counts, args.draws, args.tune, args.chains)
    if "error" in ours:
        print(f"counts model failed: {ours['error']}")
        return 1
    d = ours["diag"]
    print(
        f"\ncounts model ({ours['cells']} binomial cells, {ours['decisions']} decisions), nutpie:"
        f"\n  compile (first fit)      {ours['compile_s']:8.1f} s"
        f"\n  cold fit incl. compile   {ours['cold_s']:8.1f} s"
        f"\n  warm fit                 {ours['warm_s']:8.1f} s   (target < 60 s; "
        f"sampling {ours['warm_sampling_s']:.1f} s)"
        f"\n  diagnostics              r-hat max {d['r_hat_max']:.4f}, bulk ESS min "
        f"{d['ess_bulk_min']:.0f}, divergences {d['divergences']}, "
        f"converged={ours['converged']}"
        f"\n  peak memory (VmHWM)      {ours['peak_mib']:8.0f} MiB"
    )
    if not args.no_rows:
        rows = measure("part_rows", counts, args.draws, args.tune, args.chains)
        if "error" in rows:
            print(f"\nrow-level model failed: {rows['error']}")
        else:
            cmp = compare(ours["means"], rows["means"])
            print(
                f"\nsame model on rows (Bernoulli per decision), nutpie:"
                f"\n  compile                  {rows['compile_s']:8.1f} s"
                f"\n  fit incl. compile        {rows['fit_s']:8.1f} s   (sampling "
                f"{rows['sample_s']:.1f} s, divergences {rows['divergences']})"
                f"\n  speed ratio rows / counts: {rows['fit_s'] / ours['cold_s']:.1f}x cold, "
                f"{rows['sample_s'] / ours['warm_sampling_s']:.1f}x sampling only"
                f"\n  posterior means of {cmp['n']} group rates: max |diff| "
                f"{cmp['max_abs_pp']:.2f} pp (median MCSE {cmp['median_mcse_pp']:.2f} pp), "
                f"{100 * cmp['share_within_3_mcse']:.0f} % within 3 MCSE"
                f"\n  peak memory (VmHWM)      {rows['peak_mib']:8.0f} MiB"
            )
    if not args.no_bambi:
        bam = measure("part_bambi", counts, args.draws, args.tune, args.chains, args.bambi_sampler)
        if "error" in bam:
            print(f"\nbambi failed: {bam['error']}")
        else:
            cmp = compare(ours["means"], bam["means"])
            print(
                f"\nbambi row-level model ({bam['rows']} rows), {args.bambi_sampler}:"
                f"\n  fit incl. compile        {bam['fit_s']:8.1f} s   (divergences "
                f"{bam['divergences']})"
                f"\n  speed ratio bambi / counts: {bam['fit_s'] / ours['cold_s']:.1f}x cold, "
                f"{bam['fit_s'] / ours['warm_s']:.1f}x warm   (target >= 10x)"
                f"\n  posterior means of {cmp['n']} group rates: max |diff| "
                f"{cmp['max_abs_pp']:.2f} pp, median {cmp['median_abs_pp']:.2f} pp, max "
                f"|diff| / posterior sd {cmp['max_abs_over_sd']:.2f}; "
                f"{100 * cmp['share_within_3_mcse']:.0f} % within 3 MCSE "
                f"(median MCSE {cmp['median_mcse_pp']:.2f} pp)"
                f"\n  peak memory (VmHWM)      {bam['peak_mib']:8.0f} MiB"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
