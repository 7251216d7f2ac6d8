"""What every design's Bayesian fit shares: the convergence gate, quiet samplers, and the
posterior to and from bytes.

Pure statistics plumbing (numpy, arviz, xarray): :func:`gate_summary` checks r-hat, bulk
ESS and divergences against :data:`GATE`; :func:`idata_to_bytes` / :func:`idata_from_bytes`
store a posterior as NetCDF-4; :func:`quiet` silences PyMC, PyTensor and nutpie.
"""

from __future__ import annotations

import contextlib
import logging
import os
import tempfile
import warnings
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import arviz as az

#: Convergence gate: every fit must pass all three, else it is reported as not converged.
GATE = {"r_hat_max": 1.01, "ess_bulk_min": 400, "divergences_max": 0}


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


__all__ = ["GATE", "gate_summary", "idata_from_bytes", "idata_to_bytes", "quiet"]
