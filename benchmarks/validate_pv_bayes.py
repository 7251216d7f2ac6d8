"""Calibration of the prompt-variance variance-components model against planted truth.

Usage::

    .venv/bin/python benchmarks/validate_pv_bayes.py --audits 40
    .venv/bin/python benchmarks/validate_pv_bayes.py --audits 3 --quick

Each audit: ``--systems`` × ``--categories`` cells under seed 003's 11 choice formats × 2
field orders and ``--replicates`` runs each
(:func:`cuegap.designs.prompt_variance.stats.simulate_pv_counts`,
planted effect SDs: format 0.08, field order 0.03, interaction 0.02), ``--small`` or
``--large`` questions per run in alternate audits. The s_DiffAware runs are fitted with
exactly the sampler settings of ``cuegap analyze --design prompt-variance --bayes``
(:class:`cuegap.designs.dilemma._analysis_settings.BayesSettings`, the defaults of
:func:`cuegap.designs.prompt_variance.stats.fit_pv_bayes`:
4 chains × 1000 draws, 1000 tuning, nutpie, one retry, the r̂/ESS/divergence gate) unless
``--quick`` (2 chains × 300 draws). The planted finite-population shares come from the
truth table (two-way decomposition of the true combination means; residual = the exact
binomial variance of a run's score). The loop is ``benchmarks/_calibration.py``'s.

Printed: the gate's pass rate; coverage of the 90 % posterior interval of each component's
share and of the format spread √(V_A + V_B + V_AB), over passed fits and all fits, with
Monte Carlo standard errors; RMSE of the posterior mean share next to the classical
two-way ANOVA share (:func:`cuegap.designs.prompt_variance.stats.pv_components`), and of the
posterior format
spread next to the moments estimate (:func:`cuegap.designs.prompt_variance.stats.pv_format_spread`).
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

from _calibration import run_audits, share

from cuegap.designs import BayesSettings
from cuegap.designs.prompt_variance.stats import (
    fit_pv_bayes,
    pv_bayes_tables,
    pv_components,
    pv_format_spread,
    pv_scores,
    simulate_pv_counts,
)

F = ["choice_format", "field_order"]
METRIC = "s_diffaware"
LABELS = ["choice_format", "field_order", "choice_format:field_order", "residual"]


def planted(truth: pd.DataFrame) -> pd.DataFrame:
    """Planted shares and format spread per (system, category), by hand from the truth."""
    rows = []
    for (system, category), t in truth.groupby(["system", "category"]):
        theta = t.pivot(index=F[0], columns=F[1], values="true_score").to_numpy()
        mu = theta.mean()
        ra, cb = theta.mean(axis=1) - mu, theta.mean(axis=0) - mu
        ab = theta - mu - ra[:, None] - cb[None, :]
        v = np.array([np.mean(ra**2), np.mean(cb**2), np.mean(ab**2), t["sampling_var"].mean()])
        for name, s in zip([*LABELS, "sd_format"], [*(v / v.sum()), np.sqrt(v[:3].sum())],
                           strict=True):  # fmt: skip
            rows.append({"system": system, "category": category, "component": name,
                         "planted": s})  # fmt: skip
    return pd.DataFrame(rows)


def one_audit(seed: int, n: int, *, bayes: BayesSettings, systems: int, categories: int,
              replicates: int) -> pd.DataFrame:  # fmt: skip
    """Fit one planted audit; one row per (cell, component) and per cell's format spread."""
    sim = simulate_pv_counts(
        systems=[f"sys-{i}" for i in range(systems)],
        categories=[f"cat-{j}" for j in range(categories)],
        replicates=replicates, n_questions=n, format_sd=0.08, field_sd=0.03,
        interaction_sd=0.02, seed=seed,
    )  # fmt: skip
    scores = pv_scores(sim.counts, factors=F)
    scores = scores[(scores["metric"] == METRIC) & scores["score"].notna()]
    start = time.perf_counter()
    fit = fit_pv_bayes(scores, factors=F, **bayes.fit_kwargs(seed=seed))
    seconds = time.perf_counter() - start
    t = pv_bayes_tables(fit)
    keys = ["system", "category", "component"]
    comp = t["pv_bayes_components"][[*keys, "share", "share_low", "share_high"]]
    names = {"sd_format": "share", "sd_format_low": "share_low", "sd_format_high": "share_high"}
    spread = t["pv_bayes_spread"].assign(component="sd_format").rename(columns=names)
    spread = spread[[*keys, "share", "share_low", "share_high"]]
    freq = pv_components(scores, factors=F)[[*keys, "share"]].rename(columns={"share": "freq"})
    mom = pv_format_spread(scores, factors=F)[["system", "category", "sd_format"]]
    mom = mom.assign(component="sd_format").rename(columns={"sd_format": "freq"})
    bayes_rows = pd.concat([comp, spread], ignore_index=True)
    out = planted(sim.truth[sim.truth["metric"] == METRIC]).merge(bayes_rows, on=keys)
    out = out.merge(pd.concat([freq, mom], ignore_index=True), on=keys, how="left")
    d = fit.diagnostics
    return out.assign(seed=seed, n=n, passed=fit.converged, seconds=seconds, attempts=len(d),
                      divergences=int(d["divergences"].iloc[-1]))  # fmt: skip


def summarise(df: pd.DataFrame) -> str:
    """Gate rate, coverage per component (passed and all fits) and RMSEs."""
    fits = df.drop_duplicates("seed")
    lines = [f"{len(fits)} audits; gate passed in {share(fits['passed'])}; "
             f"retried {int((fits['attempts'] > 1).sum())}; seconds per fit: median "
             f"{fits['seconds'].median():.1f}"]  # fmt: skip
    lines.append(f"{'component':<28}{'coverage, passed fits':>26}{'coverage, all fits':>26}"
                 f"{'RMSE bayes':>12}{'RMSE classical':>16}")  # fmt: skip
    cov = (df["share_low"] <= df["planted"]) & (df["planted"] <= df["share_high"])
    groups = [*df.groupby("component", sort=False)]
    groups.append(("all shares", df[df["component"] != "sd_format"]))
    for name, sub in groups:
        c = cov[sub.index]
        p = sub["passed"].astype(bool)
        rb = np.sqrt(np.mean((sub["share"] - sub["planted"]) ** 2))
        rf = np.sqrt(np.mean((sub["freq"] - sub["planted"]) ** 2))
        lines.append(f"{name:<28}{share(c[p])!s:>26}{share(c)!s:>26}{rb:>12.4f}{rf:>16.4f}")
    return "\n".join(lines)


def main() -> None:
    """Run the audits and print the summary."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--audits", type=int, default=40)
    ap.add_argument("--systems", type=int, default=4)
    ap.add_argument("--categories", type=int, default=3)
    ap.add_argument("--replicates", type=int, default=5)
    ap.add_argument("--small", type=int, default=100, help="questions per run, small audits")
    ap.add_argument("--large", type=int, default=400, help="questions per run, large audits")
    ap.add_argument("--quick", action="store_true", help="2 chains x 300 draws (smoke test)")
    ap.add_argument("--max-minutes", type=float, help="start no audit after this long")
    ap.add_argument("--out", type=Path, help="CSV the rows are appended to")
    args = ap.parse_args()
    bayes = BayesSettings()
    if args.quick:
        bayes = replace(bayes, draws=300, tune=300, chains=2)
    df = run_audits(
        lambda seed, n: one_audit(seed, n, bayes=bayes, systems=args.systems,
                                  categories=args.categories, replicates=args.replicates),
        audits=args.audits, sizes=(args.small, args.large), first_seed=3000,
        max_seconds=None if args.max_minutes is None else 60 * args.max_minutes, out=args.out,
    )  # fmt: skip
    print(f"Prompt-variance Bayesian validation ({bayes.chains} chains x {bayes.draws} draws, "
          f"{bayes.tune} tuning, retry, gate); {args.systems} systems x {args.categories} "
          f"categories x 22 combinations x {args.replicates} replicates, s_DiffAware")  # fmt: skip
    parts = [("all audits", df), *((f"{n} questions per run", s) for n, s in df.groupby("n"))]
    for label, sub in parts:
        print(f"\n{label}:\n{summarise(sub.reset_index(drop=True))}")


if __name__ == "__main__":
    main()
