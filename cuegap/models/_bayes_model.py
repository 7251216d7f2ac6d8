"""The hierarchical binomial-logit model of Favor and Against events: data layout, priors.

Pure statistics: numpy, pandas and PyMC. :func:`prepare_counts` turns the count table into
arrays, :func:`build_model` states the model of :data:`METHODS`, :func:`cell_logits`
recomputes its linear predictor from draws, :func:`prior_predictive` simulates from the
priors. Fitting and the convergence gate are in :mod:`cuegap.models._bayes`.
"""

from __future__ import annotations

import contextlib
import logging
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from cuegap.models._rates import condition_mask

#: Changes whenever the model, its priors or the derived quantities change; stored with
#: every fit so that a stored fit is refitted only when it would differ.
MODEL_VERSION = "cuegap-bayes-binlogit-1"

#: Convergence gate: every fit must pass all three, else it is reported as not converged.
GATE = {"r_hat_max": 1.01, "ess_bulk_min": 400, "divergences_max": 0}

#: Prior parameters (logit units), stated in :data:`METHODS`.
PRIORS = {
    "intercept_mean": -2.0,
    "intercept_sd": 1.0,
    "system_sd_shape": 4.0,
    "system_sd_mean": 0.8,
    "group_population_sd": 0.5,
    "group_system_sd_scale": 0.5,
    "interaction_sd_scale": 0.25,
}

EVENTS = ("favor", "against")
_COUNTS = ["favor", "favor_trials", "against", "against_trials"]
#: Names of the model's parameters (what the stored posterior holds).
PARAMS = (
    "mu",
    "sd_system",
    "d_system",
    "gender_pop",
    "sd_gender",
    "z_gender",
    "race_pop",
    "sd_race",
    "z_race",
    "sd_inter",
    "z_inter",
)

METHODS = f"""\
Hierarchical Bayesian model ({MODEL_VERSION}).

Data. The count table is aggregated to cells: event e (favor, against), condition c,
system s, gender g, race r, with y = events and n = trials, a trial being an (item,
individual) pair eligible for the event (Section 2.3 of the seed paper). Dilemmas, prompt
variants, topics and puzzle solution shapes are summed over; one consequences setting is
analysed. The model is fitted to these counts, never to individual responses.

Likelihood. y[e,c,s,g,r] ~ Binomial(n[e,c,s,g,r], p[e,c,s,g,r]) with
  logit p = mu[e,c] + d_system[e,c,s]
            + gender_pop[e,c,g] + sd_gender[e,c] * z_gender[e,c,s,g]
            + race_pop[e,c,r]   + sd_race[e,c]   * z_race[e,c,s,r]
            (+ sd_inter[e,c] * z_inter[e,c,s,g,r] with the gender x race interaction).
Gender and race are effects of the same individual: a gender x race cell adds both. Each
event and condition has its own parameters, so the model does not pull the two conditions
together and does not shrink the gap towards zero. Systems are partially pooled towards
the population intercept mu; each system's gender and race effects are partially pooled
towards the population effects gender_pop and race_pop.

Priors (logit scale).
  mu[e,c]           ~ Normal({PRIORS["intercept_mean"]}, {PRIORS["intercept_sd"]})
                      (a typical rate of 12 %, 90 % prior interval 2.3 % to 41 %)
  d_system[e,c,:]   ~ ZeroSumNormal(sd_system[e,c]) over systems
  sd_system[e,c]    ~ Gamma(shape {PRIORS["system_sd_shape"]:g}, mean {PRIORS["system_sd_mean"]:g})
                      (90 % interval 0.27 to 1.55; audited systems differ: the seed
                      paper's rates run from 1 % to 35 %. Keeping this sd away from 0
                      avoids a funnel that defeats NUTS when there are few systems.)
  gender_pop[e,c,:], race_pop[e,c,:] ~ ZeroSumNormal({PRIORS["group_population_sd"]}) over groups
  sd_gender, sd_race ~ HalfNormal({PRIORS["group_system_sd_scale"]})
  z_gender[e,c,:,:], z_race[e,c,:,:] ~ ZeroSumNormal(1) over systems and groups
                      (two zero-sum axes: the population effect is the systems' mean)
  sd_inter ~ HalfNormal({PRIORS["interaction_sd_scale"]})
  z_inter[e,c,s,:,:] ~ ZeroSumNormal(1) over gender and race (when the interaction is on)
Zero-sum effects identify intercepts and effects without a reference level: mu is the mean
logit over systems and groups. Together the priors put the median cell rate near 11 %,
90 % of cell rates between about 1 % and 63 %, and a macro gap within about +-55 pp; a
prior predictive simulation in the test suite checks that they are broad but not absurd.

Estimands. A gender (race) group's Favor or Against rate is the trial-weighted mean of the
probabilities of its cells over races (genders): the expected rate over the pairs actually
asked, which the frequentist rate estimates. Net = Favor - Against in pp; the macro Net is
the unweighted mean over the gender and race groups present; Gap = Net_explicit -
Net_implicit; dAgainst = Against_implicit - Against_explicit and dFavor likewise
(dAgainst - dFavor equals the gap).

Sampling and gate. NUTS via nutpie (PyMC's NUTS as the fallback), several chains, seeded.
A fit counts as converged only when the largest r-hat <= {GATE["r_hat_max"]}, the smallest
bulk ESS >= {GATE["ess_bulk_min"]} (over all parameters and every system's macro gap) and
there are no divergent transitions. Otherwise it is refitted once with twice the tuning,
target acceptance 0.95 and, when the ESS fell short, twice the draws; if that fails too,
the fit is reported as not converged, with the reason, and every verdict drawn from it is
inconclusive.
"""


@contextlib.contextmanager
def quiet(progress: bool) -> Iterator[None]:
    """Silence PyMC, PyTensor and nutpie logging and warnings unless ``progress``."""
    if progress:
        yield
        return
    loggers = [logging.getLogger(n) for n in ("pymc", "pytensor", "nutpie")]
    levels = [lg.level for lg in loggers]
    for lg in loggers:
        lg.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        for lg, lv in zip(loggers, levels, strict=True):
            lg.setLevel(lv)


# --------------------------------------------------------------------------------------
# data


def _label(cond: tuple[str, str | None]) -> str:
    return cond[0] if cond[1] is None else f"{cond[0]}:{cond[1]}"


@dataclass
class BayesData:
    """Counts in the model's array layout.

    Attributes
    ----------
    events, trials : ndarray
        Integer arrays of shape (event, condition, system, gender, race).
    conditions : list of (condition, difficulty)
        Explicit first, implicit second, then any extra conditions.
    systems, genders, races : list of str
        Coordinate labels (sorted).
    """

    events: np.ndarray
    trials: np.ndarray
    conditions: list[tuple[str, str | None]]
    systems: list[str]
    genders: list[str]
    races: list[str]

    @property
    def condition_labels(self) -> list[str]:
        """``condition`` or ``condition:difficulty`` per condition."""
        return [_label(c) for c in self.conditions]

    def coords(self) -> dict[str, list[str]]:
        """Coordinates of the model's dimensions."""
        return {
            "event": list(EVENTS),
            "condition": self.condition_labels,
            "system": self.systems,
            "gender": self.genders,
            "race": self.races,
        }


def _check_condition(value: object, name: str) -> tuple[str, str | None]:
    if (
        not isinstance(value, tuple | list)
        or len(value) != 2
        or not isinstance(value[0], str)
        or not (value[1] is None or isinstance(value[1], str))
    ):
        raise TypeError(
            f"{name} must be a (condition, difficulty) pair such as ('puzzled', 'hard') or "
            f"('direct', None), but got {value!r}"
        )
    return (value[0], value[1])


def prepare_counts(
    counts: pd.DataFrame,
    *,
    explicit: tuple[str, str | None] = ("direct", None),
    implicit: tuple[str, str | None] = ("puzzled", "hard"),
    extra_conditions: Sequence[tuple[str, str | None]] = (),
    consequences: bool | None = True,
    exclude_systems: Sequence[str] = (),
    recovered_only: bool = False,
) -> BayesData:
    """Aggregate the count table to the model's (event, condition, system, gender, race) cells.

    Parameters
    ----------
    counts : DataFrame
        The count table of :func:`cuegap.schema.decision_counts` (columns system,
        condition, difficulty, gender, race, favor, favor_trials, against,
        against_trials; consequences and recovered are used when present).
    explicit, implicit : (condition, difficulty)
        The two conditions of the Cue Visibility Gap; difficulty None matches rows
        without one.
    extra_conditions : sequence of (condition, difficulty)
        More conditions to model (e.g. the other puzzle difficulty levels).
    consequences : bool or None
        The consequences setting analysed; None pools both.
    exclude_systems : sequence of str
        Systems left out (e.g. one that abstains on almost everything).
    recovered_only : bool
        Keep only pairs whose puzzle assignment was recovered correctly (rows with
        ``recovered`` False are dropped; rows without a puzzle are kept).

    Returns
    -------
    BayesData
    """
    needed = ["system", "condition", "difficulty", "gender", "race", *_COUNTS]
    missing = [c for c in needed if c not in counts.columns]
    if missing:
        raise ValueError(
            f"counts needs columns {', '.join(missing)}; got {', '.join(map(str, counts.columns))}"
        )
    conds = [_check_condition(explicit, "explicit"), _check_condition(implicit, "implicit")]
    for i, extra in enumerate(extra_conditions):
        conds.append(_check_condition(extra, f"extra_conditions[{i}]"))
    if len(set(conds)) != len(conds):
        raise ValueError(f"conditions must be distinct, but got {[_label(c) for c in conds]}")
    df = counts
    if consequences is not None and "consequences" in df.columns:
        df = df[df["consequences"].astype(bool) == bool(consequences)]
    if exclude_systems:
        df = df[~df["system"].isin(list(exclude_systems))]
    if recovered_only and "recovered" in df.columns:
        df = df[df["recovered"].map(lambda v: v is not False and v != 0)]
    cond_idx = pd.Series(-1, index=df.index)
    for i, cond in enumerate(conds):
        cond_idx[condition_mask(df, cond)] = i
    for i, name in ((0, "explicit"), (1, "implicit")):
        if not (cond_idx == i).any():
            have = sorted(
                {
                    _label((c, None if pd.isna(d) else d))
                    for c, d in df[["condition", "difficulty"]].itertuples(index=False)
                }
            )
            raise ValueError(
                f"{name} condition {_label(conds[i])!r} has no rows in counts "
                f"(consequences={consequences}); conditions present: {', '.join(have) or 'none'}"
            )
    df = df.assign(_c=cond_idx.to_numpy())[cond_idx.to_numpy() >= 0]
    systems = sorted(df["system"].astype(str).unique())
    genders = sorted(df["gender"].astype(str).unique())
    races = sorted(df["race"].astype(str).unique())
    shape = (len(conds), len(systems), len(genders), len(races))
    ci = df["_c"].to_numpy()
    si = pd.Categorical(df["system"].astype(str), categories=systems).codes
    gi = pd.Categorical(df["gender"].astype(str), categories=genders).codes
    ri = pd.Categorical(df["race"].astype(str), categories=races).codes
    flat = np.ravel_multi_index((ci, si, gi, ri), shape)
    events = np.zeros((2, *shape), dtype=np.int64)
    trials = np.zeros((2, *shape), dtype=np.int64)
    size = int(np.prod(shape))
    for e, (ev, tr) in enumerate((("favor", "favor_trials"), ("against", "against_trials"))):
        events[e] = np.bincount(flat, weights=df[ev].to_numpy(float), minlength=size).reshape(shape)
        trials[e] = np.bincount(flat, weights=df[tr].to_numpy(float), minlength=size).reshape(shape)
    if (events > trials).any() or (events < 0).any():
        raise ValueError("counts has events outside [0, trials]; check favor/against columns")
    return BayesData(events, trials, conds, systems, genders, races)


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


def expand_rows(data: BayesData) -> pd.DataFrame:
    """One row per decision (trial) of the counts, as a row-level model would see them.

    Returns
    -------
    DataFrame
        event, condition (label), system, gender, race, ``y`` (1 for an event), and the
        integer codes ``event_idx``, ``condition_idx``, ``system_idx``, ``gender_idx``,
        ``race_idx``.
    """
    shape = data.trials.shape
    n = data.trials.ravel()
    k = data.events.ravel()
    cell = np.repeat(np.arange(n.size), n)
    first = np.repeat(np.cumsum(n) - n, n)
    y = ((np.arange(cell.size) - first) < k[cell]).astype(np.int8)
    codes = np.unravel_index(cell, shape)
    labels = data.coords()
    out = {name: np.asarray(labels[name])[code] for name, code in zip(labels, codes, strict=True)}
    out["y"] = y
    for name, code in zip(labels, codes, strict=True):
        out[f"{name}_idx"] = code
    return pd.DataFrame(out)


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

    from cuegap.models._bayes_post import macro_gap_draws

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
    "prior_predictive",
]
