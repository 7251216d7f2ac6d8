"""Sampling the moral-dilemma model: nutpie with compiled models cached per data shape,
blackjax's NUTS on JAX when chosen (its program cached on disk), PyMC's NUTS as the
fallback.

The convergence gate and InferenceData to and from bytes, which every design's fit shares,
are in :mod:`cuegap.models._sampling`.
"""

from __future__ import annotations

import os
import time
import warnings
from collections import OrderedDict
from typing import TYPE_CHECKING, Any

from cuegap.designs.dilemma.stats._bayes_model import MODEL_VERSION, BayesData, build_model, quiet

if TYPE_CHECKING:
    import arviz as az


_COMPILED: OrderedDict[tuple, Any] = OrderedDict()
_COMPILED_MAX = 4


def _compiled_nutpie(data: BayesData, interaction: bool) -> tuple[Any, float]:
    """A nutpie-compiled model for arrays of this shape (cached), with ``data`` set."""
    import nutpie

    key = (MODEL_VERSION, data.trials.shape, interaction)
    start = time.perf_counter()
    if key in _COMPILED:
        _COMPILED.move_to_end(key)
        compiled = _COMPILED[key]
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compiled = nutpie.compile_pymc_model(build_model(data, interaction=interaction))
        _COMPILED[key] = compiled
        while len(_COMPILED) > _COMPILED_MAX:
            _COMPILED.popitem(last=False)
    seconds = time.perf_counter() - start
    return compiled.with_data(trials=data.trials, events=data.events), seconds


def clear_compiled_cache() -> None:
    """Forget compiled models (the next fit compiles again)."""
    _COMPILED.clear()


def _sample_nutpie(
    data: BayesData,
    interaction: bool,
    *,
    draws: int,
    tune: int,
    chains: int,
    seed: int,
    target_accept: float,
    progress: bool,
) -> tuple[az.InferenceData, float]:
    import nutpie

    compiled, compile_s = _compiled_nutpie(data, interaction)
    with quiet(progress):
        idata = nutpie.sample(
            compiled,
            draws=draws,
            tune=tune,
            chains=chains,
            cores=min(chains, os.cpu_count() or 1),
            seed=seed,
            progress_bar=progress,
            save_warmup=False,
            target_accept=target_accept,
        )
    return idata, compile_s


def _sample_jax(
    data: BayesData, interaction: bool, **kw: Any
) -> tuple[az.InferenceData | None, float, str]:
    """The model on blackjax's NUTS (:mod:`cuegap.models._jax_nuts`): (draws or None when
    the JAX program failed, seconds to get the program, why it failed)."""
    from cuegap.models import last_jax_fit, sample_jax_model

    idata, note = sample_jax_model(build_model(data, interaction=interaction), **kw)
    info = last_jax_fit()
    return idata, (info.compile_seconds if idata is not None and info else 0.0), note


def _sample_pymc(
    data: BayesData,
    interaction: bool,
    *,
    draws: int,
    tune: int,
    chains: int,
    seed: int,
    target_accept: float,
    progress: bool,
) -> tuple[az.InferenceData, float]:
    import pymc as pm

    model = build_model(data, interaction=interaction)
    with quiet(progress), model:
        idata = pm.sample(
            draws=draws,
            tune=tune,
            chains=chains,
            cores=min(chains, os.cpu_count() or 1),
            random_seed=seed,
            progressbar=progress,
            target_accept=target_accept,
            compute_convergence_checks=False,
            nuts_sampler="pymc",
        )
    return idata, 0.0


__all__ = ["clear_compiled_cache"]
