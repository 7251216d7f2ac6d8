"""Sampler benchmark: the JAX sampler against nutpie, cold and warm, per design (issue 31).

Usage::

    .venv/bin/python benchmarks/sampler.py                      # all four designs
    .venv/bin/python benchmarks/sampler.py --designs dilemma qa

Each fit runs in a fresh process with the settings ``analyze --bayes`` uses (4 chains x
1000 draws, 1000 tuning steps), on each design's simulator at paper scale:

* dilemma: 14 systems x 3 genders x 5 races, 80 pairs per cell (the demo's scale);
* qa: 6 systems x 4 dimensions x 2 sub-groups, 300 answers per cell;
* prompt-variance: 3 systems x 2 categories, the simulator's formats, 3 replicates, 200
  questions;
* conversation: 5 systems x 3 benchmarks x 3 demographics x 3 personas, 100 conversations.

*Cold* is the first process (the JAX sampler with an empty cache folder, nutpie with
whatever Numba cache PyTensor already keeps); *warm* is a later process on new counts of
the same shape (another simulation seed). Printed: each fit's seconds, the ratios to nutpie
measured in the same run, each fit's CPU seconds (with its simulation, all threads: a
fairer figure than wall time on a busy machine), the targets (cold < 20 s, warm < 10 s),
whether the warm JAX fit reported a cache hit, whether the gate passed, and whether the
key quantities' posterior means and 5 % / 95 % quantiles agree with nutpie's on the same
counts within Monte Carlo error (:func:`agreement`).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

DESIGNS = ("dilemma", "qa", "prompt-variance", "conversation")
TARGET_COLD, TARGET_WARM = 20.0, 10.0


def key_draws(
    design: str, seed: int, sampler: str, fit_seed: int | None = None
) -> tuple[dict[str, np.ndarray], dict]:
    """Fit one design's paper-scale fixture; its key draws (chain, draw, ...) and facts.

    ``seed`` simulates the counts; ``fit_seed`` (default ``seed``) seeds the sampler.
    """
    seed_fit = seed if fit_seed is None else fit_seed
    if design == "dilemma":
        from cuegap.designs.dilemma.stats import fit_bayes
        from cuegap.designs.dilemma.stats._bayes import _data_from_idata
        from cuegap.designs.dilemma.stats._bayes_post import macro_gap_draws
        from cuegap.designs.dilemma.stats._bayes_sim import simulate_counts

        counts = simulate_counts(n_systems=14, pairs=80, seed=seed).counts
        start = time.perf_counter()
        fit = fit_bayes(counts, seed=seed_fit, sampler=sampler)
        seconds = time.perf_counter() - start
        post = fit.idata.posterior
        draws = {"macro_gap": macro_gap_draws(post, _data_from_idata(fit.idata))}
        converged = fit.converged
    elif design == "qa":
        from cuegap.designs.qa.stats._bayes import fit_qa_bayes
        from cuegap.designs.qa.stats._bayes_model import qa_draws
        from cuegap.designs.qa.stats._sim import planted_qa_counts

        gaps = [None] * 4 + [0.0] * 2
        counts, _ = planted_qa_counts(gaps, n=300, seed=seed, subgroups=2, disambiguated=True)
        start = time.perf_counter()
        fit = fit_qa_bayes(counts, seed=seed_fit, sampler=sampler)
        seconds = time.perf_counter() - start
        draws = {"gap": qa_draws(fit.idata.posterior, fit.data)["gap"]}
        converged = fit.converged
    elif design == "prompt-variance":
        from cuegap.designs.prompt_variance.stats import (
            fit_pv_bayes,
            pv_scores,
            simulate_pv_counts,
        )
        from cuegap.designs.prompt_variance.stats._bayes_model import pv_bayes_draws

        f = ["choice_format", "field_order"]
        sim = simulate_pv_counts(
            systems=("s1", "s2", "s3"), categories=("c1", "c2"), replicates=3,
            n_questions=200, format_sd=0.08, field_sd=0.04, interaction_sd=0.03, seed=seed,
        )  # fmt: skip
        scores = pv_scores(sim.counts, factors=f)
        scores = scores[(scores["metric"] == "s_diffaware") & scores["score"].notna()]
        start = time.perf_counter()
        fit = fit_pv_bayes(scores, factors=f, seed=seed_fit, sampler=sampler)
        seconds = time.perf_counter() - start
        idata, data, _, _ = fit.fits["s_diffaware"]
        d = pv_bayes_draws(idata.posterior, data)
        draws = {"share": d["share"], "sd_format": d["sd_format"]}
        converged = all(v[2] for v in fit.fits.values())
    else:
        from cuegap.designs.conversation.stats import conv_design, simulate_conv_counts
        from cuegap.designs.conversation.stats._bayes import fit_conv_bayes
        from cuegap.designs.conversation.stats._bayes_model import conv_lambda_draws

        cells = conv_design(
            systems=[f"s{k}" for k in range(5)],
            benchmarks={"BBQ": 1, "DifferenceAwareness": 1, "DiscrimEval": 1},
            demographics=("none", "black", "white"), personas=("none", "teacher", "farmer"),
        )  # fmt: skip
        counts = simulate_conv_counts(cells=cells, conversations=100, persona_sd=0.2, seed=seed)
        start = time.perf_counter()
        fit = fit_conv_bayes(counts.counts, seed=seed_fit, sampler=sampler)
        seconds = time.perf_counter() - start
        draws = {"lambda": conv_lambda_draws(fit.idata.posterior, fit.data)}
        converged = fit.converged
    from cuegap.models import jax_fits

    programs = jax_fits()
    info = programs[0] if programs else None  # the first attempt's: a retry compiles anew
    facts = {
        "seconds": seconds,
        "used": str(fit.diagnostics["sampler"].iloc[-1]),
        "attempts": len(fit.diagnostics),
        "converged": bool(converged),
        "reason": str(fit.diagnostics["reason"].iloc[-1]),
        "cache_hit": bool(info.cache_hit) if info else None,
        "compile_seconds": info.compile_seconds if info else None,
        "programs_from_cache": [p.cache_hit for p in programs],
    }
    return draws, facts


def agreement(a: np.ndarray, b: np.ndarray, *, alpha: float = 0.001) -> dict:
    """Whether two samplers' draws of the same quantities agree within Monte Carlo error.

    Parameters
    ----------
    a, b : ndarray
        Draws of shape (chain, draw, ...) from two independent fits to the same counts.
    alpha : float
        Family-wise false-alarm rate over every compared statistic.

    Returns
    -------
    dict
        ``z_max``: the largest |difference| / sqrt(mcse_a² + mcse_b²) over each element's
        mean, 5 % and 95 % quantiles (MCSE from arviz, which accounts for autocorrelation);
        ``z_limit``: the two-sided normal quantile at ``alpha`` / (number of statistics)
        (Bonferroni); ``agree``: ``z_max <= z_limit``; ``max_abs``: the largest absolute
        difference.
    """
    import arviz as az
    from scipy.stats import norm

    zs, diffs = [], []
    for stat, prob in (("mean", None), ("quantile", 0.05), ("quantile", 0.95)):
        est, err = [], []
        for x in (a, b):
            ds = az.convert_to_dataset(np.asarray(x, dtype=float))
            if stat == "mean":
                est.append(ds["x"].mean(("chain", "draw")).values)
                err.append(az.mcse(ds, method="mean")["x"].values)
            else:
                est.append(ds["x"].quantile(prob, dim=("chain", "draw")).values)
                err.append(az.mcse(ds, method="quantile", prob=prob)["x"].values)
        d = np.ravel(est[0] - est[1])
        zs.append(np.abs(d) / np.sqrt(np.ravel(err[0]) ** 2 + np.ravel(err[1]) ** 2))
        diffs.append(np.abs(d))
    z = np.concatenate(zs)
    limit = float(norm.isf(alpha / (2 * len(z))))
    z_max = float(np.max(z))
    return {
        "z_max": z_max,
        "z_limit": limit,
        "agree": z_max <= limit,
        "max_abs": float(np.max(np.concatenate(diffs))),
    }


def _child(design: str, seed: int, sampler: str, out: str, fit_seed: int | None = None) -> None:
    cpu = time.process_time()
    draws, facts = key_draws(design, seed, sampler, fit_seed)
    facts["process_cpu_seconds"] = time.process_time() - cpu
    np.savez(out, **draws)
    print("RESULT " + json.dumps(facts), flush=True)


def _run(design: str, seed: int, sampler: str, cache: str, out: Path) -> dict:
    env = {**os.environ, "CUEGAP_CACHE_DIR": cache}
    env.pop("CUEGAP_SAMPLER", None)
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, __file__, "--child", design, str(seed), sampler, str(out)],
        env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    wall = time.perf_counter() - start
    lines = [s for s in proc.stdout.splitlines() if s.startswith("RESULT ")]
    if proc.returncode or not lines:
        sys.exit(f"{design}/{sampler} failed:\n{proc.stderr[-3000:]}")
    return {**json.loads(lines[-1][7:]), "process_seconds": wall}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--designs", nargs="+", choices=DESIGNS, default=list(DESIGNS))
    ap.add_argument("--seed", type=int, default=11)
    args = ap.parse_args()
    print("fit seconds in a fresh process, 4 chains x 1000 draws, 1000 tuning steps")
    head = f"{'design':16} {'sampler':7} {'cold':>7} {'warm':>7}  {'hit':5} gate  agreement"
    print(head + "\n" + "-" * len(head) + "-" * 30)
    with tempfile.TemporaryDirectory() as tmp:
        for design in args.designs:
            res = {}
            for sampler in ("nutpie", "jax"):
                cache = str(Path(tmp) / design / sampler)
                for phase, seed in (("cold", args.seed), ("warm", args.seed + 1)):
                    out = Path(tmp) / f"{design}-{sampler}-{phase}.npz"
                    res[sampler, phase] = _run(design, seed, sampler, cache, out) | {"npz": out}
            for sampler in ("nutpie", "jax"):
                cold, warm = res[sampler, "cold"], res[sampler, "warm"]
                gate = "pass" if cold["converged"] and warm["converged"] else "FAIL"
                hit = {None: "-", True: "yes", False: "no"}[warm["cache_hit"]]
                line = (f"{design:16} {sampler:7} {cold['seconds']:6.1f}s {warm['seconds']:6.1f}s"
                        f"  {hit:5} {gate}  attempts {cold['attempts']}/{warm['attempts']}"
                        f"  CPU s (simulation + fit, all threads): "
                        f"{cold['process_cpu_seconds']:.0f} / "
                        f"{warm['process_cpu_seconds']:.0f}")  # fmt: skip
                if sampler == "jax":
                    line += f" (used {cold['used']}, {warm['used']})"
                print(line)
            checks = []
            for phase in ("cold", "warm"):
                a = np.load(res["nutpie", phase]["npz"])
                b = np.load(res["jax", phase]["npz"])
                for k in a.files:
                    ag = agreement(a[k], b[k])
                    checks.append(ag["agree"])
                    print(f"{'':16} {phase} {k}: max |z| {ag['z_max']:.2f} (limit "
                          f"{ag['z_limit']:.2f}), max |diff| {ag['max_abs']:.4f}")  # fmt: skip
            jc, jw = res["jax", "cold"]["seconds"], res["jax", "warm"]["seconds"]
            nc, nw = res["nutpie", "cold"]["seconds"], res["nutpie", "warm"]["seconds"]
            print(f"{'':16} jax/nutpie: cold x{jc / nc:.2f}, warm x{jw / nw:.2f}; "
                  f"targets cold < {TARGET_COLD:g} s {'met' if jc < TARGET_COLD else 'NOT met'}, "
                  f"warm < {TARGET_WARM:g} s {'met' if jw < TARGET_WARM else 'NOT met'}; "
                  f"cache hit when warm: {res['jax', 'warm']['cache_hit']}; "
                  f"posterior equivalent: {all(checks)}")  # fmt: skip


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        fit_seed = int(sys.argv[6]) if len(sys.argv) > 6 else None
        _child(sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5], fit_seed)
    else:
        main()
