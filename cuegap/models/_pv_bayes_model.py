r"""The hierarchical variance-components model of the prompt-variance design: data and
model (the fit, gate and tables are in :mod:`cuegap.models._pv_bayes`).

Model
-----
One model per metric. A *cell* g is one (system, category); factor A (e.g. the choice
format, levels a) and factor B (e.g. the JSON field order, levels b) are crossed; run r of
combination (a, b) in cell g has score::

    y[g,a,b,r] = μ[g] + α[g,a] + β[g,b] + γ[g,a,b] + ε[g,a,b,r],   ε ~ Normal(0, σ_E[g])
    α[g,·] = σ_A[g]·ZeroSumNormal(1) over a,   β[g,·] = σ_B[g]·ZeroSumNormal(1) over b,
    γ[g,·,·] = σ_AB[g]·ZeroSumNormal(1) over a and b (rows and columns sum to zero)
    log σ_k[g] = m_k + τ_k·z_k[g],  z ~ Normal(0, 1),  m_k ~ Normal(log 0.05, 1.5),
    τ_k ~ HalfNormal(0.5),  μ[g] ~ Normal(0, 1)

for the components k ∈ {A, B, AB, E}: every cell has its own SDs, partially pooled (on
the log scale) across all systems and categories of the metric, so that a factor with two
levels (one contrast per cell) borrows strength from the other cells. σ_k is the SD of
the effects of a level drawn from the same population as the store's (the *superpopulation*
SD; ZeroSumNormal(σ) is exactly the law of centred iid Normal(0, σ) effects). Everything
is non-centred. With one factor, B and AB are left out.

The likelihood uses the sufficient statistics of the normal model: per (g, a, b) the mean
ȳ of its n runs, ȳ ~ Normal(θ, σ_E/√n), and per cell the within-combination sum of squares
SS_g with df_g = Σ (n − 1) degrees of freedom, which adds −df_g·log σ_E − SS_g / (2σ_E²)
(exact; the model's size does not grow with the replicates).

Derived per draw (finite-population variances over the store's levels):
V_A = mean_a α², V_B = mean_b β², V_AB = mean_ab γ², V_E = σ_E². Their sum is the variance
of one run's score drawn uniformly over the store's combinations and the decoding noise,
so ``share_k = V_k / ΣV`` is the share of that variance due to component k.
``sd_format = √(V_A + V_B + V_AB)`` is the SD of the true score across the store's
combinations (prompt construction alone, decoding noise taken out; the quantity
:func:`cuegap.models.pv_format_spread` estimates by moments) and ``sd_format_new =
√(σ_A² + σ_B² + σ_AB²)`` the SD of the effect of a new combination from the same
population.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

PV_BAYES_PRIORS = {"log_sd_mean_mu": math.log(0.05), "log_sd_mean_sd": 1.5,
                   "log_sd_tau_sd": 0.5, "mu_sd": 1.0}  # fmt: skip
COMPONENTS_2 = ("A", "B", "AB", "E")
COMPONENTS_1 = ("A", "E")


@dataclass(frozen=True)
class PVBayesData:
    """Sufficient statistics of one metric's runs.

    Attributes
    ----------
    cells : DataFrame
        One row per cell with the key columns (e.g. system, category).
    levels : list of list of str
        The levels of each factor (one or two factors).
    g, a, b : ndarray of int
        Per observed combination: its cell, level of A and level of B (zeros without B).
    mean, n : ndarray
        Replicate mean and count per observed combination.
    ss, df : ndarray
        Per cell: within-combination sum of squares and its degrees of freedom.
    """

    cells: pd.DataFrame
    factors: list[str]
    levels: list[list[str]]
    g: np.ndarray
    a: np.ndarray
    b: np.ndarray
    mean: np.ndarray
    n: np.ndarray
    ss: np.ndarray
    df: np.ndarray

    @property
    def components(self) -> tuple[str, ...]:
        """``("A", "B", "AB", "E")`` with two factors, ``("A", "E")`` with one."""
        return COMPONENTS_2 if len(self.factors) == 2 else COMPONENTS_1

    @property
    def shape_key(self) -> tuple[int, ...]:
        """What a compiled model depends on: combinations, cells and levels."""
        return (len(self.mean), len(self.cells), *(len(v) for v in self.levels))


def prepare_pv_bayes(
    scores: pd.DataFrame, *, keys: Sequence[str], factors: Sequence[str], value: str = "score"
) -> PVBayesData:
    """Sufficient statistics of one metric's per-run scores (NaN scores dropped).

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
        With no scored run, or fewer than two levels of a factor.
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
    grp = df.groupby([*keys, *factors], sort=True, observed=True)[value]
    stats = grp.agg(mean="mean", n="count", var=lambda x: float(x.var(ddof=0))).reset_index()
    cells = stats[keys].drop_duplicates().reset_index(drop=True)
    g = stats.groupby(keys, sort=True, observed=True).ngroup().to_numpy()
    codes = [
        pd.Categorical(stats[f].astype(str), categories=lv).codes
        for f, lv in zip(factors, levels, strict=True)
    ]
    ss_obs = stats["var"].to_numpy(float) * stats["n"].to_numpy(float)
    n = stats["n"].to_numpy(float)
    ss = np.bincount(g, weights=ss_obs, minlength=len(cells))
    dof = np.bincount(g, weights=n - 1, minlength=len(cells))
    return PVBayesData(
        cells=cells,
        factors=factors,
        levels=levels,
        g=g.astype("int64"),
        a=np.asarray(codes[0], dtype="int64"),
        b=np.asarray(codes[1] if len(codes) == 2 else np.zeros(len(stats)), dtype="int64"),
        mean=stats["mean"].to_numpy(float),
        n=n,
        ss=ss,
        df=dof,
    )


def build_pv_bayes_model(data: PVBayesData):
    """The PyMC model of the module docstring (data in ``pm.Data`` containers: ``mean``,
    ``n``, ``ss``, ``dof``, ``g``, ``a``, ``b``, so that a compiled model can be reused)."""
    import pymc as pm
    import pytensor.tensor as pt

    comps = data.components
    coords = {"component": list(comps), "cell": np.arange(len(data.cells)),
              "level_a": data.levels[0], "obs": np.arange(len(data.mean))}  # fmt: skip
    if len(comps) == 4:
        coords["level_b"] = data.levels[1]
    p = PV_BAYES_PRIORS
    with pm.Model(coords=coords) as model:
        mean = pm.Data("mean", data.mean, dims="obs")
        n = pm.Data("n", data.n, dims="obs")
        ss = pm.Data("ss", data.ss, dims="cell")
        dof = pm.Data("dof", data.df, dims="cell")
        g = pm.Data("g", data.g, dims="obs")
        a = pm.Data("a", data.a, dims="obs")
        b = pm.Data("b", data.b, dims="obs")
        m = pm.Normal("log_sd_mean", p["log_sd_mean_mu"], p["log_sd_mean_sd"], dims="component")
        tau = pm.HalfNormal("log_sd_tau", p["log_sd_tau_sd"], dims="component")
        z_sd = pm.Normal("z_sd", 0.0, 1.0, dims=("component", "cell"))
        sd = pm.Deterministic("sd", pt.exp(m[:, None] + tau[:, None] * z_sd),
                              dims=("component", "cell"))  # fmt: skip
        mu = pm.Normal("mu", 0.0, p["mu_sd"], dims="cell")
        alpha = pm.Deterministic(
            "alpha", sd[0][:, None] * pm.ZeroSumNormal("z_a", dims=("cell", "level_a")),
            dims=("cell", "level_a"),
        )  # fmt: skip
        theta = mu[g] + alpha[g, a]
        if len(comps) == 4:
            beta = pm.Deterministic(
                "beta", sd[1][:, None] * pm.ZeroSumNormal("z_b", dims=("cell", "level_b")),
                dims=("cell", "level_b"),
            )  # fmt: skip
            z_ab = pm.ZeroSumNormal("z_ab", dims=("cell", "level_a", "level_b"),
                                    n_zerosum_axes=2)  # fmt: skip
            gamma = pm.Deterministic("gamma", sd[2][:, None, None] * z_ab,
                                     dims=("cell", "level_a", "level_b"))  # fmt: skip
            theta = theta + beta[g, b] + gamma[g, a, b]
        sd_e = sd[-1]
        pm.Normal("ybar", mu=theta, sigma=sd_e[g] / pt.sqrt(n), observed=mean, dims="obs")
        pm.Potential("within", pt.sum(-dof * pt.log(sd_e) - ss / (2 * sd_e**2)))
    return model


def pv_bayes_draws(posterior, data: PVBayesData) -> dict[str, np.ndarray]:
    """Derived draws, each of shape (chain, draw, cell[, component]).

    Returns
    -------
    dict
        ``var`` (finite-population variances V_k, last axis the components), ``share``
        (V_k / ΣV), ``sd_format`` and ``sd_format_new`` (see the module docstring).
    """
    sd = np.asarray(posterior["sd"])  # chain, draw, component, cell
    parts = [np.mean(np.asarray(posterior["alpha"]) ** 2, axis=-1)]
    if len(data.components) == 4:
        parts.append(np.mean(np.asarray(posterior["beta"]) ** 2, axis=-1))
        parts.append(np.mean(np.asarray(posterior["gamma"]) ** 2, axis=(-2, -1)))
    parts.append(sd[:, :, -1, :] ** 2)
    var = np.stack(parts, axis=-1)
    total = var.sum(axis=-1, keepdims=True)
    return {
        "var": var,
        "share": var / total,
        "sd_format": np.sqrt(var[..., :-1].sum(axis=-1)),
        "sd_format_new": np.sqrt((sd[:, :, :-1, :] ** 2).sum(axis=2)),
    }


__all__ = ["PVBayesData", "build_pv_bayes_model", "prepare_pv_bayes", "pv_bayes_draws"]
