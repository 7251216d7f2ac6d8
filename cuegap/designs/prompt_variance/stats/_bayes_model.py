r"""The hierarchical variance-components model of the prompt-variance design: data and
model (the fit, gate and tables are in :mod:`cuegap.designs.prompt_variance.stats._bayes`).

Model
-----
One model per metric. A *cell* g is one (system, category); factor A (e.g. the choice
format, a levels) and factor B (e.g. the JSON field order, b levels) are crossed; run r
of combination (i, j) in cell g has score::

    y[g,i,j,r] = μ[g] + α[g,i] + β[g,j] + γ[g,i,j] + ε[g,i,j,r]
    α ~ Normal(0, σ_A[g]),  β ~ Normal(0, σ_B[g]),  γ ~ Normal(0, σ_AB[g]),
    ε ~ Normal(0, σ_E[g]),  all independent (the two-way random-effects model)
    log σ_k[g] = m_k + τ_k·z_k[g],  z ~ Normal(0, 1)

for the components k ∈ {A, B, AB, E}. A component with fewer than :data:`POOL_BELOW`
degrees of freedom per cell (a two-level factor has one contrast per cell) is partially
pooled on the log scale across all systems and categories of the metric:
m_k ~ Normal(log 0.05, 1.5), τ_k ~ HalfNormal(0.5). The others (the 11-level choice
format, the replicates) are well determined in each cell and get independent priors,
m_k = log 0.05 and τ_k = 1.5 fixed: pooling them gains little, and when every cell has the
same SD (τ_k → 0) its funnel cost divergences on planted audits.

Likelihood: the effects are integrated out exactly. With r runs per combination, the
classical sums of squares of a cell are independent scaled χ² variables (expected mean
squares of the balanced random-effects ANOVA)::

    SS_A  ~ (r b σ_A² + r σ_AB² + σ_E²) χ²_{a−1}     SS_B ~ (r a σ_B² + r σ_AB² + σ_E²) χ²_{b−1}
    SS_AB ~ (r σ_AB² + σ_E²) χ²_{(a−1)(b−1)}          SS_E ~ σ_E² χ²_{ab(r−1)}

so the model has four parameters per cell, whatever the numbers of levels and runs. A cell
whose combinations have unequal run counts uses the unweighted-means approximation
(combination means, r = their harmonic mean, SS_E pooled within combinations); every
combination must be present in every cell.

Derived per draw (:func:`pv_bayes_draws`): the *finite-population* variances over the
store's levels, V_A = mean_i α̃_i², V_B = mean_j β̃_j², V_AB = mean_ij γ̃_ij² of the
double-centred true combination means θ (the decomposition seed 003's η² and
:func:`cuegap.designs.prompt_variance.stats.pv_components` estimate), drawn exactly from their
conditional
posterior: in each of the d_k orthonormal contrasts of component k the observed mean
contrast is y = t + e with t ~ Normal(0, λ_k), e ~ Normal(0, σ_E²/r), λ_A = b σ_A² + σ_AB²,
λ_B = a σ_B² + σ_AB², λ_AB = σ_AB², so Σ t² | y is (λ s²/(λ + s²))·χ'²_{d_k}
(noncentral, noncentrality w² Σy² / v) with w = λ/(λ + s²). V_E = σ_E². Their sum is the
variance of one run's score drawn uniformly over the store's combinations and the
decoding noise; ``share_k = V_k / ΣV``. ``sd_format = √(V_A + V_B + V_AB)`` is the SD of
the true score across the store's combinations (prompt construction alone);
``sd_format_new = √(σ_A² + σ_B² + σ_AB²)`` that of a new combination's effect.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

PV_BAYES_PRIORS = {"log_sd_mean_mu": math.log(0.05), "log_sd_mean_sd": 1.5,
                   "log_sd_tau_sd": 0.5}  # fmt: skip
COMPONENTS_2 = ("A", "B", "AB", "E")
COMPONENTS_1 = ("A", "E")
#: A component is pooled across cells when it has fewer degrees of freedom per cell.
POOL_BELOW = 5


@dataclass(frozen=True)
class PVBayesData:
    """Sufficient statistics of one metric's runs.

    Attributes
    ----------
    cells : DataFrame
        One row per cell with the key columns (e.g. system, category).
    factors : list of str
    levels : list of list of str
        The levels of each factor (one or two factors).
    r : ndarray, shape (cell,)
        Runs per combination (harmonic mean where unequal).
    ss : ndarray, shape (component, cell)
        Sums of squares of A, [B, AB,] and E.
    dof : ndarray, shape (component, cell)
        Their degrees of freedom.
    grand_mean : ndarray, shape (cell,)
        Mean of the combination means.
    """

    cells: pd.DataFrame
    factors: list[str]
    levels: list[list[str]]
    r: np.ndarray
    ss: np.ndarray
    dof: np.ndarray
    grand_mean: np.ndarray

    @property
    def components(self) -> tuple[str, ...]:
        """``("A", "B", "AB", "E")`` with two factors, ``("A", "E")`` with one."""
        return COMPONENTS_2 if len(self.factors) == 2 else COMPONENTS_1

    @property
    def pooled(self) -> tuple[bool, ...]:
        """Per component, whether it is pooled across cells (median degrees of freedom
        per cell below :data:`POOL_BELOW`)."""
        return tuple(bool(np.median(d) < POOL_BELOW) for d in self.dof)

    @property
    def shape_key(self) -> tuple:
        """What a compiled model depends on: cells, components and pooling."""
        return (len(self.cells), self.components, self.pooled)


def prepare_pv_bayes(
    scores: pd.DataFrame, *, keys: Sequence[str], factors: Sequence[str], value: str = "score"
) -> PVBayesData:
    """Sums of squares of one metric's per-run scores, per cell (NaN scores dropped).

    Parameters
    ----------
    scores : DataFrame
        One metric's runs: ``keys``, ``factors`` and ``value`` (already validated).
    keys : sequence of str
        The cell columns (e.g. ``("system", "category")``).
    factors : sequence of one or two str

    Returns
    -------
    PVBayesData

    Raises
    ------
    ValueError
        With no scored run, fewer than two levels of a factor, or a cell that lacks a
        combination.
    """
    keys, factors = list(keys), list(factors)
    if len(factors) not in (1, 2):
        raise ValueError(f"the variance-components model takes one or two factors; got {factors}")
    df = scores[scores[value].notna()]
    if df.empty:
        raise ValueError("no run has a score: nothing to fit")
    levels = [sorted(df[f].astype(str).unique()) for f in factors]
    for f, lv in zip(factors, levels, strict=True):
        if len(lv) < 2:
            raise ValueError(f"factor {f!r} has {len(lv)} level(s); need two or more to fit")
    shape = [len(lv) for lv in levels]
    k = int(np.prod(shape))
    g = df.assign(**{f: df[f].astype(str) for f in factors})
    stats = g.groupby([*keys, *factors], sort=True, observed=True)[value].agg(
        mean="mean", n="count", ssw=lambda x: float(((x - x.mean()) ** 2).sum())
    )
    counts = stats.groupby(level=list(range(len(keys))), sort=True).size()
    if (counts != k).any():
        bad = counts[counts != k].index[0]
        raise ValueError(
            f"cell {bad!r} has scores for {int(counts[bad])} of the {k} factor combinations; "
            "the variance-components model needs every combination in every cell"
        )
    cells = counts.index.to_frame(index=False)
    cell_keys = [c if isinstance(c, tuple) else (c,) for c in counts.index]
    combos = list(itertools.product(*levels))
    stats = stats.reindex(pd.MultiIndex.from_tuples([(*c, *x) for c in cell_keys for x in combos]))
    means = stats["mean"].to_numpy(float).reshape(len(cells), *shape)
    n = stats["n"].to_numpy(float).reshape(len(cells), k)
    r = k / (1.0 / n).sum(axis=1)  # harmonic mean of the run counts
    ss_e = stats["ssw"].to_numpy(float).reshape(len(cells), k).sum(axis=1)
    df_e = (n - 1).sum(axis=1)
    grand = means.reshape(len(cells), k).mean(axis=1)
    if len(factors) == 1:
        ss = [r * ((means - grand[:, None]) ** 2).sum(axis=1), ss_e]
        dof = [np.full(len(cells), shape[0] - 1.0), df_e]
    else:
        a, b = shape
        row = means.mean(axis=2) - grand[:, None]
        col = means.mean(axis=1) - grand[:, None]
        inter = means - grand[:, None, None] - row[:, :, None] - col[:, None, :]
        ss = [r * b * (row**2).sum(axis=1), r * a * (col**2).sum(axis=1),
              r * (inter**2).sum(axis=(1, 2)), ss_e]  # fmt: skip
        dof = [np.full(len(cells), a - 1.0), np.full(len(cells), b - 1.0),
               np.full(len(cells), (a - 1.0) * (b - 1.0)), df_e]  # fmt: skip
    return PVBayesData(cells, factors, levels, r, np.array(ss), np.array(dof), grand)


def _lambdas(sd2: list, data: PVBayesData) -> list:
    """λ_k, the variance of one orthonormal contrast of the true combination means, per
    component but E (``sd2``: σ_k² per component)."""
    if len(data.components) == 2:
        return [sd2[0]]
    a, b = (len(v) for v in data.levels)
    return [b * sd2[0] + sd2[2], a * sd2[1] + sd2[2], sd2[2]]


def build_pv_bayes_model(data: PVBayesData):
    """The PyMC model of the module docstring (data in ``pm.Data`` containers ``ss``,
    ``dof`` and ``r``, so that a compiled model can be reused)."""
    import pymc as pm
    import pytensor.tensor as pt

    comps = data.components
    p = PV_BAYES_PRIORS
    coords = {"component": list(comps), "cell": np.arange(len(data.cells))}
    with pm.Model(coords=coords) as model:
        ss = pm.Data("ss", data.ss, dims=("component", "cell"))
        dof = pm.Data("dof", data.dof, dims=("component", "cell"))
        r = pm.Data("r", data.r, dims="cell")
        idx = [k for k, pooled in enumerate(data.pooled) if pooled]
        m = pt.as_tensor(np.full(len(comps), p["log_sd_mean_mu"]))
        tau = pt.as_tensor(np.full(len(comps), p["log_sd_mean_sd"]))
        if idx:
            model.add_coord("pooled", [comps[k] for k in idx])
            m_p = pm.Normal("log_sd_mean", p["log_sd_mean_mu"], p["log_sd_mean_sd"],
                            dims="pooled")  # fmt: skip
            t_p = pm.HalfNormal("log_sd_tau", p["log_sd_tau_sd"], dims="pooled")
            m, tau = pt.set_subtensor(m[idx], m_p), pt.set_subtensor(tau[idx], t_p)
        z_sd = pm.Normal("z_sd", 0.0, 1.0, dims=("component", "cell"))
        log_sd = m[:, None] + tau[:, None] * z_sd
        pm.Deterministic("sd", pt.exp(log_sd), dims=("component", "cell"))
        sd2 = pt.exp(2 * log_sd)
        lam = _lambdas([sd2[i] for i in range(len(comps))], data)
        scale = pt.stack([r * x + sd2[-1] for x in lam] + [sd2[-1]])  # E[SS_k] / dof_k
        # log-density of SS_k ~ scale_k χ²_dof (terms without parameters dropped)
        pm.Potential("ss_chi2", pt.sum(-dof / 2 * pt.log(scale) - ss / (2 * scale)))
    return model


def pv_bayes_draws(posterior, data: PVBayesData, *, seed: int = 0) -> dict[str, np.ndarray]:
    """Derived draws, each of shape (chain, draw, cell[, component]).

    Returns
    -------
    dict
        ``var`` (finite-population variances V_k, last axis the components), ``share``
        (V_k / ΣV), ``sd_format`` and ``sd_format_new`` (see the module docstring).
    """
    rng = np.random.default_rng(seed)
    sd2 = np.asarray(posterior["sd"]) ** 2  # chain, draw, component, cell
    parts = [sd2[:, :, i] for i in range(sd2.shape[2])]
    lam, s2 = _lambdas(parts, data), parts[-1] / data.r
    k_total = float(np.prod([len(v) for v in data.levels]))
    var = []
    for k, lk in enumerate(lam):
        q = data.ss[k] / data.r  # Σ y² over the component's contrasts
        with np.errstate(divide="ignore", invalid="ignore"):
            w = lk / (lk + s2)
            v = lk * s2 / (lk + s2)
            nonc = np.where(v > 0, w**2 * q / np.where(v > 0, v, 1.0), 0.0)
        t = v * rng.noncentral_chisquare(data.dof[k], np.maximum(nonc, 0.0))
        var.append(np.where(v > 0, t, w**2 * q) / k_total)
    var.append(parts[-1])
    var = np.stack(var, axis=-1)
    return {
        "var": var,
        "share": var / var.sum(axis=-1, keepdims=True),
        "sd_format": np.sqrt(var[..., :-1].sum(axis=-1)),
        "sd_format_new": np.sqrt(sd2[:, :, :-1, :].sum(axis=2)),
    }


__all__ = ["PVBayesData", "build_pv_bayes_model", "prepare_pv_bayes", "pv_bayes_draws"]
