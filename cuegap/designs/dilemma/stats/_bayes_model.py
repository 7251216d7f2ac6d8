"""The hierarchical binomial-logit model of Favor and Against events: data layout, priors.

Pure statistics: numpy, pandas and PyMC. :func:`prepare_counts` turns the count table into
arrays, :func:`build_model` states the model of :data:`METHODS`, :func:`cell_logits`
recomputes its linear predictor from draws (``_bayes_post.prior_predictive`` simulates from
the priors). Fitting and the convergence gate are in :mod:`cuegap.designs.dilemma.stats._bayes`.

The model's constants and :data:`METHODS` are in :mod:`cuegap.designs.dilemma.stats._bayes_spec`,
the data
layout in :mod:`cuegap.designs.dilemma.stats._bayes_data`; every name stays importable from here.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from cuegap.designs.dilemma.stats._bayes_data import (
    _COUNTS,  # noqa: F401 (re-exported: importable from here as before)
    BayesData,
    _check_condition,  # noqa: F401
    _label,  # noqa: F401
    expand_rows,
    prepare_counts,
)
from cuegap.designs.dilemma.stats._bayes_spec import (
    EVENTS,
    GATE,
    METHODS,
    MODEL_VERSION,
    PARAMS,
    PRIORS,
    quiet,  # noqa: F401 (re-exported: the designs' fits import it from here)
)

# --------------------------------------------------------------------------------------
# model


def build_model(data: BayesData, *, interaction: bool = False, rows: bool = False):
    """The PyMC model of :data:`METHODS` for the given counts.

    Parameters
    ----------
    data : BayesData
        Output of :func:`prepare_counts`.
    interaction : bool
        Add a gender x race interaction per system (zero-sum over both axes).
    rows : bool
        Fit the same model to one Bernoulli observation per decision (the rows of
        :func:`expand_rows`) instead of the binomial counts: the same posterior, for
        benchmarks and checks only (much slower).

    Returns
    -------
    pymc.Model
        With shared data ``trials`` and ``events`` (so that a compiled model can be reused
        for other counts of the same shape).
    """
    import pymc as pm
    import pytensor.tensor as pt

    pr = PRIORS
    coords = data.coords()
    n_g, n_r = len(data.genders), len(data.races)
    with pm.Model(coords=coords) as model:
        dims5 = ("event", "condition", "system", "gender", "race")
        trials = pm.Data("trials", data.trials, dims=dims5)
        events = pm.Data("events", data.events, dims=dims5)
        ec = ("event", "condition")
        mu = pm.Normal("mu", pr["intercept_mean"], pr["intercept_sd"], dims=ec)
        eta = mu[..., None, None, None]
        multi = len(data.systems) > 1
        if multi:
            # zero-sum over systems: mu is the mean system intercept
            shape = pr["system_sd_shape"]
            sd_s = pm.Gamma("sd_system", alpha=shape, beta=shape / pr["system_sd_mean"], dims=ec)
            dev = pm.ZeroSumNormal("d_system", sigma=sd_s[:, :, None], dims=(*ec, "system"))
            eta = eta + dev[..., None, None]
        for name, n_lev, where in (("gender", n_g, -1), ("race", n_r, -2)):
            if n_lev < 2:
                continue
            eff = pm.ZeroSumNormal(
                f"{name}_pop", sigma=pr["group_population_sd"], dims=(*ec, name)
            )[:, :, None, :]
            if multi:
                # zero-sum over systems and groups: the population effect is their mean
                sd = pm.HalfNormal(f"sd_{name}", pr["group_system_sd_scale"], dims=ec)
                z = pm.ZeroSumNormal(
                    f"z_{name}", sigma=1.0, dims=(*ec, "system", name), n_zerosum_axes=2
                )
                eff = eff + sd[:, :, None, None] * z
            eta = eta + pt.expand_dims(eff, where)
        if interaction and n_g > 1 and n_r > 1:
            sd_i = pm.HalfNormal("sd_inter", pr["interaction_sd_scale"], dims=ec)
            z_i = pm.ZeroSumNormal("z_inter", sigma=1.0, dims=dims5, n_zerosum_axes=2)
            eta = eta + sd_i[:, :, None, None, None] * z_i
        if rows:
            r = expand_rows(data)
            idx = tuple(r[f"{a}_idx"].to_numpy() for a in dims5)
            pm.Bernoulli("y", logit_p=eta[idx], observed=r["y"].to_numpy())
        else:
            pm.Binomial("y", n=trials, logit_p=eta, observed=events, dims=dims5)
    return model


def cell_logits(posterior: Any, *, stacked: bool = True) -> np.ndarray:
    """Cell logits from posterior (or prior) draws, the same sum as :func:`build_model`.

    Parameters
    ----------
    posterior : xarray.Dataset
        ``idata.posterior`` (or ``idata.prior``).
    stacked : bool
        Flatten chains and draws into one leading axis.

    Returns
    -------
    ndarray
        Shape (chain, draw, event, condition, system, gender, race), or (sample, ...)
        when ``stacked``.
    """
    v = {k: np.asarray(posterior[k]) for k in posterior.data_vars}
    eta = v["mu"][..., None, None, None]
    if "d_system" in v:
        eta = eta + v["d_system"][..., None, None]
    for name, where in (("gender", -1), ("race", -2)):
        if f"{name}_pop" not in v:
            continue
        eff = v[f"{name}_pop"][..., None, :]
        if f"z_{name}" in v:
            eff = eff + v[f"sd_{name}"][..., None, None] * v[f"z_{name}"]
        eta = eta + np.expand_dims(eff, where)
    if "z_inter" in v:
        eta = eta + v["sd_inter"][..., None, None, None] * v["z_inter"]
    n_g = posterior.sizes.get("gender", 1)
    n_r = posterior.sizes.get("race", 1)
    if eta.shape[-2:] != (n_g, n_r):
        eta = np.broadcast_to(eta, (*eta.shape[:-2], n_g, n_r))
    if stacked:
        eta = eta.reshape(-1, *eta.shape[2:])
    return eta


__all__ = [
    "EVENTS",
    "GATE",
    "METHODS",
    "MODEL_VERSION",
    "PARAMS",
    "PRIORS",
    "BayesData",
    "build_model",
    "cell_logits",
    "expand_rows",
    "prepare_counts",
]
