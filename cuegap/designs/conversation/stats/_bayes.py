r"""Fitting and tables of the conversation design's hierarchical model, with a gate.

Seed 003 counts significant t-tests per benchmark. This model instead gives every
contrast a posterior, partially pooled across systems and benchmarks
(:mod:`cuegap.designs.conversation.stats._bayes_model`), and the probability that a contrast has the
same sign on every benchmark, P(all > 0) + P(all < 0) over draws, in place of "significant
on all three".

P(same sign) leans on the model: ω, a benchmark's departure from its system's effect, has
a tight prior (SD 0.25 on the logit scale), so an effect seen clearly on two benchmarks
pulls the third towards it. That is seed 003's premise (behaviour carries across
benchmarks) written as a prior; a report should say so beside the number.

Sampling and gate as the QA model (:func:`cuegap.designs.qa.stats.fit_qa_bayes`): nutpie (PyMC's
NUTS as fallback), r̂ ≤ 1.01, bulk ESS ≥ 400 over the parameters and every contrast, no
divergences, one retry with twice the tuning and target acceptance 0.95; a fit that fails
the gate is marked not converged and its tables must not back a verdict.
"""

from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from cuegap.designs.conversation.stats._bayes_model import (
    CONV_PRIORS,
    ConvBayesData,
    build_conv_model,
    conv_contrast_draws,
    conv_lambda_draws,
    prepare_conv_counts,
)
from cuegap.models._bayes import gate_summary
from cuegap.models._bayes_model import GATE, quiet

if TYPE_CHECKING:
    import arviz as az

__all__ = ["CONV_MODEL_VERSION", "ConvBayesFit", "conv_bayes_tables", "fit_conv_bayes"]

logger = logging.getLogger(__name__)
CONV_MODEL_VERSION = "conv-1"


@dataclass
class ConvBayesFit:
    """A conversation-model fit and whether it may be used for verdicts.

    Attributes
    ----------
    idata : arviz.InferenceData
    data : ConvBayesData
    converged : bool
        The gate passed.
    message : str
        "ok" or why the gate failed.
    diagnostics : DataFrame
        One row per sampling attempt.
    settings : dict
        Model version, sampler settings, priors and gate.
    """

    idata: az.InferenceData
    data: ConvBayesData
    converged: bool
    message: str
    diagnostics: pd.DataFrame
    settings: dict = field(default_factory=dict)


def _sample(data: ConvBayesData, sampler: str, **kw: Any) -> tuple[Any, str, str]:
    import pymc as pm

    model = build_conv_model(data)
    cores = min(kw["chains"], os.cpu_count() or 1)
    note = ""
    if sampler == "nutpie":
        try:
            import nutpie

            with quiet(kw["progress"]):
                compiled = nutpie.compile_pymc_model(model)
                idata = nutpie.sample(
                    compiled, draws=kw["draws"], tune=kw["tune"], chains=kw["chains"],
                    cores=cores, seed=kw["seed"], progress_bar=kw["progress"],
                    target_accept=kw["target_accept"],
                )  # fmt: skip
            return idata, "nutpie", ""
        except Exception as exc:  # any nutpie failure falls back to PyMC
            logger.warning("nutpie failed (%s); falling back to PyMC's NUTS", exc)
            note = f"nutpie failed ({type(exc).__name__}: {exc}); used PyMC's NUTS"
    with quiet(kw["progress"]), model:
        idata = pm.sample(
            draws=kw["draws"], tune=kw["tune"], chains=kw["chains"], cores=cores,
            random_seed=kw["seed"], progressbar=kw["progress"],
            target_accept=kw["target_accept"], compute_convergence_checks=False,
            nuts_sampler="pymc",
        )  # fmt: skip
    return idata, "pymc", note


def fit_conv_bayes(
    counts: pd.DataFrame,
    *,
    draws: int = 1000,
    tune: int = 1000,
    chains: int = 4,
    seed: int = 2026,
    sampler: str = "nutpie",
    target_accept: float = 0.9,
    retry: bool = True,
    progress: bool = False,
    min_ess: float = GATE["ess_bulk_min"],
    max_rhat: float = GATE["r_hat_max"],
) -> ConvBayesFit:
    """Fit the hierarchical shift model to a count frame, with the convergence gate.

    Parameters
    ----------
    counts : DataFrame
        The transition count frame (:mod:`cuegap.designs.conversation.stats`).
    draws, tune, chains, seed, sampler, target_accept, retry, progress
        As for :func:`cuegap.models.fit_bayes`.
    min_ess, max_rhat : float
        The gate's thresholds (lower them only in tests).

    Returns
    -------
    ConvBayesFit
    """
    import xarray as xr

    if sampler not in ("nutpie", "pymc"):
        raise ValueError(f"sampler must be 'nutpie' or 'pymc', but got {sampler!r}")
    data = prepare_conv_counts(counts)
    settings = {
        "model_version": CONV_MODEL_VERSION, "draws": draws, "tune": tune, "chains": chains,
        "seed": seed, "sampler": sampler, "target_accept": target_accept, "retry": retry,
        "priors": dict(CONV_PRIORS),
        "gate": {"r_hat_max": max_rhat, "ess_bulk_min": min_ess, "divergences_max": 0},
    }  # fmt: skip
    rows, idata, gate = [], None, None
    kw = dict(draws=draws, tune=tune, chains=chains, seed=seed, target_accept=target_accept)
    for attempt in range(1, 3 if retry else 2):
        if attempt == 2:
            kw |= dict(tune=max(2 * tune, tune + 500), seed=seed + 1,
                       target_accept=max(0.95, target_accept))  # fmt: skip
        start = time.perf_counter()
        idata, used, note = _sample(data, sampler, progress=progress, **kw)
        seconds = time.perf_counter() - start
        _, cd = conv_contrast_draws(conv_lambda_draws(idata.posterior, data), data)
        ds = idata.posterior.assign(
            contrast=xr.DataArray(cd, dims=("chain", "draw", "contrast_condition"))
        )
        divergences = int(np.asarray(idata.sample_stats["diverging"]).sum())
        gate = gate_summary(ds, divergences, min_ess, max_rhat)
        rows.append({"attempt": attempt, "sampler": used, **kw, "seconds": seconds,
                     **{k: gate[k] for k in ("r_hat_max", "ess_bulk_min", "ess_tail_min",
                                             "divergences", "passed")},
                     "reason": gate["reason"] + (f" ({note})" if note else "")})  # fmt: skip
        if gate["passed"]:
            break
    assert idata is not None and gate is not None
    converged = bool(gate["passed"])
    message = "ok" if converged else (
        f"not converged after {len(rows)} attempt(s): {gate['reason']} "
        f"(gate: r-hat <= {max_rhat}, bulk ESS >= {min_ess:g}, no divergences)"
    )  # fmt: skip
    return ConvBayesFit(idata, data, converged, message, pd.DataFrame(rows), settings)


def conv_bayes_tables(fit: ConvBayesFit, *, level: float = 0.9) -> dict[str, pd.DataFrame]:
    """The Bayesian counterparts of ``conv_contrasts`` and ``conv_consistency``.

    Parameters
    ----------
    fit : ConvBayesFit
    level : float, default 0.9
        Mass of the equal-tailed posterior interval.

    Returns
    -------
    dict of DataFrame
        ``conv_bayes_contrasts``: per evaluation condition (as ``conv_contrasts``) the
        posterior ``mean``, ``lower``, ``upper``, ``p_positive``; ``conv_bayes_consistency``:
        per (contrast, system, demographic, reference, instantiation) ``p_same_sign`` =
        P(the contrast has one sign on every benchmark) and ``p_all_positive``,
        ``p_all_negative``. Both carry ``converged``.
    """
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), but got {level!r}")
    cond, draws = conv_contrast_draws(conv_lambda_draws(fit.idata.posterior, fit.data), fit.data)
    flat = draws.reshape(-1, draws.shape[-1])
    lo, hi = np.quantile(flat, [(1 - level) / 2, (1 + level) / 2], axis=0)
    contrasts = cond.assign(
        mean=flat.mean(axis=0), lower=lo, upper=hi, p_positive=(flat > 0).mean(axis=0),
        level=level, converged=fit.converged,
    )  # fmt: skip
    keys = ["contrast", "system", "demographic", "reference", "instantiation"]
    groups = cond.groupby(keys, sort=False).indices
    rows = []
    for key, idx in groups.items():
        pos = (flat[:, idx] > 0).all(axis=1).mean()
        neg = (flat[:, idx] < 0).all(axis=1).mean()
        rows.append((*key, len(idx), pos + neg, pos, neg))
    consistency = pd.DataFrame(
        rows, columns=[*keys, "n_benchmarks", "p_same_sign", "p_all_positive", "p_all_negative"]
    ).assign(converged=fit.converged)
    return {"conv_bayes_contrasts": contrasts, "conv_bayes_consistency": consistency}
