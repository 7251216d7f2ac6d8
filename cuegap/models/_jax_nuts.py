"""NUTS on JAX: blackjax window adaptation and sampling in one exported, cached program.

A PyMC model's log density is translated to JAX by PyMC itself
(:func:`pymc.sampling.jax.get_jaxified_graph`), with the model's ``pm.Data`` containers as
arguments of the program rather than constants, so that other counts of the same shape
reuse it. Each chain runs blackjax's window adaptation (Stan's schedule) then NUTS; the
chains are vectorised with ``jax.vmap``. The whole program is saved with ``jax.export`` in
the persistent cache of :mod:`cuegap.models._jax_cache`, keyed by the model's structure,
the sampler settings and the package versions: a later process deserialises it instead of
translating, tracing and lowering the model again.

Needs ``jax`` and ``blackjax`` (:func:`jax_available`); without them cuegap samples with
nutpie or PyMC's NUTS.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import logging
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from cuegap.models._jax_cache import cache_dir, program_key, read_entry, write_entry

if TYPE_CHECKING:
    import arviz as az

logger = logging.getLogger(__name__)

#: sample_stats written per draw (blackjax's NUTS info, named as PyMC and nutpie name them).
STATS = ("diverging", "acceptance_rate", "energy", "n_steps", "tree_depth", "lp", "step_size")


@dataclass(frozen=True)
class JaxFitInfo:
    """How a JAX fit got its program.

    Attributes
    ----------
    cache_hit : bool
        The program came from the persistent cache.
    compile_seconds : float
        Seconds spent getting a callable program (translating, tracing, exporting, or
        reading and deserialising the cached one), before sampling.
    key : str
        The cache key.
    """

    cache_hit: bool
    compile_seconds: float
    key: str


_LOG: list[JaxFitInfo] = []  # this process's JAX fits, oldest first (the last 100)


def jax_available() -> bool:
    """Whether jax and blackjax are installed (the JAX sampler can run)."""
    return all(importlib.util.find_spec(m) is not None for m in ("jax", "blackjax"))


def _graphs(model: Any) -> tuple[list, list, list, Any, list, list[str]]:
    """Value variables, data inputs, the log density and the posterior outputs of ``model``.

    ``pm.Data`` containers are replaced by symbolic inputs of the same type.
    """
    from pytensor.compile.sharedvalue import SharedVariable
    from pytensor.graph.replace import clone_replace

    wanted = {v.name for v in (*model.free_RVs, *model.deterministics)}
    outs = [v for v in model.unobserved_value_vars if v.name in wanted]
    names = [v.name for v in outs]
    shared = [v for v in model.data_vars if isinstance(v, SharedVariable)]
    inputs = [v.type() for v in shared]
    for v, i in zip(shared, inputs, strict=True):
        i.name = v.name
    logp = model.logp(jacobian=True)
    logp, *outs = clone_replace([logp, *outs], replace=dict(zip(shared, inputs, strict=True)))
    return list(model.value_vars), shared, inputs, logp, outs, names


def _structure(value_vars: list, inputs: list, logp: Any, outs: list) -> str:
    """A text that changes with the graph, including the values of its array constants."""
    from pytensor.graph.basic import Constant

    try:
        from pytensor.graph.traversal import ancestors
    except ImportError:  # pytensor < 2.32
        from pytensor.graph.basic import ancestors
    from pytensor.printing import debugprint

    text = debugprint([logp, *outs], file="str", print_type=True)
    h = hashlib.sha256(text.encode())
    for v in ancestors([logp, *outs]):
        if isinstance(v, Constant):
            a = np.asarray(v.data)
            # an object constant (None, a slice of an index) by its text: its bytes are
            # memory addresses, which differ between processes and between graphs
            body = repr(v.data).encode() if a.dtype == object else a.tobytes()
            h.update(f"{a.dtype}{a.shape}".encode() + body)
    sig = [(v.name, str(v.type)) for v in (*value_vars, *inputs)]
    return h.hexdigest() + repr(sig)


def _program(value_vars, inputs, logp, outs, names, *, draws, tune, target_accept):
    """The JAX function (rng key, initial positions, data) -> (draws, stats), not jitted."""
    import blackjax
    import jax
    import jax.numpy as jnp
    from pymc.sampling.jax import get_jaxified_graph

    logp_fn = get_jaxified_graph(inputs=[*value_vars, *inputs], outputs=[logp])
    post_fn = get_jaxified_graph(inputs=[*value_vars, *inputs], outputs=outs)

    def program(key, init, data):
        def logdensity(pos):
            return logp_fn(*pos, *data)[0]

        def one_chain(key, pos0):
            k_warm, k_draw = jax.random.split(key)
            if tune > 0:
                warmup = blackjax.window_adaptation(
                    blackjax.nuts, logdensity, target_acceptance_rate=target_accept
                )
                (state, params), _ = warmup.run(k_warm, pos0, num_steps=tune)
            else:
                imm = jnp.ones(sum(jnp.size(p) for p in pos0))
                params = {"step_size": jnp.asarray(0.1), "inverse_mass_matrix": imm}
                state = blackjax.nuts.init(pos0, logdensity)
            kernel = blackjax.nuts(logdensity, **params)

            def step(state, k):
                state, info = kernel.step(k, state)
                out = dict(zip(names, post_fn(*state.position, *data), strict=True))
                st = (
                    info.is_divergent,
                    info.acceptance_rate,
                    info.energy,
                    info.num_integration_steps,
                    info.num_trajectory_expansions,
                    state.logdensity,
                    params["step_size"],
                )
                return state, (out, dict(zip(STATS, st, strict=True)))

            _, res = jax.lax.scan(step, state, jax.random.split(k_draw, draws))
            return res

        return jax.vmap(one_chain)(jax.random.split(key, init[0].shape[0]), init)

    return program


def _use_xla_cache(jax: Any) -> None:
    """Keep XLA's compiled executables in the same cache, unless the user chose a folder."""
    if jax.config.jax_compilation_cache_dir is None:
        jax.config.update("jax_compilation_cache_dir", str(cache_dir() / "xla"))


def _initial_points(model: Any, chains: int, seed: int) -> list[np.ndarray]:
    """Each chain's start: the model's initial point jittered by U(-1, 1), as PyMC does."""
    ip = model.initial_point(random_seed=seed)
    rng = np.random.default_rng(seed)
    return [
        np.asarray(ip[v.name], dtype=v.dtype)
        + rng.uniform(-1, 1, size=(chains, *np.shape(ip[v.name]))).astype(v.dtype)
        for v in model.value_vars
    ]


def sample_jax(
    model: Any,
    *,
    draws: int,
    tune: int,
    chains: int,
    seed: int,
    target_accept: float = 0.8,
) -> tuple[az.InferenceData, JaxFitInfo]:
    """Sample a PyMC model with blackjax's NUTS, reusing a cached exported program.

    Parameters
    ----------
    model : pymc.Model
        Its ``pm.Data`` containers become arguments of the program.
    draws, tune, chains : int
        Kept draws and tuning (window adaptation) steps per chain, number of chains.
    seed : int
        Seeds the initial points' jitter and every chain's random stream.
    target_accept : float
        Target acceptance rate of the step-size adaptation.

    Returns
    -------
    idata : arviz.InferenceData
        ``posterior`` with the model's free variables and deterministics under their
        names and dims, ``sample_stats`` with :data:`STATS`.
    info : JaxFitInfo
        Whether the program came from the cache, and the seconds it took to get it.
    """
    import jax

    jax.config.update("jax_enable_x64", True)
    _use_xla_cache(jax)
    start = time.perf_counter()
    value_vars, shared, inputs, logp, outs, names = _graphs(model)
    data = [np.asarray(v.get_value(borrow=True)) for v in shared]
    init = _initial_points(model, chains, seed)
    settings = {
        "draws": int(draws),
        "tune": int(tune),
        "chains": int(chains),
        "target_accept": float(target_accept),
        "init": [(str(a.dtype), a.shape) for a in init],
        "data": [(str(a.dtype), a.shape) for a in data],
        "names": names,
        "backend": jax.default_backend(),
    }
    key = program_key(_structure(value_vars, inputs, logp, outs), settings)
    exported, hit = None, False
    blob = read_entry(key)
    if blob is not None:
        try:
            exported, hit = jax.export.deserialize(bytearray(blob)), True
        except Exception:  # a corrupt or foreign entry: rebuild it
            exported = None
    if exported is None:
        fn = _program(
            value_vars, inputs, logp, outs, names,
            draws=int(draws), tune=int(tune), target_accept=float(target_accept),
        )  # fmt: skip
        spec = jax.ShapeDtypeStruct
        args = (spec((2,), np.uint32), [spec(a.shape, a.dtype) for a in init],
                [spec(a.shape, a.dtype) for a in data])  # fmt: skip
        exported = jax.export.export(jax.jit(fn))(*args)
        with contextlib.suppress(ImportError):  # no flatbuffers: sample, store nothing
            write_entry(key, bytes(exported.serialize()))
    rng_key = np.asarray(jax.random.key_data(jax.random.key(seed)), dtype=np.uint32)
    call = jax.jit(exported.call)
    compiled = call.lower(rng_key, init, data).compile()
    compile_s = time.perf_counter() - start
    post, stats = jax.device_get(compiled(rng_key, init, data))
    return _to_idata(model, post, stats, names), JaxFitInfo(hit, compile_s, key)


def sample_jax_model(
    model: Any,
    *,
    draws: int,
    tune: int,
    chains: int,
    seed: int,
    target_accept: float,
    progress: bool = False,
) -> tuple[az.InferenceData | None, str]:
    """Sample a PyMC model with the JAX sampler; (None, why) when it fails.

    Parameters
    ----------
    model : pymc.Model
    draws, tune, chains, seed, target_accept
        As for the fits.
    progress : bool
        Ignored (the JAX program shows no progress bar).

    Returns
    -------
    idata : arviz.InferenceData or None
        None when the JAX sampler raised; the caller falls back to nutpie.
    note : str
        Empty, or why the JAX sampler failed.
    """
    from cuegap.models._sampling import quiet

    try:
        with quiet(False):
            idata, info = sample_jax(
                model, draws=draws, tune=tune, chains=chains, seed=seed,
                target_accept=target_accept,
            )  # fmt: skip
    except Exception as exc:  # any JAX failure falls back to nutpie
        logger.warning("the jax sampler failed (%s); falling back to nutpie", exc)
        return None, f"jax failed ({type(exc).__name__}: {exc}); used nutpie"
    _LOG.append(info)
    del _LOG[:-100]
    return idata, ""


def last_jax_fit() -> JaxFitInfo | None:
    """The last JAX fit of this process: whether its program came from the cache, and the
    seconds it took to get it (None when no JAX fit ran)."""
    return _LOG[-1] if _LOG else None


def jax_fits() -> tuple[JaxFitInfo, ...]:
    """This process's JAX fits (the last 100), oldest first: a fit's retry compiles
    another program (more tuning steps), so its first attempt tells whether the cache
    served the fit's settings."""
    return tuple(_LOG)


def _to_idata(model: Any, post: dict, stats: dict, names: list[str]) -> az.InferenceData:
    import arviz as az

    dims = {n: list(model.named_vars_to_dims.get(n, ())) for n in names}
    coords = {k: v for k, v in model.coords.items() if v is not None}
    stats = {k: np.asarray(v) for k, v in stats.items()}
    stats["diverging"] = stats["diverging"].astype(bool)
    return az.from_dict(
        posterior={n: np.asarray(post[n]) for n in names},
        sample_stats=stats,
        coords=coords,
        dims={n: d for n, d in dims.items() if d},
    )


__all__ = [
    "STATS",
    "JaxFitInfo",
    "jax_available",
    "jax_fits",
    "last_jax_fit",
    "sample_jax",
    "sample_jax_model",
]
