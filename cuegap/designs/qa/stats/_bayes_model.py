"""The PyMC model of the QA design (see :mod:`cuegap.designs.qa.stats._bayes` for the statement).

Four logits, each with the same hierarchical structure over systems, cues, dimensions and
the sub-groups within them:

* ``u``: unknown among an ambiguous cell's parsable answers;
* ``b``: stereotype-consistent among an ambiguous cell's answers naming a person;
* ``du``: unknown among a disambiguated cell's parsable answers;
* ``dc``: correct among a disambiguated cell's answers naming a person, separately for
  items whose gold answer is the stereotype-consistent person and the others (``k``).

Which pooling levels the model has depends on what the data can inform
(:func:`qa_model_levels`); every level is non-centred (scale × standard normal):

* ``dimension`` (β, shared by the systems, learnt SD): with two or more systems and two
  or more dimensions;
* ``subgroup`` (γ, shared by the systems, learnt SD): with two or more systems, when
  some dimension has several sub-groups;
* ``cell`` (σ_cell·z, one value per system × cue × group, learnt SD): with two or more
  systems;
* ``group`` (fixed scale): with one system only, in place of the three above.

One system is the shape of a published result set (issue 27: GPT-4o on three BBQ
categories). Its cells *are* its groups, so a cell SD and the shared sub-group and
dimension SDs are spreads of the same few numbers (six groups per cue): the sampler
wandered along that ridge (r̂ 1.03-1.12, ESS 23-166, 4 minutes), and with the cell level
dropped the two remaining SDs, each resting on three dimensions or six groups, still made
funnels NUTS diverged in. So with one system no SD is learnt: each group's deviation from
the system's mean logit is ZeroSumNormal with a fixed, weakly informative scale
(``QA_PRIORS["group_scale"]``, 1 on the logit scale, about ±0.25 in a probability near
0.5), which hundreds of answers per group override. The report's methods text says which
levels a fit has and why the others were left out (``qa_bayes_levels``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from cuegap.designs.qa.stats._bayes_data import CUES, QABayesData

#: Prior parameters (logit units). The spreads have zero-avoiding Gamma(2, 2 / mean)
#: priors, as the dilemma model's system spread: with a handful of dimensions or
#: sub-groups a half-normal's mass near zero makes a funnel NUTS diverges in.
QA_PRIORS = {
    "intercept_sd": 1.5,
    "spread_shape": 2.0,
    "dimension_sd_mean": 0.3,
    "subgroup_sd_mean": 0.2,
    "cell_sd_mean": 0.2,
    "group_scale": 1.0,
}


def qa_model_levels(data: QABayesData) -> dict[str, str]:
    """The model's pooling levels: ``""`` for a level that is in the model, else why it
    was left out.

    Parameters
    ----------
    data : QABayesData

    Returns
    -------
    dict of str to str
        Keys ``dimension``, ``subgroup``, ``cell`` (learnt SDs) and ``group`` (fixed
        scale), in that order.

    Examples
    --------
    One system, three dimensions of two sub-groups: only the fixed-scale group level.
    """
    n_sys, n_dim, n_grp = len(data.systems), len(data.dimensions), len(data.groups)
    one = (
        "one system: a learnt SD would rest on its few groups alone (and a cell is its "
        "group), so its groups get one fixed-scale level instead"
    )
    if n_sys == 1:
        return {
            "dimension": one,
            "subgroup": one,
            "cell": one,
            "group": "" if n_grp > 1 else "one group: no deviation between groups",
        }
    many = "several systems: the learnt dimension, sub-group and cell levels"
    return {
        "dimension": "" if n_dim > 1 else "one dimension: no spread between dimensions",
        "subgroup": ""
        if n_grp > n_dim
        else "one sub-group per dimension: the dimension level is it",
        "cell": "",
        "group": many,
    }


#: How the report names a level.
LEVEL_NAMES = {
    "dimension": "dimension",
    "subgroup": "sub-group",
    "cell": "system × cell",
    "group": "fixed-scale group",
}


def qa_levels_table(data: QABayesData) -> pd.DataFrame:
    """The ``qa_bayes_levels`` table: ``level``, ``in_model`` (bool), ``reason`` (why a
    level was left out; ``""`` when it is in), from :func:`qa_model_levels`."""
    levels = qa_model_levels(data)
    return pd.DataFrame(
        {
            "level": list(levels),
            "in_model": [not why for why in levels.values()],
            "reason": list(levels.values()),
        }
    )


def _spread(pm: Any, name: str, mean: float) -> Any:
    shape = QA_PRIORS["spread_shape"]
    return pm.Gamma(name, alpha=shape, beta=shape / mean, dims="cue")


def _logit(pm: Any, name: str, data: QABayesData, gold_split: bool) -> Any:
    """η[system, cue, group(, k)] = α[system, cue(, k)] + β[cue, dimension(group)]
    + γ[cue, group] + σ_cell[cue]·z[system, cue, group(, k)] (+ the fixed-scale group
    deviation with one system), each term only when :func:`qa_model_levels` keeps it."""
    k_dims = ("k",) if gold_split else ()
    levels = qa_model_levels(data)
    alpha = pm.Normal(
        f"alpha_{name}", 0.0, QA_PRIORS["intercept_sd"], dims=("system", "cue", *k_dims)
    )
    eta = alpha[:, :, None, :] if gold_split else alpha[:, :, None]
    if not levels["dimension"]:
        sd_d = _spread(pm, f"sd_dimension_{name}", QA_PRIORS["dimension_sd_mean"])
        z_d = pm.ZeroSumNormal(f"z_dimension_{name}", sigma=1.0, dims=("cue", "dimension"))
        beta = (sd_d[:, None] * z_d)[:, data.group_dim]  # (cue, group)
        eta = eta + (beta[None, :, :, None] if gold_split else beta[None, :, :])
    if not levels["subgroup"]:
        sd_g = _spread(pm, f"sd_subgroup_{name}", QA_PRIORS["subgroup_sd_mean"])
        z_g = pm.Normal(f"z_subgroup_{name}", 0.0, 1.0, dims=("cue", "group"))
        gamma = sd_g[:, None] * z_g
        eta = eta + (gamma[None, :, :, None] if gold_split else gamma[None, :, :])
    if not levels["cell"]:
        sd_c = _spread(pm, f"sd_cell_{name}", QA_PRIORS["cell_sd_mean"])
        z_c = pm.Normal(f"z_cell_{name}", 0.0, 1.0, dims=("system", "cue", "group", *k_dims))
        scale = sd_c[None, :, None, None] if gold_split else sd_c[None, :, None]
        eta = eta + scale * z_c
    if not levels["group"]:
        z = pm.ZeroSumNormal(
            f"z_group_{name}", sigma=QA_PRIORS["group_scale"], dims=("cue", "group")
        )
        eta = eta + (z[None, :, :, None] if gold_split else z[None, :, :])
    shape = (len(data.systems), len(CUES), len(data.groups), *((2,) if gold_split else ()))
    eta = eta + _zeros(shape)  # the full cell shape, whichever levels are present
    return pm.Deterministic(f"eta_{name}", eta, dims=("system", "cue", "group", *k_dims))


def _zeros(shape: tuple[int, ...]) -> Any:
    """A PyTensor zero array of ``shape`` (broadcasts a logit to its full cell shape)."""
    import pytensor.tensor as pt

    return pt.zeros(shape)


def build_qa_model(data: QABayesData) -> Any:
    """The PyMC model for the given counts.

    The counts are ``pm.Data`` containers, not constants: a compiled sampler program of
    the same structure and shapes serves new counts (the JAX sampler's cache).
    """
    import pymc as pm

    coords = {
        "system": data.systems,
        "cue": list(CUES),
        "dimension": data.dimensions,
        "group": [f"{d}:{g}" for d, g in data.groups],
        "k": ["gold_stereotyped", "gold_other"],
    }
    cell, cell_k = ("system", "cue", "group"), ("system", "cue", "group", "k")
    with pm.Model(coords=coords) as model:

        def counts(name: str, values: np.ndarray, dims: tuple[str, ...] = cell) -> Any:
            return pm.Data(name, np.asarray(values, dtype=np.int64), dims=dims)

        pm.Binomial("y_u", n=counts("n_parsed", data.n_parsed),
                    logit_p=_logit(pm, "u", data, False),
                    observed=counts("n_unknown", data.n_unknown))  # fmt: skip
        pm.Binomial("y_b", n=counts("n_non_unknown", data.n_non_unknown),
                    logit_p=_logit(pm, "b", data, False),
                    observed=counts("n_stereotyped", data.n_stereotyped))  # fmt: skip
        if data.has_disambiguated:
            pm.Binomial("y_du", n=counts("d_parsed", data.d_parsed.sum(axis=-1)),
                        logit_p=_logit(pm, "du", data, False),
                        observed=counts("d_unknown", data.d_unknown.sum(axis=-1)))  # fmt: skip
            pm.Binomial("y_dc", n=counts("d_named", data.d_correct + data.d_wrong, cell_k),
                        logit_p=_logit(pm, "dc", data, True),
                        observed=counts("d_correct", data.d_correct, cell_k))  # fmt: skip
    return model


def _expit(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


def _to_dimensions(cells: np.ndarray, weights: np.ndarray, data: QABayesData) -> np.ndarray:
    """Group values (…, system, cue, group) to dimension values (…, system, cue, dimension)
    as ``weights``-weighted means over each dimension's groups (NaN where none has data)."""
    onehot = np.eye(len(data.dimensions))[data.group_dim]  # (group, dimension)
    w = weights[..., :, None] * onehot  # (system, cue, group, dimension)
    total = w.sum(axis=-2)
    summed = np.einsum("...scg,scgd->...scd", cells, w)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(total > 0, summed / np.where(total > 0, total, 1), np.nan)


def qa_draws(posterior: Any, data: QABayesData) -> dict[str, np.ndarray]:
    """Per-draw system scores (chain, draw, system, cue) for ``acc_amb``, ``s_amb_raw``,
    ``s_amb`` and, with disambiguated answers, ``acc_dis``, ``acc_dis_bbq``, ``s_dis``;
    and ``gap`` (chain, draw, system) = S_amb(implicit) − S_amb(explicit).

    A dimension's value is its groups' mean weighted by their parsable answers (the
    frequentist score pools a dimension's counts the same way); a system's is the
    unweighted mean over the dimensions it answered.
    """
    p_u = _expit(np.asarray(posterior["eta_u"]))
    raw = 2 * _expit(np.asarray(posterior["eta_b"])) - 1
    cells = {"acc_amb": (p_u, data.n_parsed), "s_amb_raw": (raw, data.n_non_unknown),
             "s_amb": ((1 - p_u) * raw, data.n_parsed)}  # fmt: skip
    if data.has_disambiguated and "eta_dc" in posterior:
        p_du = _expit(np.asarray(posterior["eta_du"]))
        p_c = _expit(np.asarray(posterior["eta_dc"]))  # (chain, draw, s, c, g, k)
        parsed = data.d_parsed
        share = parsed / np.maximum(parsed.sum(axis=-1, keepdims=True), 1)
        acc = (p_c * share).sum(axis=-1)
        stereo = share[..., 0] * p_c[..., 0] + share[..., 1] * (1 - p_c[..., 1])
        weight = parsed.sum(axis=-1)
        cells |= {"acc_dis": (acc, weight), "acc_dis_bbq": ((1 - p_du) * acc, weight),
                  "s_dis": (2 * stereo - 1, weight)}  # fmt: skip
    out = {}
    for name, (values, weights) in cells.items():
        dims = _to_dimensions(values, weights.astype(float), data)
        out[name] = np.nanmean(np.where(np.isnan(dims), np.nan, dims), axis=-1)
    out["gap"] = out["s_amb"][..., 1] - out["s_amb"][..., 0]
    return out
