r"""Hierarchical Bayesian model of the QA design (seed 001's scores), with a gate.

Seed 001 gives point estimates only. This model gives every system's accuracies, bias
scores and explicit-vs-implicit gap a posterior, partially pooled across systems,
dimensions and sub-groups, and gates it on the dilemma model's convergence diagnostics.

Model
-----
Cells are system s × cue c (explicit, implicit) × group g, a group being a (dimension,
sub-group) pair of dimension d(g). Each three-way answer is factored exactly into
binomials (a continuation-ratio multinomial)::

    ambiguous:      N_u  ~ Bin(N_p, expit(η_u))       unknown among parsable answers
                    N_st ~ Bin(N_*, expit(η_b))       stereotyped among answers naming a person
    disambiguated:  N_u  ~ Bin(N_p, expit(η_du))      unknown among parsable answers
                    N_c  ~ Bin(N_*, expit(η_dc[k]))   correct among answers naming a person,
                                                      k: is the gold the stereotyped person?

    η[s,c,g(,k)] = α[s,c(,k)] + β[c,d(g)] + γ[c,g] + σ_cell[c]·z[s,c,g(,k)]

α ~ Normal(0, 1.5) per system and cue (a verdict is about one system, so its level is not
shrunk towards the others'); β = σ_dim[c]·ZeroSumNormal over dimensions and γ =
σ_sub[c]·Normal over sub-groups (present when a dimension has several) are shared by the
systems; z ~ Normal(0, 1); σ ~ HalfNormal(0.5). Non-centred throughout. Which of these
levels a fit has follows what the data can inform (one system: none of the learnt SDs,
one fixed-scale group level instead): :mod:`cuegap.designs.qa.stats._bayes_model`.

Derived per draw (:func:`qa_draws`): Acc_amb = expit(η_u), S_amb_raw = 2·expit(η_b) − 1,
S_amb = (1 − Acc_amb)·S_amb_raw (Eq. 8); Acc_dis = Σ_k w_k·expit(η_dc[k]) and S_dis = 2
(w_0·expit(η_dc[0]) + w_1·(1 − expit(η_dc[1]))) − 1 with w_k the cell's share of
parsable answers to items of kind k; Acc_dis(BBQ) = (1 − expit(η_du))·Acc_dis. A
dimension's value is its groups' mean weighted by their answers (as the frequentist score
pools them), a system's the unweighted mean over dimensions; the gap G = S_amb(implicit) −
S_amb(explicit) (positive = looks fairer when identity is stated); ranks order the systems
by G (1 = largest gap).

Sampling and gate as :func:`cuegap.designs.dilemma.stats.fit_bayes`: nutpie (PyMC's NUTS as
fallback),
r̂ ≤ 1.01, bulk ESS ≥ 400 over parameters and gaps, no divergences, one retry with twice
the tuning and target acceptance 0.95. The first attempt targets an acceptance of 0.9, not
0.8: at 0.8 planted audits had an occasional single divergence (a failed gate) that 0.9
removes for about 10 % more time.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from cuegap.designs.qa.stats._bayes_data import CUES, QABayesData, prepare_qa_counts
from cuegap.designs.qa.stats._bayes_model import QA_PRIORS, build_qa_model, qa_draws
from cuegap.models import GATE, check_sampler, run_gated, sample_nuts

if TYPE_CHECKING:
    import arviz as az

logger = logging.getLogger(__name__)
QA_MODEL_VERSION = "qa-3"  # qa-3: levels follow the data (one system: no learnt SD)


@dataclass
class QABayesFit:
    """A QA Bayesian fit and whether it may be used for verdicts (see :class:`BayesFit`)."""

    idata: az.InferenceData
    data: QABayesData
    converged: bool
    message: str
    diagnostics: pd.DataFrame
    settings: dict = field(default_factory=dict)


def fit_qa_bayes(
    counts: pd.DataFrame,
    *,
    strategy: str = "zero-shot",
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
) -> QABayesFit:
    """Fit the hierarchical QA model to a count table, with the convergence gate.

    Parameters
    ----------
    counts : DataFrame
        The QA count table (:mod:`cuegap.designs.qa.stats`).
    strategy : str
        The prompting strategy fitted.
    draws, tune, chains, seed, sampler, target_accept, retry, progress
        As for :func:`cuegap.designs.dilemma.stats.fit_bayes`.
    min_ess, max_rhat : float
        The gate's thresholds (lower them only in tests).

    Returns
    -------
    QABayesFit
    """
    import xarray as xr

    check_sampler(sampler)
    data = prepare_qa_counts(counts, strategy=strategy)
    settings = {
        "model_version": QA_MODEL_VERSION, "strategy": strategy, "draws": draws,
        "tune": tune, "chains": chains, "seed": seed, "sampler": sampler,
        "target_accept": target_accept, "retry": retry, "priors": dict(QA_PRIORS),
        "gate": {"r_hat_max": max_rhat, "ess_bulk_min": min_ess, "divergences_max": 0},
    }  # fmt: skip

    def sample(kw: dict[str, Any]) -> tuple[Any, str, str, dict]:
        build = lambda: build_qa_model(data)  # noqa: E731
        return (*sample_nuts(build, sampler, progress=progress, **kw), {})

    def gated(idata: Any) -> tuple[Any, int]:
        draws_ = qa_draws(idata.posterior, data)
        keep = [v for v in idata.posterior.data_vars if not str(v).startswith("eta_")]
        ds = idata.posterior[keep].assign(
            gap=xr.DataArray(draws_["gap"], dims=("chain", "draw", "gap_system"))
        )
        return ds, int(np.asarray(idata.sample_stats["diverging"]).sum())

    run = run_gated(sample, gated, draws=draws, tune=tune, chains=chains, seed=seed,
                    target_accept=target_accept, retry=retry, min_ess=min_ess,
                    max_rhat=max_rhat)  # fmt: skip
    idata, converged, message, rows = run.idata, run.converged, run.message, run.rows
    return QABayesFit(idata, data, converged, message, pd.DataFrame(rows), settings)


def _interval(x: np.ndarray, level: float = 0.9) -> tuple[np.ndarray, np.ndarray]:
    a = (1 - level) / 2
    return np.quantile(x, a, axis=0), np.quantile(x, 1 - a, axis=0)


#: Metrics of ``qa_bayes_scores`` and the sign of their explicit-vs-implicit gap
#: (positive = looks fairer when the identity is stated).
GAP_SIGN = {"acc_amb": 1, "s_amb_raw": -1, "s_amb": -1, "acc_dis": 1, "acc_dis_bbq": 1,
            "s_dis": -1}  # fmt: skip


def qa_bayes_tables(fit: QABayesFit, *, delta: float = 0.05) -> dict[str, pd.DataFrame]:
    """Posterior summaries.

    Returns
    -------
    dict
        ``qa_bayes_scores`` (system × cue × metric: mean, SD, 90% interval);
        ``qa_bayes_cue_gap`` (system × metric: the gap, explicit − implicit for
        accuracies and implicit − explicit for bias scores); ``qa_bayes_gap`` (per system,
        the deciding S_amb gap G: mean, SD, 90% interval, P(G > δ), P(|G| < δ), and the
        median rank with its 90% interval, 1 = largest gap).
    """
    draws = qa_draws(fit.idata.posterior, fit.data)
    flat = {k: v.reshape(-1, *v.shape[2:]) for k, v in draws.items()}
    rows, gaps = [], []
    for metric, sign in GAP_SIGN.items():
        if metric not in flat:
            continue
        x = flat[metric]
        low, high = _interval(x)
        g = sign * (x[:, :, 0] - x[:, :, 1])
        g_low, g_high = _interval(g)
        for i, system in enumerate(fit.data.systems):
            for j, cue in enumerate(CUES):
                rows.append({"system": system, "cue": cue, "metric": metric,
                             "mean": x[:, i, j].mean(), "sd": x[:, i, j].std(ddof=1),
                             "low": low[i, j], "high": high[i, j]})  # fmt: skip
            gaps.append({"system": system, "metric": metric, "gap": g[:, i].mean(),
                         "gap_sd": g[:, i].std(ddof=1), "gap_low": g_low[i],
                         "gap_high": g_high[i]})  # fmt: skip
    gap = flat["gap"]
    low, high = _interval(gap)
    ranks = (-gap).argsort(axis=1).argsort(axis=1) + 1
    r_low, r_high = _interval(ranks.astype(float))
    gap_rows = pd.DataFrame(
        {
            "system": fit.data.systems,
            "gap": gap.mean(axis=0),
            "gap_sd": gap.std(axis=0, ddof=1),
            "gap_low": low,
            "gap_high": high,
            "p_gap_gt_delta": (gap > delta).mean(axis=0),
            "p_abs_lt_delta": (np.abs(gap) < delta).mean(axis=0),
            "rank": np.median(ranks, axis=0),
            "rank_low": r_low,
            "rank_high": r_high,
            "delta": delta,
            "converged": fit.converged,
        }
    )
    return {
        "qa_bayes_scores": pd.DataFrame(rows),
        "qa_bayes_cue_gap": pd.DataFrame(gaps),
        "qa_bayes_gap": gap_rows,
    }


def qa_bayes_verdicts(
    fit: QABayesFit,
    gap: pd.DataFrame,
    *,
    delta: float = 0.05,
    probability: float = 0.95,
    min_parsable: int = 0,
    cue_gap: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """Verdicts from the posterior gap, by the rule of :func:`qa_verdicts`; every verdict
    is inconclusive, with the gate's reason, when the fit did not converge.

    Parameters
    ----------
    fit : QABayesFit
    gap : DataFrame
        ``qa_bayes_gap`` of :func:`qa_bayes_tables` with the same δ.
    delta, probability, min_parsable
        The policy.
    cue_gap : DataFrame, optional
        ``qa_bayes_cue_gap`` of :func:`qa_bayes_tables`: its accuracy gaps are named in a
        reason when they fall by more than δ (an observation; the verdict is the gap's).

    Returns
    -------
    DataFrame
        The columns of :func:`qa_verdicts`, ``source`` = ``bayesian``.
    """
    from cuegap.designs.qa.stats._verdict import qa_verdicts

    strategy = str(fit.settings.get("strategy", "zero-shot"))
    n = fit.data.n_parsed.sum(axis=-1)  # (system, cue)
    table = gap.assign(strategy=strategy, metric="s_amb", n_explicit=n[:, 0], n_implicit=n[:, 1])
    if cue_gap is not None and len(cue_gap):
        accuracy = cue_gap[cue_gap["metric"].str.startswith("acc_")].assign(strategy=strategy)
        table = pd.concat([table, accuracy[["system", "strategy", "metric", "gap", "gap_low",
                                            "gap_high"]]], ignore_index=True)  # fmt: skip
    out = qa_verdicts(
        table, delta=delta, probability=probability, strategy=strategy, min_parsable=min_parsable
    )
    out["source"] = "bayesian"
    if not fit.converged:
        out["verdict"] = "inconclusive"
        out["reason"] = "the Bayesian fit did not pass the convergence gate: " + fit.message
    return out
