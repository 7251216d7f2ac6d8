r"""Hierarchical logistic model of a shift (conversation design; beyond seed 003).

Every transition with prior disagreement is a Bernoulli trial "the agent took its peer's
previous opinion"; aggregated, each cell is a binomial. Cells are agent a (iden / base) ×
system s × benchmark b × condition k × persona p, where a condition k is one
(demographics d, instantiation i, reveal c) of the identity agent (categories and
questions are pooled, as in λ). With K conditions::

    shift[a,s,b,k,p] ~ Binomial(disagree[a,s,b,k,p], expit(η[a,s,b,k,p]))
    η = α[a,s,b] + μ[a,k] + θ[a,s,k] + ω[a,s,b,k] + π[a,s,b,p]

* α ~ Normal(−1, 1.5): each system and benchmark its own level;
* μ ~ ZeroSumNormal(1) over conditions: the condition effects (demographics ×
  instantiation × reveal and all their interactions) pooled across systems and
  benchmarks;
* θ ~ ZeroSumNormal(0.5) over systems and conditions: a system's departure from the
  pooled effects, shrunk towards them (μ is the systems' mean);
* ω ~ ZeroSumNormal(0.25) over benchmarks and conditions: a benchmark's departure within
  a system, shrunk harder (seed 003's premise is that behaviour carries across
  benchmarks);
* π ~ ZeroSumNormal(σ_pers), σ_pers ~ HalfNormal(0.5): persona offsets, centred (each
  rests on thousands of transitions).

θ and ω have fixed scales, not learned ones: with learned scales (σ_sys·θ, σ_bench·ω,
non-centred) the scales mixed slowly on planted audits (bulk ESS ≈ 200-300 of 2,000
draws for σ_sys and σ_bench, a failed gate), as effects are sparse (most conditions of
most systems have none). Without the zero sum over systems, μ and the systems' mean θ
trade off and mix slowly too.

Derived per draw: λ[a,s,b,d,i,c] = mean over personas of expit(η) (persona "[varied]",
each persona weighing the same), and from λ every contrast of
:func:`cuegap.designs.conversation.stats.conv_contrasts` with the same definitions.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from cuegap.designs.conversation.stats._contrasts import CONTRASTS
from cuegap.designs.conversation.stats._frame import (
    AI,
    ANONYMOUS,
    CELL,
    DEFAULT_PAIRS,
    HUMAN,
    NA,
    NULL,
    REVEALED,
    check_counts,
)

AGENTS = ("iden", "base")
REVEALS = (REVEALED, ANONYMOUS)
CONV_PRIORS = {
    "alpha_mean": -1.0,
    "alpha_sd": 1.5,
    "mu_sd": 1.0,
    "system_sd": 0.5,
    "benchmark_sd": 0.25,
    "sigma_scale": 0.5,
}


@dataclass(frozen=True)
class ConvBayesData:
    """Counts as arrays (agent, system, benchmark, condition, persona)."""

    systems: list[str]
    benchmarks: list[str]
    demographics: list[str]
    instantiations: list[str]
    personas: list[str]
    trials: np.ndarray
    shifts: np.ndarray

    @property
    def conditions(self) -> pd.MultiIndex:
        return pd.MultiIndex.from_product(
            [self.demographics, self.instantiations, list(REVEALS)],
            names=["demographics", "instantiation", "reveal"],
        )


def prepare_conv_counts(counts: pd.DataFrame) -> ConvBayesData:
    """The count frame as arrays; reveal conditions other than revealed / anonymous are
    dropped, absent cells get zero trials."""
    c = check_counts(counts, keys=list(CELL))
    c = c[c["reveal"].isin(REVEALS)]
    if c.empty:
        raise ValueError("counts has no revealed or anonymous cells to model")
    levels = {
        k: sorted(set(c[k]))
        for k in ("system", "benchmark", "demographics", "instantiation", "persona")
    }
    levels["reveal"] = list(REVEALS)
    order = ["system", "benchmark", "demographics", "instantiation", "reveal", "persona"]
    g = c.groupby(order, observed=True)[["iden_disagree", "iden_shift", "base_disagree",
                                         "base_shift"]].sum()  # fmt: skip
    full = pd.MultiIndex.from_product([levels[k] for k in order], names=order)
    g = g.reindex(full, fill_value=0)
    s, b, d, i, r, p = (len(levels[k]) for k in order)
    shape = (s, b, d * i * r, p)

    def arr(col: str) -> np.ndarray:
        return g[col].to_numpy(np.int64).reshape(shape)

    return ConvBayesData(
        systems=levels["system"],
        benchmarks=levels["benchmark"],
        demographics=levels["demographics"],
        instantiations=levels["instantiation"],
        personas=levels["persona"],
        trials=np.stack([arr("iden_disagree"), arr("base_disagree")]),
        shifts=np.stack([arr("iden_shift"), arr("base_shift")]),
    )


def build_conv_model(data: ConvBayesData) -> Any:
    """The PyMC model (module docstring)."""
    import pymc as pm

    coords = {
        "agent": list(AGENTS),
        "system": data.systems,
        "benchmark": data.benchmarks,
        "condition": ["/".join(k) for k in data.conditions],
        "persona": data.personas,
    }
    pr = CONV_PRIORS
    with pm.Model(coords=coords) as model:
        alpha = pm.Normal("alpha", pr["alpha_mean"], pr["alpha_sd"],
                          dims=("agent", "system", "benchmark"))  # fmt: skip
        mu = pm.ZeroSumNormal("mu", sigma=pr["mu_sd"], dims=("agent", "condition"))
        sig = {"pers": pm.HalfNormal("sigma_pers", pr["sigma_scale"], dims="agent")}
        theta = pm.ZeroSumNormal(
            "theta", sigma=pr["system_sd"], dims=("agent", "system", "condition"),
            n_zerosum_axes=2,
        )  # fmt: skip
        omega = pm.ZeroSumNormal(
            "omega",
            sigma=pr["benchmark_sd"],
            dims=("agent", "system", "benchmark", "condition"),
            n_zerosum_axes=2,
        )
        # centred: every persona offset rests on thousands of transitions
        pi = pm.ZeroSumNormal(
            "pi",
            sigma=sig["pers"][:, None, None, None],
            dims=("agent", "system", "benchmark", "persona"),
        )
        eta = (
            alpha[:, :, :, None, None]
            + mu[:, None, None, :, None]
            + theta[:, :, None, :, None]
            + omega[..., None]
            + pi[:, :, :, None, :]
        )
        # counts of the non-empty cells as pm.Data (not constants), with their flat index:
        # a compiled sampler program serves new counts with as many non-empty cells
        ok = data.trials > 0
        cell = pm.Data("cell", np.flatnonzero(ok).astype(np.int64))
        trials = pm.Data("trials", data.trials[ok].astype(np.int64))
        shifts = pm.Data("shifts_observed", data.shifts[ok].astype(np.int64))
        pm.Binomial("shifts", n=trials, logit_p=eta.flatten()[cell], observed=shifts)
    return model


def conv_lambda_draws(posterior: Any, data: ConvBayesData) -> np.ndarray:
    """λ draws, shape (chain, draw, agent, system, benchmark, demographics,
    instantiation, reveal): expit(η) averaged over personas."""
    from scipy.special import expit

    def v(name: str) -> np.ndarray:
        return np.asarray(posterior[name])

    eta = (
        v("alpha")[..., None, None]
        + v("mu")[:, :, :, None, None, :, None]
        + v("theta")[:, :, :, :, None, :, None]
        + v("omega")[..., None]
        + v("pi")[:, :, :, :, :, None, :]
    )
    lam = expit(eta).mean(axis=-1)
    ch, dr, a, s, b, _ = lam.shape
    return lam.reshape(ch, dr, a, s, b, len(data.demographics), len(data.instantiations), 2)


def conv_contrast_draws(
    lam: np.ndarray, data: ConvBayesData, *, pairs=DEFAULT_PAIRS
) -> tuple[pd.DataFrame, np.ndarray]:
    """Contrast draws from λ draws, with the definitions of :func:`conv_contrasts`.

    Returns
    -------
    (conditions, draws)
        ``conditions``: one row per contrast and (system, benchmark, demographic,
        reference, instantiation); ``draws``: shape (chain, draw, len(conditions)).
        A system is contrasted only on the benchmarks it has transitions on: the model
        would fill the others in from the pooled levels, which is a prediction, not a
        finding about that system (so "on every benchmark" means every benchmark it ran).
    """
    dem = {d: k for k, d in enumerate(data.demographics)}
    ins = {x: k for k, x in enumerate(data.instantiations)}
    rev, anon = 0, 1
    iden, base = lam[:, :, 0, ..., anon], lam[:, :, 1]
    drc = base[..., rev] - base[..., anon]  # (ch, dr, s, b, d, i)
    levels = [d for d in data.demographics if d != NULL]
    nulls = [(d, NULL) for d in levels] if NULL in dem else []
    pairs = [(a, b) for a, b in pairs if a in dem and b in dem]
    blocks: list[tuple[str, str, str, str, np.ndarray]] = []
    for name, src, todo in (("demo_iden_null", iden, nulls), ("demo_iden_pair", iden, pairs),
                            ("demo_rc_base_pair", drc, pairs),
                            ("demo_rc_base_null", drc, nulls)):  # fmt: skip
        for a, b in todo:
            for i, k in ins.items():
                blocks.append((name, a, b, i, src[..., dem[a], k] - src[..., dem[b], k]))
    if HUMAN in ins and AI in ins:
        for d in levels:
            est = drc[..., dem[d], ins[HUMAN]] - drc[..., dem[d], ins[AI]]
            blocks.append(("inst_rc_base", d, NA, f"{HUMAN}-{AI}", est))
    tested = data.trials.sum(axis=(0, 3, 4)) > 0  # (system, benchmark)
    rows, arrays = [], []
    for name, a, b, i, est in blocks:  # est: (ch, dr, s, b)
        for si, s in enumerate(data.systems):
            for bi, bench in enumerate(data.benchmarks):
                if not tested[si, bi]:
                    continue
                rows.append((name, s, bench, a, b, i))
                arrays.append(est[:, :, si, bi])
    cols = ["contrast", "system", "benchmark", "demographic", "reference", "instantiation"]
    cond = pd.DataFrame(rows, columns=cols)
    order = {c: k for k, c in enumerate(CONTRASTS)}
    cond["_o"] = cond["contrast"].map(order)
    idx = cond.sort_values(["_o", *cols[1:]], kind="stable").index.to_numpy()
    draws = np.stack(arrays, axis=-1)[..., idx]
    return cond.loc[idx].drop(columns="_o").reset_index(drop=True), draws
