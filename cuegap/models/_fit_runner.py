"""One runner for every design's Bayesian fit: NUTS with nutpie (PyMC's as the fallback)
or, when chosen, blackjax's NUTS on JAX; the convergence gate, one retry with more tuning,
and the attempt log.

Each design gives what differs: how to build (or compile) its model, which draws the gate
looks at, and the columns of its diagnostics. The runner does the rest the same way for
all four designs, so a fit's settings, retry policy and gate mean the same everywhere:

* attempt 1: the given draws, tuning, seed and target acceptance;
* attempt 2 (``retry`` and the gate missed): tuning max(2 · tune, tune + 500), seed + 1,
  target acceptance max(0.95, target_accept), and twice the draws when the bulk ESS was
  what fell short (``more_draws``);
* the gate (:func:`cuegap.models._sampling.gate_summary`): r̂ ≤ ``max_rhat``, bulk
  ESS ≥ ``min_ess``, no divergent transitions.

Which sampler a fit uses is :func:`chosen_sampler`: the ``CUEGAP_SAMPLER`` environment
variable when set, else the fit's ``sampler`` (default nutpie). ``jax`` needs the optional
extra ``cuegap[jax]``; without it, or when the JAX program fails, the fit samples with
nutpie and its diagnostics say so.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import pandas as pd

from cuegap.models._nutpie_cache import compiled_nutpie
from cuegap.models._sampling import gate_summary, quiet

logger = logging.getLogger(__name__)

__all__ = [
    "SAMPLERS",
    "GatedRun",
    "check_sampler",
    "chosen_sampler",
    "not_converged",
    "run_gated",
    "sample_nuts",
]

#: The samplers a fit can name: nutpie (Numba; the default), blackjax's NUTS on JAX (the
#: optional extra ``cuegap[jax]``), PyMC's own NUTS.
SAMPLERS = ("nutpie", "jax", "pymc")

#: The gate's columns in an attempt's diagnostics row.
GATE_COLUMNS = ("r_hat_max", "ess_bulk_min", "ess_tail_min", "divergences", "passed")


@dataclass
class GatedRun:
    """The last attempt's posterior, whether it passed the gate, why not, and one
    diagnostics row per attempt."""

    idata: Any
    converged: bool
    message: str
    rows: list[dict[str, Any]]


def check_sampler(sampler: str) -> None:
    """Raise ValueError unless ``sampler`` is one of :data:`SAMPLERS`."""
    if sampler not in SAMPLERS:
        raise ValueError(f"sampler must be one of {', '.join(SAMPLERS)}, but got {sampler!r}")


def chosen_sampler(requested: str) -> str:
    """The sampler a fit uses: ``CUEGAP_SAMPLER`` when set, else ``requested``.

    Parameters
    ----------
    requested : {"nutpie", "jax", "pymc"}
        The fit's ``sampler`` setting.

    Returns
    -------
    str
        One of :data:`SAMPLERS`; ``"jax"`` becomes ``"nutpie"`` (with a logged warning)
        when jax or blackjax is not installed.

    Raises
    ------
    ValueError
        When ``CUEGAP_SAMPLER`` or ``requested`` is not one of :data:`SAMPLERS`.
    """
    from cuegap.models._jax_nuts import jax_available

    check_sampler(requested)
    env = os.environ.get("CUEGAP_SAMPLER", "").strip().lower()
    if env and env not in SAMPLERS:
        raise ValueError(f"CUEGAP_SAMPLER must be one of {', '.join(SAMPLERS)}, but got {env!r}")
    choice = env or requested
    if choice == "jax" and not jax_available():
        logger.warning("the jax sampler needs jax and blackjax (cuegap[jax]); using nutpie")
        return "nutpie"
    return choice


def not_converged(n_attempts: int, reason: str, min_ess: float, max_rhat: float) -> str:
    """The message of a fit that missed the gate."""
    return (
        f"not converged after {n_attempts} attempt(s): {reason} "
        f"(gate: r-hat <= {max_rhat}, bulk ESS >= {min_ess:g}, no divergences)"
    )


def sample_nuts(
    build: Callable[[], Any],
    sampler: str,
    *,
    compiled: Callable[[], Any] | None = None,
    **kw: Any,
) -> tuple[Any, str, str]:
    """Sample a PyMC model with the chosen sampler, falling back when it fails.

    Parameters
    ----------
    build : callable
        Returns the PyMC model (called at most twice: jax, then the fallback).
    sampler : {"nutpie", "jax", "pymc"}
        Resolved by :func:`chosen_sampler`; jax falls back to nutpie, nutpie to PyMC's NUTS.
    compiled : callable, optional
        Returns the nutpie-compiled model (a cached one with its data set); default
        :func:`cuegap.models._nutpie_cache.compiled_nutpie` of ``build()``'s model, which
        compiles a structure once per process.
    **kw
        ``draws``, ``tune``, ``chains``, ``seed``, ``target_accept``, ``progress``.

    Returns
    -------
    (InferenceData, str, str)
        The draws, the sampler used and a note when a sampler failed.
    """
    import pymc as pm

    sampler, note = chosen_sampler(sampler), ""
    if sampler == "jax":
        from cuegap.models._jax_nuts import sample_jax_model

        idata, note = sample_jax_model(build(), **kw)
        if idata is not None:
            return idata, "jax", ""
        sampler = "nutpie"
    model = build() if compiled is None else None
    cores = min(kw["chains"], os.cpu_count() or 1)
    if sampler == "nutpie":
        try:
            import nutpie

            with quiet(kw["progress"]):
                fn = compiled or (lambda: compiled_nutpie(model)[0])
                idata = nutpie.sample(
                    fn(), draws=kw["draws"], tune=kw["tune"], chains=kw["chains"],
                    cores=cores, seed=kw["seed"], progress_bar=kw["progress"],
                    target_accept=kw["target_accept"],
                )  # fmt: skip
            return idata, "nutpie", note
        except Exception as exc:  # any nutpie failure falls back to PyMC
            logger.warning("nutpie failed (%s); falling back to PyMC's NUTS", exc)
            why = f"nutpie failed ({type(exc).__name__}: {exc}); used PyMC's NUTS"
            note += "; " * bool(note) + why
    with quiet(kw["progress"]), model if model is not None else build():
        idata = pm.sample(
            draws=kw["draws"], tune=kw["tune"], chains=kw["chains"], cores=cores,
            random_seed=kw["seed"], progressbar=kw["progress"],
            target_accept=kw["target_accept"], compute_convergence_checks=False,
            nuts_sampler="pymc",
        )  # fmt: skip
    return idata, "pymc", note


def run_gated(
    sample: Callable[[dict[str, Any]], tuple[Any, str, str, Mapping[str, Any]]],
    gated: Callable[[Any], tuple[Any, int]],
    *,
    draws: int,
    tune: int,
    chains: int,
    seed: int,
    target_accept: float,
    retry: bool,
    min_ess: float,
    max_rhat: float,
    more_draws: bool = True,
    first: Mapping[str, Any] | None = None,
    what: str = "",
) -> GatedRun:
    """Sample, gate, and retry once when the gate missed.

    Parameters
    ----------
    sample : callable
        ``sample(kw)`` with ``kw`` = draws, tune, chains, seed, target_accept of the
        attempt; returns (idata, sampler used, note, extra diagnostics columns).
    gated : callable
        ``gated(idata)`` returns the posterior dataset the gate checks (parameters and
        the quantities verdicts use) and the number of divergent transitions.
    draws, tune, chains, seed, target_accept, retry
        The first attempt's settings; whether a missed gate is retried.
    min_ess, max_rhat : float
        The gate's thresholds.
    more_draws : bool
        Whether the retry doubles the draws when the bulk ESS fell short.
    first : mapping, optional
        Columns that lead every diagnostics row (``{"metric": name}``).
    what : str
        Prefix of the not-converged message (``"metric s_dis: "``).

    Returns
    -------
    GatedRun
        ``rows``: per attempt the ``first`` columns, attempt, sampler, the settings,
        ``seconds``, the extra columns, the gate's columns and ``reason``.
    """
    rows: list[dict[str, Any]] = []
    idata, gate = None, None
    kw: dict[str, Any] = dict(
        draws=draws, tune=tune, chains=chains, seed=seed, target_accept=target_accept
    )
    for attempt in range(1, 3 if retry else 2):
        if attempt == 2:
            kw |= dict(tune=max(2 * tune, tune + 500), seed=seed + 1,
                       target_accept=max(0.95, target_accept))  # fmt: skip
            if more_draws and gate is not None and gate["ess_bulk_min"] < min_ess:
                kw["draws"] = 2 * draws
        start = time.perf_counter()
        idata, used, note, extra = sample(dict(kw))
        seconds = time.perf_counter() - start
        ds, divergences = gated(idata)
        gate = gate_summary(ds, divergences, min_ess, max_rhat)
        rows.append({**(first or {}), "attempt": attempt, "sampler": used, **kw,
                     "seconds": seconds, **extra, **{k: gate[k] for k in GATE_COLUMNS},
                     "reason": gate["reason"] + (f" ({note})" if note else "")})  # fmt: skip
        if gate["passed"]:
            break
    assert idata is not None and gate is not None
    converged = bool(gate["passed"])
    message = "ok" if converged else what + not_converged(len(rows), gate["reason"], min_ess,
                                                          max_rhat)  # fmt: skip
    return GatedRun(idata, converged, message, rows)


def diagnostics_frame(rows: list[dict[str, Any]], columns: list[str] | None = None) -> pd.DataFrame:
    """The attempts as a table (in ``columns`` order when given)."""
    frame = pd.DataFrame(rows)
    return frame if columns is None else frame[columns]
