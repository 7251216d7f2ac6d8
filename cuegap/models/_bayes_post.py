"""Posterior draws of the derived quantities: group rates, Net, macro, gap.

Everything is computed in numpy from the parameter draws (the InferenceData stores only
parameters), with the estimands of :data:`cuegap.models._bayes.METHODS`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from cuegap.models._bayes_model import BayesData, cell_logits


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
