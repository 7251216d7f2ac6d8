"""Small seeded Bayesian fits of all four designs, summarised as digests: run it on two
checkouts (before and after a change to the fitting code) and compare the output.

Each design's fit runs on a small count table from the tests' own builders (the dilemma
simulator, the QA planted audit, the prompt-variance planted audit, the conversation hand
fixture) with 60 draws and 60 tuning steps on 2 chains, so that the gate usually misses and
the retry runs too. Printed per design: a SHA-256 over every posterior array (in variable
order), the diagnostics table without its timings, whether it converged and its message.

Usage (from a checkout's root; about two minutes on two cores)::

    PYTHONPATH=. python benchmarks/fit_runner_identical.py > after.json
    (cd /tmp/before && PYTHONPATH=. python benchmarks/fit_runner_identical.py) > before.json
    diff before.json after.json
"""

from __future__ import annotations

import hashlib
import json
import sys
from typing import Any

import numpy as np

SMALL = {"draws": 60, "tune": 60, "chains": 2}


def digest(idata: Any) -> str:
    """SHA-256 over the posterior's variables (name, shape and float64 bytes)."""
    h = hashlib.sha256()
    post = idata.posterior
    for name in sorted(map(str, post.data_vars)):
        values = np.asarray(post[name].values, dtype=float)
        h.update(name.encode() + str(values.shape).encode() + values.tobytes())
    return h.hexdigest()


def summary(idata: Any, diagnostics: Any, converged: bool, message: str) -> dict:
    timing = [c for c in diagnostics.columns if c.endswith("seconds")]
    return {
        "posterior": digest(idata),
        "diagnostics": diagnostics.drop(columns=timing).to_csv(index=False),
        "converged": bool(converged),
        "message": message,
    }


def main() -> None:
    from cuegap.designs.conversation.stats._bayes import fit_conv_bayes
    from cuegap.designs.dilemma.stats import fit_bayes
    from cuegap.designs.dilemma.stats._bayes_sim import simulate_counts
    from cuegap.designs.prompt_variance.stats._bayes import fit_pv_bayes
    from cuegap.designs.qa.stats._bayes import fit_qa_bayes
    from tests.test_conv_contrasts import _fixture
    from tests.test_pv_bayes import F, _audit
    from tests.test_qa_bayes import _planted

    out = {}
    sim = simulate_counts(n_systems=3, pairs=20, seed=11)
    fit = fit_bayes(sim.counts, seed=7, **SMALL)
    out["dilemma"] = summary(fit.idata, fit.diagnostics, fit.converged, fit.message)
    counts, _ = _planted()
    fit = fit_qa_bayes(counts, seed=3, **SMALL)
    out["qa"] = summary(fit.idata, fit.diagnostics, fit.converged, fit.message)
    scores, _ = _audit(11)
    pv = fit_pv_bayes(scores, factors=F, seed=11, **SMALL)
    for name, (idata, _data, ok, message) in pv.fits.items():
        out[f"prompt-variance {name}"] = summary(idata, pv.diagnostics, ok, message)
    fit = fit_conv_bayes(_fixture(), seed=5, **SMALL)
    out["conversation"] = summary(fit.idata, fit.diagnostics, fit.converged, fit.message)
    json.dump(out, sys.stdout, indent=1, sort_keys=True)
    print()


if __name__ == "__main__":
    main()
