"""Sampling the moral-dilemma model, the convergence gate, and NetCDF serialisation.

The plumbing :func:`cuegap.models._bayes.fit_bayes` (and the QA design's fit) rely on:
nutpie with compiled models cached per data shape, blackjax's NUTS on JAX when chosen
(its program cached on disk), PyMC's NUTS as the fallback, the
r-hat / ESS / divergence gate over a posterior dataset, and InferenceData to and from bytes.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import time
import warnings
from collections import OrderedDict
from typing import TYPE_CHECKING, Any

import numpy as np

from cuegap.models._bayes_model import GATE, MODEL_VERSION, BayesData, build_model, quiet

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
    from cuegap.models import last_jax_fit, sample_jax_model  # public: this file may move

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


def gate_summary(ds: Any, divergences: int, min_ess: float, max_rhat: float) -> dict:
    """The convergence gate over every variable of a posterior dataset.

    Parameters
    ----------
    ds : xarray.Dataset
        Draws with ``chain`` and ``draw`` dimensions (parameters and derived quantities).
    divergences : int
        Divergent transitions of the fit.
    min_ess, max_rhat : float
        The thresholds.

    Returns
    -------
    dict
        ``r_hat_max``, ``ess_bulk_min``, ``ess_tail_min``, ``divergences``, ``passed`` and
        ``reason`` ("ok" or why it failed).
    """
    import arviz as az
    import xarray as xr

    def extreme(d: xr.Dataset, fn) -> float:
        vals = np.concatenate([np.ravel(d[v].values) for v in d.data_vars])
        vals = vals[np.isfinite(vals)]
        return float(fn(vals)) if len(vals) else float("nan")

    r = extreme(az.rhat(ds), np.max)
    eb = extreme(az.ess(ds, method="bulk"), np.min)
    et = extreme(az.ess(ds, method="tail"), np.min)
    reasons = []
    if not np.isfinite(r) or r > max_rhat:
        reasons.append(f"max r-hat {r:.3f} > {max_rhat}")
    if not np.isfinite(eb) or eb < min_ess:
        reasons.append(f"min bulk ESS {eb:.0f} < {min_ess:g}")
    if divergences > GATE["divergences_max"]:
        reasons.append(f"{divergences} divergent transitions")
    return {
        "r_hat_max": r,
        "ess_bulk_min": eb,
        "ess_tail_min": et,
        "divergences": int(divergences),
        "passed": not reasons,
        "reason": "; ".join(reasons) or "ok",
    }


def idata_to_bytes(idata: az.InferenceData) -> bytes:
    """Serialise an InferenceData to NetCDF-4 bytes (HDF5, zlib-compressed groups).

    Parameters
    ----------
    idata : arviz.InferenceData

    Returns
    -------
    bytes
        Read back with :func:`idata_from_bytes`.
    """
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "fit.nc")
        idata.to_netcdf(path, compress=True, engine="h5netcdf")
        with open(path, "rb") as fh:
            return fh.read()


def idata_from_bytes(blob: bytes) -> az.InferenceData:
    """Read an InferenceData written by :func:`idata_to_bytes` (fully loaded in memory)."""
    import arviz as az

    if not isinstance(blob, bytes | bytearray | memoryview):
        raise TypeError(f"blob must be bytes, but got {type(blob).__name__}")
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "fit.nc")
        with open(path, "wb") as fh:
            fh.write(bytes(blob))
        idata = az.from_netcdf(path, engine="h5netcdf")
        for group in idata.groups():
            getattr(idata, group).load()
        with contextlib.suppress(Exception):
            idata.close()
    return idata


__all__ = [
    "clear_compiled_cache",
    "gate_summary",
    "idata_from_bytes",
    "idata_to_bytes",
]
