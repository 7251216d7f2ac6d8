r"""Hierarchical Bayesian model of the QA design's ambiguous answers (seed 001's S_amb).

Seed 001 gives point estimates only. This model gives every system's ambiguous accuracy,
bias score and explicit-vs-implicit gap a posterior, partially pooled across systems and
dimensions, and gates it on the same convergence diagnostics as the dilemma model.

Model
-----
The three-way ambiguous answer (unknown / stereotype-consistent / anti-stereotypical) of
system s under cue c in dimension d is factored exactly into two binomials (a
continuation-ratio multinomial)::

    N_u[s,c,d]  ~ Binomial(N_p[s,c,d], expit(η_u[s,c,d]))      unknown among parsable
    N_st[s,c,d] ~ Binomial(N_*[s,c,d], expit(η_b[s,c,d]))      stereotyped among the rest

    η_k[s,c,d] ~ Normal(μ_k[c] + α_k[c,s] + β_k[c,d], σ^cell_k[c])
    α_k[c,·] ~ ZeroSumNormal(σ^sys_k[c]),   β_k[c,·] ~ ZeroSumNormal(σ^dim_k[c])

with μ ~ Normal(0, 1.5), σ^sys ~ HalfNormal(1), σ^dim, σ^cell ~ HalfNormal(0.5), all
centred: a cell's own answers (hundreds per cell in a real audit) pin its logit down, and
the zero-sum effects keep μ the mean system and dimension.

Per draw: Acc_amb = expit(η_u), S_amb_raw = 2·expit(η_b) − 1,
S_amb = (1 − Acc_amb)·S_amb_raw (Eq. 8); a system's score is the unweighted mean over the
dimensions it answered; the gap G = S_amb(implicit) − S_amb(explicit) (positive = looks
fairer when identity is stated); ranks order the systems by G (1 = largest gap).

Sampling and gate as :func:`cuegap.models.fit_bayes`: nutpie (PyMC's NUTS as fallback),
r̂ ≤ 1.01, bulk ESS ≥ 400 over parameters and gaps, no divergences, one retry with twice
the tuning and target acceptance 0.95.
"""

from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from cuegap.models._bayes import gate_summary
from cuegap.models._bayes_model import GATE, quiet
from cuegap.models._qa_scores import qa_scores

if TYPE_CHECKING:
    import arviz as az

logger = logging.getLogger(__name__)
QA_MODEL_VERSION = "qa-1"
QA_PRIORS = {"intercept_sd": 1.5, "system_sd": 1.0, "dimension_sd": 0.5, "cell_sd": 0.5}
CUES = ("explicit", "implicit")
_PARTS = ("u", "b")  # the unknown and the stereotyped logits


@dataclass
class QABayesData:
    """Ambiguous-context counts in array layout (system × cue × dimension)."""

    systems: list[str]
    dimensions: list[str]
    n_parsed: np.ndarray
    n_unknown: np.ndarray
    n_stereotyped: np.ndarray
    n_anti: np.ndarray

    @property
    def n_non_unknown(self) -> np.ndarray:
        """Answers naming a person."""
        return self.n_stereotyped + self.n_anti

    @property
    def observed(self) -> np.ndarray:
        """Cells with at least one parsable answer."""
        return self.n_parsed > 0


def prepare_qa_counts(counts: pd.DataFrame, *, strategy: str = "zero-shot") -> QABayesData:
    """Ambiguous explicit/implicit counts of one strategy, as arrays.

    Raises
    ------
    ValueError
        When no system answered both explicit and implicit ambiguous items.
    """
    scores = qa_scores(counts)
    df = scores[
        (scores["strategy"] == strategy)
        & (scores["context"] == "ambiguous")
        & scores["cue"].isin(CUES)
    ]
    both = df.groupby("system")["cue"].nunique()
    systems = sorted(map(str, both[both == len(CUES)].index))
    if not systems:
        raise ValueError(
            f"no system answered both explicit and implicit ambiguous items under {strategy!r}"
        )
    df = df[df["system"].isin(systems)]
    dimensions = sorted(map(str, set(df["dimension"])))
    shape = (len(systems), len(CUES), len(dimensions))
    arrays = {
        k: np.zeros(shape, dtype=np.int64)
        for k in ("n_parsed", "n_unknown", "n_stereotyped", "n_anti")
    }
    s_idx = {s: i for i, s in enumerate(systems)}
    d_idx = {d: i for i, d in enumerate(dimensions)}
    for r in df.itertuples():
        at = (s_idx[str(r.system)], CUES.index(str(r.cue)), d_idx[str(r.dimension)])
        for k in arrays:
            arrays[k][at] += int(getattr(r, k))
    return QABayesData(systems, dimensions, **arrays)


def build_qa_model(data: QABayesData):
    """The PyMC model of this module's docstring for the given counts."""
    import pymc as pm

    coords = {"system": data.systems, "cue": list(CUES), "dimension": data.dimensions}
    obs = {"u": (data.n_parsed, data.n_unknown), "b": (data.n_non_unknown, data.n_stereotyped)}
    cells = ("system", "cue", "dimension")
    with pm.Model(coords=coords) as model:
        for k in _PARTS:
            # Each system × cue has its own intercept: a verdict is about one system, so its
            # level is not shrunk towards the others'; systems share the dimension pattern
            # and the spread of their cells around it.
            alpha = pm.Normal(f"alpha_{k}", 0.0, QA_PRIORS["intercept_sd"], dims=("system", "cue"))
            eta = alpha[:, :, None]
            if len(data.dimensions) > 1:
                sd_d = pm.HalfNormal(f"sd_dimension_{k}", QA_PRIORS["dimension_sd"], dims="cue")
                z_d = pm.ZeroSumNormal(f"z_dimension_{k}", sigma=1.0, dims=("cue", "dimension"))
                eta = eta + (sd_d[:, None] * z_d)[None, :, :]
            sd_c = pm.HalfNormal(f"sd_cell_{k}", QA_PRIORS["cell_sd"], dims="cue")
            z_c = pm.Normal(f"z_cell_{k}", 0.0, 1.0, dims=cells)
            eta = pm.Deterministic(f"eta_{k}", eta + sd_c[None, :, None] * z_c, dims=cells)
            trials, events = obs[k]
            pm.Binomial(f"y_{k}", n=trials, logit_p=eta, observed=events)
    return model


def _expit(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


def qa_draws(posterior: Any, data: QABayesData) -> dict[str, np.ndarray]:
    """Per-draw system scores: ``acc_amb``, ``s_amb_raw``, ``s_amb`` as (chain, draw,
    system, cue) and the gap as (chain, draw, system)."""
    p_u = _expit(np.asarray(posterior["eta_u"]))
    raw = 2 * _expit(np.asarray(posterior["eta_b"])) - 1
    cells = {"acc_amb": p_u, "s_amb_raw": raw, "s_amb": (1 - p_u) * raw}
    mask = data.observed[None, None].astype(float)
    weight = mask / np.maximum(mask.sum(axis=-1, keepdims=True), 1)
    out = {k: (v * weight).sum(axis=-1) for k, v in cells.items()}
    out["gap"] = out["s_amb"][..., 1] - out["s_amb"][..., 0]
    return out


@dataclass
class QABayesFit:
    """A QA Bayesian fit and whether it may be used for verdicts (see :class:`BayesFit`)."""

    idata: az.InferenceData
    data: QABayesData
    converged: bool
    message: str
    diagnostics: pd.DataFrame
    settings: dict = field(default_factory=dict)


def _sample(data: QABayesData, sampler: str, **kw: Any) -> tuple[Any, str, str]:
    import pymc as pm

    model = build_qa_model(data)
    cores = min(kw["chains"], os.cpu_count() or 1)
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
    else:
        note = ""
    with quiet(kw["progress"]), model:
        idata = pm.sample(
            draws=kw["draws"], tune=kw["tune"], chains=kw["chains"], cores=cores,
            random_seed=kw["seed"], progressbar=kw["progress"],
            target_accept=kw["target_accept"], compute_convergence_checks=False,
            nuts_sampler="pymc",
        )  # fmt: skip
    return idata, "pymc", note


def fit_qa_bayes(
    counts: pd.DataFrame,
    *,
    strategy: str = "zero-shot",
    draws: int = 1000,
    tune: int = 1000,
    chains: int = 4,
    seed: int = 2026,
    sampler: str = "nutpie",
    target_accept: float = 0.8,
    retry: bool = True,
    progress: bool = False,
    min_ess: float = GATE["ess_bulk_min"],
    max_rhat: float = GATE["r_hat_max"],
) -> QABayesFit:
    """Fit the hierarchical QA model to a count table, with the convergence gate.

    Parameters
    ----------
    counts : DataFrame
        The QA count table (:mod:`cuegap.models.qa`).
    strategy : str
        The prompting strategy fitted.
    draws, tune, chains, seed, sampler, target_accept, retry, progress
        As for :func:`cuegap.models.fit_bayes`.
    min_ess, max_rhat : float
        The gate's thresholds (lower them only in tests).

    Returns
    -------
    QABayesFit
    """
    import xarray as xr

    if sampler not in ("nutpie", "pymc"):
        raise ValueError(f"sampler must be 'nutpie' or 'pymc', but got {sampler!r}")
    data = prepare_qa_counts(counts, strategy=strategy)
    settings = {
        "model_version": QA_MODEL_VERSION, "strategy": strategy, "draws": draws,
        "tune": tune, "chains": chains, "seed": seed, "sampler": sampler,
        "target_accept": target_accept, "retry": retry, "priors": dict(QA_PRIORS),
        "gate": {"r_hat_max": max_rhat, "ess_bulk_min": min_ess, "divergences_max": 0},
    }  # fmt: skip
    rows, idata, gate = [], None, None
    kw = dict(draws=draws, tune=tune, chains=chains, seed=seed, target_accept=target_accept)
    for attempt in range(1, 3 if retry else 2):
        if attempt == 2:
            kw |= dict(tune=max(2 * tune, tune + 500), seed=seed + 1,
                       target_accept=max(0.95, target_accept))  # fmt: skip
            if gate is not None and gate["ess_bulk_min"] < min_ess:
                kw["draws"] = 2 * draws
        start = time.perf_counter()
        idata, used, note = _sample(data, sampler, progress=progress, **kw)
        seconds = time.perf_counter() - start
        draws_ = qa_draws(idata.posterior, data)
        keep = [v for v in idata.posterior.data_vars if not str(v).startswith("eta_")]
        ds = idata.posterior[keep].assign(
            gap=xr.DataArray(draws_["gap"], dims=("chain", "draw", "gap_system"))
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
    return QABayesFit(idata, data, converged, message, pd.DataFrame(rows), settings)


def _interval(x: np.ndarray, level: float = 0.9) -> tuple[np.ndarray, np.ndarray]:
    a = (1 - level) / 2
    return np.quantile(x, a, axis=0), np.quantile(x, 1 - a, axis=0)


def qa_bayes_tables(fit: QABayesFit, *, delta: float = 0.05) -> dict[str, pd.DataFrame]:
    """Posterior summaries: ``qa_bayes_scores`` (system × cue × metric) and
    ``qa_bayes_gap`` (per system: G's mean, SD, 90% interval, P(G > δ), P(|G| < δ), and
    the median rank with its 90% interval, 1 = largest gap)."""
    draws = qa_draws(fit.idata.posterior, fit.data)
    flat = {k: v.reshape(-1, *v.shape[2:]) for k, v in draws.items()}
    rows = []
    for metric in ("acc_amb", "s_amb_raw", "s_amb"):
        x = flat[metric]
        low, high = _interval(x)
        for i, system in enumerate(fit.data.systems):
            for j, cue in enumerate(CUES):
                rows.append({"system": system, "cue": cue, "metric": metric,
                             "mean": x[:, i, j].mean(), "sd": x[:, i, j].std(ddof=1),
                             "low": low[i, j], "high": high[i, j]})  # fmt: skip
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
    return {"qa_bayes_scores": pd.DataFrame(rows), "qa_bayes_gap": gap_rows}


def qa_bayes_verdicts(
    fit: QABayesFit,
    gap: pd.DataFrame,
    *,
    delta: float = 0.05,
    probability: float = 0.95,
    min_parsable: int = 0,
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

    Returns
    -------
    DataFrame
        The columns of :func:`qa_verdicts`, ``source`` = ``bayesian``.
    """
    from cuegap.models._qa_verdict import qa_verdicts

    strategy = str(fit.settings.get("strategy", "zero-shot"))
    n = fit.data.n_parsed.sum(axis=-1)  # (system, cue)
    table = gap.assign(strategy=strategy, metric="s_amb", n_explicit=n[:, 0], n_implicit=n[:, 1])
    out = qa_verdicts(
        table, delta=delta, probability=probability, strategy=strategy, min_parsable=min_parsable
    )
    out["source"] = "bayesian"
    if not fit.converged:
        out["verdict"] = "inconclusive"
        out["reason"] = "the Bayesian fit did not pass the convergence gate: " + fit.message
    return out
