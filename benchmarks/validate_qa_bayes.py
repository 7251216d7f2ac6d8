"""Calibration of the QA design's Bayesian model and verdicts against planted truth.

Usage::

    .venv/bin/python benchmarks/validate_qa_bayes.py --audits 200   # about 1.5 h here
    .venv/bin/python benchmarks/validate_qa_bayes.py --audits 4 --quick
    .venv/bin/python benchmarks/validate_qa_bayes.py --shape one-system --audits 6
    .venv/bin/python benchmarks/validate_qa_bayes.py --shape three-category --audits 4

Each audit: six systems with planted gaps G = S_amb(implicit) − S_amb(explicit) of 0,
δ/4, 2δ, 2δ and two from seed 001's Table 2 ranges (about +0.2 to +0.4), four dimensions
of two sub-groups, ambiguous and disambiguated items, ``--small`` answers per cell and
context in half of the audits and ``--large`` in the others
(:func:`cuegap.designs.qa.stats._sim.planted_qa_counts`). Each audit is fitted with exactly the
sampler settings of ``cuegap analyze --design qa --bayes``
(:class:`cuegap.designs.dilemma._analysis_settings.BayesSettings`
and the defaults of :func:`cuegap.designs.qa.stats.fit_qa_bayes`: 4 chains × 1000 draws, 1000 tuning
steps, target acceptance 0.9, nutpie, one retry, the r̂/ESS/divergence gate) unless
``--quick``, and bootstrapped as ``cuegap analyze`` does. The loop and the figures are
the shared harness of ``benchmarks/_calibration.py``. Printed:

* the gate's pass rate;
* coverage of the 90% posterior interval of G over the fits that passed and over all fits,
  with its Monte Carlo standard error, and the bootstrap interval's coverage;
* RMSE of the posterior mean and of the bootstrap estimate of G;
* the verdict error rates a board cares about, Bayesian and bootstrap side by side:
  planted G = 0 flagged, planted |G| < δ/2 passed (the right call) and planted G = 2δ
  flagged (the right call).

``--shape`` picks the audit's shape (issue 27: the real published sets are one system,
few categories, explicit and implicit only):

* ``six-system`` (default): as above;
* ``one-system``: one system, three categories of two sub-groups, explicit and implicit
  answers, ambiguous and disambiguated; the planted gap cycles over 0, δ/4, 2δ and seed
  001's Table 2 ranges from audit to audit (the model then has no cell level);
* ``three-category``: three systems (planted 0, 2δ and Table 2 ranges) on three
  categories of two sub-groups (a smaller audit than the default, so that one fits in a
  few minutes on the shared machine).
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import replace
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _calibration import run_audits, summarise, summarise_by_size

from cuegap.designs import BayesSettings
from cuegap.designs.qa._analysis import QASettings
from cuegap.designs.qa.stats import (
    fit_qa_bayes,
    qa_bayes_tables,
    qa_bayes_verdicts,
    qa_bootstrap,
    qa_verdicts,
)
from cuegap.designs.qa.stats._sim import planted_qa_counts

SETTINGS = QASettings()
DELTA = SETTINGS.delta

__all__ = ["DELTA", "one_audit", "realised_kind", "summarise"]


KINDS = ["zero", "small", "two_delta", "two_delta", "table2", "table2"]
GAPS = [0.0, DELTA / 4, 2 * DELTA, 2 * DELTA, None, None]
THREE = ("age", "gender", "race")
SHAPES = ("six-system", "one-system", "three-category")


def realised_kind(kind: str, planted: float) -> str:
    """The label an audited system counts under, from the G its counts really plant.

    Over three categories the simulator's planted cell gap is diluted: a system asked for
    2δ can realise a G of 0.001-0.07. The "2δ flagged" rate counts only systems whose
    realised G is at least 1.5δ; the others are labelled ``"diluted"`` and counted in no
    verdict rate (coverage still uses the realised G).
    """
    if kind == "two_delta" and abs(planted) < 1.5 * DELTA:
        return "diluted"
    if kind == "small" and abs(planted) >= DELTA / 2:
        return "diluted"
    return kind


def one_audit(
    seed: int, n: int, *, bayes: BayesSettings, shape: str = "six-system"
) -> pd.DataFrame:
    """Fit and bootstrap one planted audit of ``shape``; one row per system."""
    gaps, kinds, dims = GAPS, KINDS, ("age", "caste", "gender", "religion")
    if shape == "one-system":
        k = (0, 1, 2, 4)[seed % 4]
        gaps, kinds, dims = [GAPS[k]], [KINDS[k]], THREE
    elif shape == "three-category":
        gaps, kinds, dims = [GAPS[0], GAPS[2], GAPS[4]], [KINDS[0], KINDS[2], KINDS[4]], THREE
    counts, truth = planted_qa_counts(
        gaps, n=n, seed=seed, subgroups=2, disambiguated=True, dimensions=dims
    )
    truth.pop("_dis")
    start = time.perf_counter()
    fit = fit_qa_bayes(counts, strategy=SETTINGS.strategy, **bayes.fit_kwargs(seed=seed))
    seconds = time.perf_counter() - start
    gap = qa_bayes_tables(fit, delta=DELTA)["qa_bayes_gap"].set_index("system")
    bayes_v = qa_bayes_verdicts(fit, gap.reset_index(), delta=DELTA).set_index("system")
    boot = qa_bootstrap(counts, n_boot=SETTINGS.n_boot, seed=seed, delta=DELTA)["cue_gap"]
    boot_v = qa_verdicts(boot, delta=DELTA).set_index("system")
    b = boot[(boot["metric"] == "s_amb") & (boot["strategy"] == SETTINGS.strategy)]
    b = b.set_index("system")
    rows = []
    for k, (system, planted) in enumerate(truth.items()):
        rows.append({
            "seed": seed, "n": n, "system": system, "planted": planted,
            "kind": realised_kind(kinds[k], planted), "shape": shape,
            "passed": fit.converged, "seconds": seconds, "attempts": len(fit.diagnostics),
            "bayes": gap.loc[system, "gap"], "bayes_low": gap.loc[system, "gap_low"],
            "bayes_high": gap.loc[system, "gap_high"],
            "bayes_verdict": bayes_v.loc[system, "verdict"],
            "boot": b.loc[system, "gap"], "boot_low": b.loc[system, "gap_low"],
            "boot_high": b.loc[system, "gap_high"], "boot_verdict": boot_v.loc[system, "verdict"],
        })  # fmt: skip
    return pd.DataFrame(rows)


def main() -> None:
    """Run the audits and print the summary."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--audits", type=int, default=200)
    ap.add_argument("--small", type=int, default=150, help="answers per cell, small audits")
    ap.add_argument("--large", type=int, default=1300, help="answers per cell, large audits")
    ap.add_argument("--quick", action="store_true", help="2 chains x 300 draws (smoke test)")
    ap.add_argument("--max-minutes", type=float, help="start no audit after this long")
    ap.add_argument("--out", type=Path, help="CSV the per-system rows are appended to")
    ap.add_argument("--first-seed", type=int, default=1000, help="seed of the first audit")
    ap.add_argument("--shape", choices=SHAPES, default="six-system", help="the audit's shape")
    args = ap.parse_args()
    bayes = BayesSettings()
    if args.quick:
        bayes = replace(bayes, draws=300, tune=300, chains=2)
    df = run_audits(
        lambda seed, n: one_audit(seed, n, bayes=bayes, shape=args.shape),
        audits=args.audits,
        sizes=(args.small, args.large),
        first_seed=args.first_seed,
        max_seconds=None if args.max_minutes is None else 60 * args.max_minutes,
        out=args.out,
    )
    settings = f"{bayes.chains} chains x {bayes.draws} draws, {bayes.tune} tuning, retry, gate"
    print(f"QA Bayesian validation, {args.shape} audits ({settings}); δ = {DELTA}")
    print("(size = answers per cell and context) " + summarise_by_size(df))


if __name__ == "__main__":
    main()
