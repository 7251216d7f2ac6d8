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
from cuegap.models import GATE, check_sampler, run_gated, sample_nuts

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
        As for :func:`cuegap.designs.dilemma.stats.fit_bayes`.
    min_ess, max_rhat : float
        The gate's thresholds (lower them only in tests).

    Returns
    -------
    ConvBayesFit
    """
    import xarray as xr

    check_sampler(sampler)
    data = prepare_conv_counts(counts)
    settings = {
        "model_version": CONV_MODEL_VERSION, "draws": draws, "tune": tune, "chains": chains,
        "seed": seed, "sampler": sampler, "target_accept": target_accept, "retry": retry,
        "priors": dict(CONV_PRIORS),
        "gate": {"r_hat_max": max_rhat, "ess_bulk_min": min_ess, "divergences_max": 0},
    }  # fmt: skip

    def sample(kw: dict[str, Any]) -> tuple[Any, str, str, dict]:
        build = lambda: build_conv_model(data)  # noqa: E731
        return (*sample_nuts(build, sampler, progress=progress, **kw), {})

    def gated(idata: Any) -> tuple[Any, int]:
        _, cd = conv_contrast_draws(conv_lambda_draws(idata.posterior, data), data)
        ds = idata.posterior.assign(
            contrast=xr.DataArray(cd, dims=("chain", "draw", "contrast_condition"))
        )
        return ds, int(np.asarray(idata.sample_stats["diverging"]).sum())

    # the retry keeps the draws: more tuning only (as this design's fit always did)
    run = run_gated(sample, gated, draws=draws, tune=tune, chains=chains, seed=seed,
                    target_accept=target_accept, retry=retry, min_ess=min_ess,
                    max_rhat=max_rhat, more_draws=False)  # fmt: skip
    idata, converged, message, rows = run.idata, run.converged, run.message, run.rows
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
