"""The PyMC model of the QA design (see :mod:`cuegap.designs.qa.stats._bayes` for the statement).

Four logits, each with the same hierarchical structure over systems, cues, dimensions and
the sub-groups within them:

* ``u``: unknown among an ambiguous cell's parsable answers;
* ``b``: stereotype-consistent among an ambiguous cell's answers naming a person;
* ``du``: unknown among a disambiguated cell's parsable answers;
* ``dc``: correct among a disambiguated cell's answers naming a person, separately for
  items whose gold answer is the stereotype-consistent person and the others (``k``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

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
}


def _spread(pm: Any, name: str, mean: float) -> Any:
    shape = QA_PRIORS["spread_shape"]
    return pm.Gamma(name, alpha=shape, beta=shape / mean, dims="cue")


def _logit(pm: Any, name: str, data: QABayesData, gold_split: bool) -> Any:
    """η[system, cue, group(, k)] = α[system, cue(, k)] + β[cue, dimension(group)]
    + γ[cue, group] + σ_cell[cue]·z[system, cue, group(, k)]."""
    k_dims = ("k",) if gold_split else ()
    alpha = pm.Normal(
        f"alpha_{name}", 0.0, QA_PRIORS["intercept_sd"], dims=("system", "cue", *k_dims)
    )
    eta = alpha[:, :, None, :] if gold_split else alpha[:, :, None]
    if len(data.dimensions) > 1:
        sd_d = _spread(pm, f"sd_dimension_{name}", QA_PRIORS["dimension_sd_mean"])
        z_d = pm.ZeroSumNormal(f"z_dimension_{name}", sigma=1.0, dims=("cue", "dimension"))
        beta = (sd_d[:, None] * z_d)[:, data.group_dim]  # (cue, group)
        eta = eta + (beta[None, :, :, None] if gold_split else beta[None, :, :])
    if len(data.groups) > len(data.dimensions):
        sd_g = _spread(pm, f"sd_subgroup_{name}", QA_PRIORS["subgroup_sd_mean"])
        z_g = pm.Normal(f"z_subgroup_{name}", 0.0, 1.0, dims=("cue", "group"))
        gamma = sd_g[:, None] * z_g
        eta = eta + (gamma[None, :, :, None] if gold_split else gamma[None, :, :])
    sd_c = _spread(pm, f"sd_cell_{name}", QA_PRIORS["cell_sd_mean"])
    z_c = pm.Normal(f"z_cell_{name}", 0.0, 1.0, dims=("system", "cue", "group", *k_dims))
    scale = sd_c[None, :, None, None] if gold_split else sd_c[None, :, None]
    return pm.Deterministic(
        f"eta_{name}", eta + scale * z_c, dims=("system", "cue", "group", *k_dims)
    )


def build_qa_model(data: QABayesData) -> Any:
    """The PyMC model for the given counts."""
    import pymc as pm

    coords = {
        "system": data.systems,
        "cue": list(CUES),
        "dimension": data.dimensions,
        "group": [f"{d}:{g}" for d, g in data.groups],
        "k": ["gold_stereotyped", "gold_other"],
    }
    with pm.Model(coords=coords) as model:
        pm.Binomial("y_u", n=data.n_parsed, logit_p=_logit(pm, "u", data, False),
                    observed=data.n_unknown)  # fmt: skip
        pm.Binomial("y_b", n=data.n_non_unknown, logit_p=_logit(pm, "b", data, False),
                    observed=data.n_stereotyped)  # fmt: skip
        if data.has_disambiguated:
            parsed = data.d_parsed.sum(axis=-1)
            pm.Binomial("y_du", n=parsed, logit_p=_logit(pm, "du", data, False),
                        observed=data.d_unknown.sum(axis=-1))  # fmt: skip
            named = data.d_correct + data.d_wrong
            pm.Binomial("y_dc", n=named, logit_p=_logit(pm, "dc", data, True),
                        observed=data.d_correct)  # fmt: skip
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
