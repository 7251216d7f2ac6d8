"""Fitting the prompt-variance variance-components model, with the convergence gate, and
its posterior tables (model: :mod:`cuegap.designs.prompt_variance.stats._bayes_model`).

One model per metric (the cells of a metric share the hyperparameters; metrics differ in
scale, so they do not). Sampling as the other designs' fits: nutpie, with the compiled
model cached per data shape and reused with new data (PyMC's NUTS as the fallback);
r̂ ≤ 1.01, bulk ESS ≥ 400 and no divergences over the hyperparameters, the SDs, the
shares and the format spreads; one retry with twice the tuning and target
acceptance 0.95 (and twice the draws when ESS fell short). A metric whose fit misses the
gate is marked ``converged = False`` in every table row.
"""

from __future__ import annotations

import logging
import warnings
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import numpy as np
import pandas as pd

from cuegap.designs.prompt_variance.stats._bayes_model import (
    PV_BAYES_PRIORS,
    PVBayesData,
    build_pv_bayes_model,
    prepare_pv_bayes,
    pv_bayes_draws,
)
from cuegap.designs.prompt_variance.stats._frame import BY, as_names, check_table
from cuegap.models import GATE, check_sampler, run_gated, sample_nuts

logger = logging.getLogger(__name__)
PV_BAYES_VERSION = "pv-components-1"
_COMPILED: OrderedDict[tuple, Any] = OrderedDict()
_DATA_NAMES = ("ss", "dof", "r")


@dataclass
class PVBayesFit:
    """The fits of one score table, one per metric.

    Attributes
    ----------
    fits : dict
        Metric → ``(idata, PVBayesData, converged, message)``.
    diagnostics : DataFrame
        One row per metric and sampling attempt: sampler, draws, tune, chains, seed,
        target_accept, seconds, r_hat_max, ess_bulk_min, ess_tail_min, divergences,
        passed, reason.
    keys : list of str
        The cell columns (e.g. system, category).
    settings : dict
    """

    fits: dict[str, tuple[Any, PVBayesData, bool, str]]
    diagnostics: pd.DataFrame
    keys: list[str]
    settings: dict = field(default_factory=dict)

    @property
    def converged(self) -> bool:
        """Whether every metric's fit passed the gate."""
        return all(f[2] for f in self.fits.values())


def _compiled(data: PVBayesData) -> Any:
    import nutpie

    key = (PV_BAYES_VERSION, data.shape_key)
    if key not in _COMPILED:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            _COMPILED[key] = nutpie.compile_pymc_model(build_pv_bayes_model(data))
        while len(_COMPILED) > 4:
            _COMPILED.popitem(last=False)
    _COMPILED.move_to_end(key)
    values = dict(zip(_DATA_NAMES, (data.ss, data.dof, data.r), strict=True))
    return _COMPILED[key].with_data(**values)


def _sample(data: PVBayesData, sampler: str, **kw: Any) -> tuple[Any, str, str]:
    build = partial(build_pv_bayes_model, data)
    compiled = partial(_compiled, data) if sampler == "nutpie" else None
    return sample_nuts(build, sampler, compiled=compiled, **kw)


def _gate_input(data: PVBayesData, idata: Any) -> tuple[Any, int]:
    return _gated(idata, data), int(np.asarray(idata.sample_stats["diverging"]).sum())


def _gated(idata: Any, data: PVBayesData) -> Any:
    import xarray as xr

    d = pv_bayes_draws(idata.posterior, data)
    keep = [v for v in ("log_sd_mean", "log_sd_tau", "sd") if v in idata.posterior]
    return idata.posterior[keep].assign(
        share=xr.DataArray(d["share"], dims=("chain", "draw", "cell_", "component_")),
        sd_format=xr.DataArray(d["sd_format"], dims=("chain", "draw", "cell_")),
    )


def fit_pv_bayes(
    scores: pd.DataFrame,
    *,
    factors: Sequence[str],
    by: Sequence[str] = BY,
    model_by: str = "metric",
    value: str = "score",
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
) -> PVBayesFit:
    """Fit the hierarchical variance-components model to per-run scores, with the gate.

    Parameters
    ----------
    scores : DataFrame
        The ``pv_scores`` table (or any per-run table with ``by``, ``factors``,
        ``replicate`` and ``value``, e.g. a per-run cue gap with a constant ``metric``).
    factors : sequence of one or two str
        Factor A (e.g. ``choice_format``) and optionally factor B (e.g. ``field_order``).
    by : sequence of str, default ("system", "category", "metric")
        The keys of one cell; must include ``model_by``.
    model_by : str, default "metric"
        One model per distinct value of this column (cells within it are pooled).
    value : str, default "score"
    draws, tune, chains, seed, sampler, target_accept, retry, progress
        As for :func:`cuegap.designs.qa.stats.fit_qa_bayes`.
    min_ess, max_rhat : float
        The gate's thresholds (lower them only in tests).

    Returns
    -------
    PVBayesFit
    """
    check_sampler(sampler)
    factors, by = as_names(factors, "factors"), as_names(by, "by")
    if model_by not in by:
        raise ValueError(f"model_by {model_by!r} must be one of the keys by={by}")
    df = check_table(scores, by=by, factors=factors, value=value, what="fit_pv_bayes scores")
    keys = [k for k in by if k != model_by]
    settings = {
        "model_version": PV_BAYES_VERSION, "factors": factors, "keys": keys,
        "model_by": model_by, "draws": draws, "tune": tune, "chains": chains, "seed": seed,
        "sampler": sampler, "target_accept": target_accept, "retry": retry,
        "priors": dict(PV_BAYES_PRIORS),
        "gate": {"r_hat_max": max_rhat, "ess_bulk_min": min_ess, "divergences_max": 0},
    }  # fmt: skip
    fits, rows = {}, []
    for name, part in df.groupby(model_by, sort=True):
        data = prepare_pv_bayes(part, keys=keys, factors=factors, value=value)
        run = run_gated(
            lambda kw: (*_sample(data, sampler, progress=progress, **kw), {}),  # noqa: B023
            partial(_gate_input, data),
            draws=draws, tune=tune, chains=chains, seed=seed, target_accept=target_accept,
            retry=retry, min_ess=min_ess, max_rhat=max_rhat, first={model_by: name},
            what=f"{model_by} {name}: ",
        )  # fmt: skip
        rows += run.rows
        idata, ok, message = run.idata, run.converged, run.message
        fits[str(name)] = (idata, data, ok, message)
    settings["model_by_values"] = list(fits)
    return PVBayesFit(fits, pd.DataFrame(rows), keys, settings)


def _q(x: np.ndarray, level: float) -> tuple[np.ndarray, np.ndarray]:
    a = (1 - level) / 2
    return np.quantile(x, a, axis=0), np.quantile(x, 1 - a, axis=0)


def pv_bayes_tables(fit: PVBayesFit, *, level: float = 0.9) -> dict[str, pd.DataFrame]:
    """Posterior summaries of :func:`fit_pv_bayes`.

    Parameters
    ----------
    fit : PVBayesFit
    level : float, default 0.9
        Probability of the central posterior intervals (``low``, ``high``).

    Returns
    -------
    dict
        ``pv_bayes_components``: one row per (cell, metric, component) with ``component``
        labelled as in ``pv_components`` (factor A's name, factor B's name, ``A:B``,
        ``residual``), ``share`` (posterior mean), ``share_sd``, ``share_low``,
        ``share_high``, ``sd`` / ``sd_low`` / ``sd_high`` (√V_k, the finite-population
        SD of the component over the store's levels; σ_E for the residual) and
        ``converged``. ``pv_bayes_spread``: one row per (cell, metric) with ``mean``
        (of the combination means), ``sd_format`` / ``_low`` / ``_high`` (the spread
        prompt construction alone gives the score over the store's combinations) and
        ``sd_format_new`` / ``_low`` / ``_high`` (for a new combination from the same
        population), ``converged``.
        ``pv_bayes_typical``: one row per (metric, component): the share of a *typical*
        cell, exp(2 m_k) / Σ_j exp(2 m_j) with m_k the mean over cells of log σ_k (the
        cell whose SDs are the geometric means of the cells'), with ``share_low`` /
        ``share_high`` and ``converged``. Definitions:
        :mod:`cuegap.designs.prompt_variance.stats._bayes_model`.
    """
    if not 0 < level < 1:
        raise ValueError(f"level should be in the interval (0, 1) but got {level}")
    model_by = fit.settings.get("model_by", "metric")
    comp_rows, spread_rows, typical_rows = [], [], []
    for name, (idata, data, ok, _msg) in fit.fits.items():
        d = {
            k: v.reshape(-1, *v.shape[2:]) for k, v in pv_bayes_draws(idata.posterior, data).items()
        }
        f = data.factors
        labels = [f[0], "residual"] if len(f) == 1 else [f[0], f[1], f"{f[0]}:{f[1]}", "residual"]
        s_low, s_high = _q(d["share"], level)
        sd = np.sqrt(d["var"])
        sd_low, sd_high = _q(sd, level)
        f_low, f_high = _q(d["sd_format"], level)
        n_low, n_high = _q(d["sd_format_new"], level)
        sd_all = np.asarray(idata.posterior["sd"])  # chain, draw, component, cell
        m = np.log(sd_all).mean(axis=-1).reshape(-1, len(labels))
        w = np.exp(2 * (m - m.max(axis=1, keepdims=True)))
        typical = w / w.sum(axis=1, keepdims=True)
        t_low, t_high = _q(typical, level)
        for k, label in enumerate(labels):
            typical_rows.append({model_by: name, "component": label,
                                 "share": typical[:, k].mean(), "share_low": t_low[k],
                                 "share_high": t_high[k], "converged": ok})  # fmt: skip
        for i, cell in enumerate(data.cells.to_dict("records")):
            head = {**cell, model_by: name}
            for k, label in enumerate(labels):
                comp_rows.append({
                    **head, "component": label, "share": d["share"][:, i, k].mean(),
                    "share_sd": d["share"][:, i, k].std(ddof=1), "share_low": s_low[i, k],
                    "share_high": s_high[i, k], "sd": sd[:, i, k].mean(),
                    "sd_low": sd_low[i, k], "sd_high": sd_high[i, k], "converged": ok,
                })  # fmt: skip
            spread_rows.append({
                **head, "mean": data.grand_mean[i], "sd_format": d["sd_format"][:, i].mean(),
                "sd_format_low": f_low[i], "sd_format_high": f_high[i],
                "sd_format_new": d["sd_format_new"][:, i].mean(),
                "sd_format_new_low": n_low[i], "sd_format_new_high": n_high[i],
                "converged": ok,
            })  # fmt: skip
    return {
        "pv_bayes_components": pd.DataFrame(comp_rows),
        "pv_bayes_spread": pd.DataFrame(spread_rows),
        "pv_bayes_typical": pd.DataFrame(typical_rows),
    }


__all__ = ["PVBayesFit", "fit_pv_bayes", "pv_bayes_tables"]
