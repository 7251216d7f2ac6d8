"""Posterior draws of the derived quantities: group rates, Net, macro, gap.

Everything is computed in numpy from the parameter draws (the InferenceData stores only
parameters), with the estimands of :data:`cuegap.designs.dilemma.stats._bayes.METHODS`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from cuegap.designs.dilemma.stats._bayes_model import BayesData, build_model, cell_logits
from cuegap.designs.dilemma.stats._bayes_spec import PARAMS, quiet


def group_labels(data: BayesData) -> list[tuple[str, str]]:
    """(group_type, group) of the group axis: genders, races, gender x race cells, macro."""
    out = [("gender", g) for g in data.genders]
    out += [("race", r) for r in data.races]
    out += [("intersection", f"{g} × {r}") for g in data.genders for r in data.races]
    out.append(("macro", "macro"))
    return out


def _weights(trials: np.ndarray, axis: int) -> np.ndarray:
    """Weights for averaging cells over ``axis`` (-1: races, -2: genders).

    The observed trials of the system; where a group has no trials in a system and
    condition, the trials pooled over systems; where those are zero too, equal weights.
    """
    w = trials.astype(float)
    pooled = np.broadcast_to(w.sum(axis=2, keepdims=True), w.shape)
    empty = np.broadcast_to(w.sum(axis=axis, keepdims=True) == 0, w.shape)
    w = np.where(empty, pooled, w)
    empty = np.broadcast_to(w.sum(axis=axis, keepdims=True) == 0, w.shape)
    return np.where(empty, 1.0, w)


def rate_draws(posterior: Any, data: BayesData) -> np.ndarray:
    """Favor and Against rates per group, per draw.

    Parameters
    ----------
    posterior : xarray.Dataset
        ``idata.posterior`` of a fit.
    data : BayesData
        The counts fitted (gives the trial weights).

    Returns
    -------
    ndarray
        Shape (chain, draw, event, condition, system, group) with the groups of
        :func:`group_labels`; rates are proportions. The macro entry holds the mean of the
        gender and race groups' rates (so that its Favor minus Against is the macro Net).
    """
    p = 1.0 / (1.0 + np.exp(-cell_logits(posterior, stacked=False)))
    p = np.broadcast_to(p, (*p.shape[:2], *data.trials.shape))
    wg = _weights(data.trials, axis=-1)
    wr = _weights(data.trials, axis=-2)
    by_gender = (p * wg).sum(-1) / wg.sum(-1)
    by_race = (p * wr).sum(-2) / wr.sum(-2)
    cells = p.reshape(*p.shape[:-2], -1)
    macro = np.concatenate([by_gender, by_race], axis=-1).mean(-1, keepdims=True)
    return np.concatenate([by_gender, by_race, cells, macro], axis=-1)


def net_draws(rates: np.ndarray) -> np.ndarray:
    """Net = Favor - Against in percentage points: (chain, draw, condition, system, group)."""
    return 100.0 * (rates[:, :, 0] - rates[:, :, 1])


def macro_gap_draws(posterior: Any, data: BayesData) -> np.ndarray:
    """Macro Cue Visibility Gap (pp) per system: (chain, draw, system)."""
    net = net_draws(rate_draws(posterior, data))
    return net[:, :, 0, :, -1] - net[:, :, 1, :, -1]


def prior_predictive(
    data: BayesData, *, draws: int = 500, seed: int = 0, interaction: bool = False
) -> dict[str, np.ndarray]:
    """Draws of the cell rates and macro gaps implied by the priors alone.

    Parameters
    ----------
    data : BayesData
        Counts in array layout (only the shape and the trial weights are used).
    draws : int
        Prior draws.
    seed : int
        Seed of the prior sampler.
    interaction : bool
        Include the gender x race interaction.

    Returns
    -------
    dict
        ``p``: cell event probabilities, shape (draw, event, condition, system, gender,
        race); ``y_rate``: simulated event rates of the cells with trials (events /
        trials, flattened over cells and draws); ``macro_gap_pp``: (draw, system).
    """
    import pymc as pm

    model = build_model(data, interaction=interaction)
    with quiet(False), model:
        prior = pm.sample_prior_predictive(draws=draws, random_seed=seed)
    pr = prior.prior
    p = 1.0 / (1.0 + np.exp(-cell_logits(pr, stacked=True)))
    y = np.asarray(prior.prior_predictive["y"]).reshape(-1, *data.trials.shape)
    n = np.broadcast_to(data.trials, y.shape)
    y_rate = (y[n > 0] / n[n > 0]).ravel()
    gap = macro_gap_draws(pr[[v for v in pr.data_vars if v in PARAMS]], data)
    return {"p": p, "y_rate": y_rate, "macro_gap_pp": gap.reshape(-1, gap.shape[-1])}
