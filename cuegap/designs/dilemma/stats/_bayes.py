"""Fitting the hierarchical Bayesian model of the moral-dilemma design.

:func:`fit_bayes` aggregates the count table, samples the model of
:data:`cuegap.designs.dilemma.stats.METHODS` with nutpie (PyMC's NUTS as the fallback), checks
r-hat, bulk
ESS and divergences, retries once, and returns a :class:`BayesFit`. Posterior summaries
are in :mod:`cuegap.designs.dilemma.stats._bayes_tables`; the samplers, the gate and serialisation
in
:mod:`cuegap.designs.dilemma.stats._bayes_sampling`.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import pandas as pd

from cuegap.designs.dilemma.stats._bayes_model import (
    GATE,
    MODEL_VERSION,
    PARAMS,
    PRIORS,
    BayesData,
    prepare_counts,
)
from cuegap.designs.dilemma.stats._bayes_post import macro_gap_draws
from cuegap.designs.dilemma.stats._bayes_sampling import (
    _sample_jax,
    _sample_nutpie,
    _sample_pymc,
    clear_compiled_cache,
)
from cuegap.models import (
    check_sampler,
    chosen_sampler,
    idata_from_bytes,
    idata_to_bytes,
    run_gated,
)

if TYPE_CHECKING:
    import arviz as az

logger = logging.getLogger(__name__)


# --------------------------------------------------------------------------------------
# fit


@dataclass
class BayesFit:
    """A hierarchical Bayesian fit and whether it may be used for verdicts.

    Attributes
    ----------
    idata : arviz.InferenceData
        Posterior draws of the parameters, sample stats, and the counts fitted
        (``constant_data``: ``trials``, ``events``); ``idata.attrs`` hold the settings,
        the convergence verdict and the diagnostics as JSON.
    converged : bool
        Whether the fit passed the gate (r-hat, bulk ESS, divergences; see :data:`GATE`).
    message : str
        "ok", or why the fit did not converge.
    diagnostics : DataFrame
        One row per attempt: attempt, sampler, draws, tune, chains, target_accept,
        r_hat_max, ess_bulk_min, ess_tail_min, divergences, compile_seconds, seconds,
        passed, reason.
    settings : dict
        Everything that determines the fit (with :data:`MODEL_VERSION`); equal settings
        and equal counts give the same draws.
    """

    idata: az.InferenceData
    converged: bool
    message: str
    diagnostics: pd.DataFrame
    settings: dict = field(default_factory=dict)

    @property
    def data(self) -> BayesData:
        """The counts that were fitted, in array layout."""
        return _data_from_idata(self.idata)

    @classmethod
    def from_idata(cls, idata: az.InferenceData) -> BayesFit:
        """Rebuild a fit from an InferenceData written by :func:`fit_bayes` (e.g. after
        :func:`idata_from_bytes`)."""
        attrs = idata.attrs if hasattr(idata, "attrs") else {}
        if "cuegap_settings" not in attrs:
            raise ValueError(
                "idata was not written by cuegap.designs.dilemma.stats.fit_bayes (no settings)"
            )
        return cls(
            idata=idata,
            converged=bool(json.loads(attrs["cuegap_converged"])),
            message=str(attrs["cuegap_message"]),
            diagnostics=pd.DataFrame(json.loads(attrs["cuegap_diagnostics"])),
            settings=json.loads(attrs["cuegap_settings"]),
        )


def _data_from_idata(idata: az.InferenceData) -> BayesData:
    cd = idata.constant_data
    settings = json.loads(idata.attrs["cuegap_settings"])
    conds = [tuple(c) for c in settings["conditions"]]
    return BayesData(
        events=np.asarray(cd["events"]).astype(np.int64),
        trials=np.asarray(cd["trials"]).astype(np.int64),
        conditions=conds,  # type: ignore[arg-type]
        systems=[str(s) for s in cd["system"].values],
        genders=[str(s) for s in cd["gender"].values],
        races=[str(s) for s in cd["race"].values],
    )


def _tidy_idata(raw: az.InferenceData, data: BayesData, settings: dict) -> az.InferenceData:
    """Posterior of the free parameters and divergences, with the coordinates of ``data``."""
    import arviz as az
    import xarray as xr

    coords = data.coords()
    post = raw.posterior
    keep = [v for v in post.data_vars if v in PARAMS]
    post = post[keep]
    post = post.assign_coords({k: v for k, v in coords.items() if k in post.dims})
    post = post.assign_coords(
        chain=np.arange(post.sizes["chain"]), draw=np.arange(post.sizes["draw"])
    )
    stats = raw.sample_stats
    div = np.asarray(stats["diverging"]).astype(bool)
    stats_out = xr.Dataset(
        {"diverging": (("chain", "draw"), div)},
        coords={"chain": post["chain"].values, "draw": post["draw"].values},
    )
    for name in ("step_size", "n_steps", "tree_depth", "lp", "energy"):
        if name in stats.data_vars and stats[name].dims == ("chain", "draw"):
            stats_out[name] = (("chain", "draw"), np.asarray(stats[name]))
    dims5 = ("event", "condition", "system", "gender", "race")
    const = xr.Dataset(
        {"trials": (dims5, data.trials), "events": (dims5, data.events)}, coords=coords
    )
    idata = az.InferenceData(posterior=post, sample_stats=stats_out, constant_data=const)
    idata.attrs["cuegap_settings"] = json.dumps(settings, sort_keys=True)
    return idata


def _gate_input(idata: az.InferenceData, data: BayesData) -> tuple[Any, int]:
    """What the gate checks: every parameter and the macro gaps; and the divergences."""
    import xarray as xr

    post = idata.posterior
    gaps = macro_gap_draws(post, data)  # (chain, draw, system)
    ds = post.assign(macro_gap=xr.DataArray(gaps, dims=("chain", "draw", "system")))
    return ds, int(np.asarray(idata.sample_stats["diverging"]).sum())


#: The columns of a dilemma fit's diagnostics, in their stored order.
DIAGNOSTICS = (
    "attempt", "sampler", "draws", "tune", "chains", "seed", "target_accept", "r_hat_max",
    "ess_bulk_min", "ess_tail_min", "divergences", "compile_seconds", "seconds", "passed",
    "reason",
)  # fmt: skip


def fit_bayes(
    counts: pd.DataFrame,
    *,
    explicit: tuple[str, str | None] = ("direct", None),
    implicit: tuple[str, str | None] = ("puzzled", "hard"),
    extra_conditions: Sequence[tuple[str, str | None]] = (),
    consequences: bool | None = True,
    draws: int = 1000,
    tune: int = 1000,
    chains: int = 4,
    seed: int = 2026,
    sampler: Literal["nutpie", "jax", "pymc"] = "nutpie",
    progress: bool = False,
    exclude_systems: Sequence[str] = (),
    interaction: bool = False,
    recovered_only: bool = False,
    target_accept: float = 0.8,
    retry: bool = True,
    min_ess: float = GATE["ess_bulk_min"],
    max_rhat: float = GATE["r_hat_max"],
) -> BayesFit:
    """Fit the hierarchical binomial-logit model to a count table, with a convergence gate.

    Parameters
    ----------
    counts : DataFrame
        The count table of :func:`cuegap.schema.decision_counts` (any extra columns are
        summed over).
    explicit, implicit : (condition, difficulty)
        The conditions whose nets the Cue Visibility Gap compares.
    extra_conditions : sequence of (condition, difficulty)
        Further conditions to model alongside (e.g. ``("puzzled", "easy")``); their rates
        and gaps against ``explicit`` appear in :func:`bayes_tables`.
    consequences : bool or None
        The consequences setting analysed (None pools both).
    draws, tune, chains : int
        NUTS draws and tuning steps per chain, number of chains.
    seed : int
        Sampler seed; equal settings and counts give equal draws.
    sampler : {"nutpie", "jax", "pymc"}
        nutpie (default; falls back to PyMC's NUTS when nutpie fails), blackjax's NUTS
        on JAX (``cuegap[jax]``; nutpie when not installed or failing) or PyMC's NUTS.
        ``CUEGAP_SAMPLER`` overrides it (:func:`cuegap.models.chosen_sampler`).
    progress : bool
        Show the sampler's progress bar.
    exclude_systems : sequence of str
        Systems left out of the fit.
    interaction : bool
        Add a gender x race interaction per system. Not validated and not offered by the
        CLI: on 3 simulated systems with 150 pairs per cell, a planted +30 pp rise of one
        cell's gap came out as +10 pp (90% interval -4 to 24) under the default
        interaction prior, and 2 x 1000 draws missed the convergence gate.
    recovered_only : bool
        Keep only pairs whose puzzle was recovered correctly.
    target_accept : float
        NUTS target acceptance rate of the first attempt (the retry uses
        ``max(0.95, target_accept)``).
    retry : bool
        Refit once when the gate fails: twice the tuning, target acceptance
        ``max(0.95, target_accept)``, and twice the draws when the bulk ESS fell short.
    min_ess, max_rhat : float
        The gate's thresholds (defaults from :data:`GATE`; lower them only in tests).

    Returns
    -------
    BayesFit
        ``converged`` False (with the reason in ``message``) when the gate failed twice.

    Notes
    -----
    The model and priors are stated in :data:`METHODS`.
    """
    check_sampler(sampler)
    for name, value, low in (("draws", draws, 1), ("tune", tune, 0), ("chains", chains, 1)):
        if not isinstance(value, int | np.integer) or value < low:
            raise ValueError(f"{name} must be an integer >= {low}, but got {value!r}")
    if not 0 < target_accept < 1:
        raise ValueError(f"target_accept must be in (0, 1), but got {target_accept}")
    data = prepare_counts(
        counts,
        explicit=explicit,
        implicit=implicit,
        extra_conditions=extra_conditions,
        consequences=consequences,
        exclude_systems=exclude_systems,
        recovered_only=recovered_only,
    )
    settings = {
        "model_version": MODEL_VERSION,
        "conditions": [list(c) for c in data.conditions],
        "explicit": list(data.conditions[0]),
        "implicit": list(data.conditions[1]),
        "consequences": consequences,
        "exclude_systems": sorted(exclude_systems),
        "interaction": bool(interaction),
        "recovered_only": bool(recovered_only),
        "draws": int(draws),
        "tune": int(tune),
        "chains": int(chains),
        "seed": int(seed),
        "sampler": sampler,
        "target_accept": float(target_accept),
        "retry": bool(retry),
        "gate": {
            "r_hat_max": float(max_rhat),
            "ess_bulk_min": float(min_ess),
            "divergences_max": 0,
        },
        "priors": dict(PRIORS),
    }

    def sample(kw: dict[str, Any]) -> tuple[az.InferenceData, str, str, dict[str, Any]]:
        used, note = chosen_sampler(sampler), ""
        if used == "jax":  # None when the JAX program failed: nutpie then
            raw, compile_s, note = _sample_jax(data, interaction, progress=progress, **kw)
            used = "jax" if raw is not None else "nutpie"
        if used == "nutpie":
            try:
                raw, compile_s = _sample_nutpie(data, interaction, progress=progress, **kw)
            except Exception as exc:  # any nutpie failure falls back to PyMC
                logger.warning("nutpie failed (%s); falling back to PyMC's NUTS", exc)
                why = f"nutpie failed ({type(exc).__name__}: {exc}); used PyMC's NUTS"
                note += "; " * bool(note) + why
                used = "pymc"
                raw, compile_s = _sample_pymc(data, interaction, progress=progress, **kw)
        elif used == "pymc":
            raw, compile_s = _sample_pymc(data, interaction, progress=progress, **kw)
        return _tidy_idata(raw, data, settings), used, note, {"compile_seconds": compile_s}

    run = run_gated(
        sample, lambda idata: _gate_input(idata, data), draws=draws, tune=tune, chains=chains,
        seed=seed, target_accept=target_accept, retry=retry, min_ess=min_ess,
        max_rhat=max_rhat,
    )  # fmt: skip
    idata, converged, message, rows = run.idata, run.converged, run.message, run.rows
    diagnostics = pd.DataFrame(rows)[list(DIAGNOSTICS)]
    idata.attrs["cuegap_converged"] = json.dumps(converged)
    idata.attrs["cuegap_message"] = message
    idata.attrs["cuegap_diagnostics"] = diagnostics.to_json(orient="records")
    return BayesFit(idata, converged, message, diagnostics, settings)


__all__ = [
    "BayesFit",
    "clear_compiled_cache",
    "fit_bayes",
    "idata_from_bytes",
    "idata_to_bytes",
]
