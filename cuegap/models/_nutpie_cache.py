"""nutpie-compiled models kept for the life of a process, keyed by the model's structure.

Compiling a PyMC model for nutpie (Numba) costs most of a fit: 20-50 s against a few
seconds of sampling. Every design declares its counts as ``pm.Data``, so a compiled model
of the same structure serves new counts through nutpie's ``with_data``: a later fit in the
same process (the retry of a fit that missed the gate, the next audit of a validation,
``reanalyze`` over several stores, a test session) samples at once. The key is the model's
log-density graph with its array constants (:func:`structure_key`) plus the shapes of its
data, so a model that differs in anything but the data's values compiles anew.

Sampling from a cached program gives the draws a fresh compile gives: same graph, same
data, same seed.
"""

from __future__ import annotations

import threading
import time
import warnings
from collections import OrderedDict
from typing import Any

#: Compiled models kept per process (the oldest is dropped first).
MAX_ENTRIES = 8

_CACHE: OrderedDict[str, Any] = OrderedDict()
_LOCK = threading.Lock()
_STATS = {"hits": 0, "misses": 0}


def structure_key(model: Any) -> str:
    """A text that changes whenever ``model``'s graph does, not when only its data do.

    Parameters
    ----------
    model : pymc.Model
        A model whose counts are ``pm.Data`` containers.

    Returns
    -------
    str
        The graph's hash (array constants included), the types of its value variables and
        data, and the shapes of the data's current values.
    """
    from cuegap.models._jax_nuts import _graphs, _structure

    value_vars, shared, inputs, logp, outs, _ = _graphs(model)
    shapes = [(v.name, tuple(v.get_value(borrow=True).shape)) for v in shared]
    return _structure(value_vars, inputs, logp, outs) + repr(shapes)


def _data_values(model: Any) -> dict[str, Any]:
    from pytensor.compile.sharedvalue import SharedVariable

    return {v.name: v.get_value() for v in model.data_vars if isinstance(v, SharedVariable)}


def compiled_nutpie(model: Any) -> tuple[Any, float, bool]:
    """The nutpie-compiled form of ``model``, from this process's cache when it holds one.

    Parameters
    ----------
    model : pymc.Model
        The model to sample; its ``pm.Data`` values are set on the compiled model.

    Returns
    -------
    (compiled model, seconds, hit)
        The compiled model with ``model``'s data, the seconds spent getting it, and whether
        it came from the cache.
    """
    import nutpie

    start = time.perf_counter()
    key = structure_key(model)
    with _LOCK:
        compiled = _CACHE.get(key)
        if compiled is not None:
            _CACHE.move_to_end(key)
    hit = compiled is not None
    if compiled is None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compiled = nutpie.compile_pymc_model(model)
        with _LOCK:
            _CACHE[key] = compiled
            while len(_CACHE) > MAX_ENTRIES:
                _CACHE.popitem(last=False)
    with _LOCK:
        _STATS["hits" if hit else "misses"] += 1
    values = _data_values(model)
    compiled = compiled.with_data(**values) if values else compiled
    return compiled, time.perf_counter() - start, hit


def cache_stats() -> dict[str, int]:
    """Hits and misses of this process's cache since it started (or was cleared)."""
    with _LOCK:
        return {**_STATS, "entries": len(_CACHE)}


def clear_nutpie_cache() -> None:
    """Forget every compiled model (the next fit of each structure compiles again)."""
    with _LOCK:
        _CACHE.clear()
        _STATS.update(hits=0, misses=0)


__all__ = ["MAX_ENTRIES", "cache_stats", "clear_nutpie_cache", "compiled_nutpie", "structure_key"]
