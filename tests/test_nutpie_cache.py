"""The process-wide cache of nutpie-compiled models (issue 31): a structure compiles once,
and sampling from the cached program gives the draws a fresh compile gives, on new counts
too. Real nutpie compiles and fits of a small binomial model."""

from __future__ import annotations

import numpy as np
import pytest

from cuegap.models._fit_runner import sample_nuts
from cuegap.models._nutpie_cache import cache_stats, clear_nutpie_cache, structure_key

pm = pytest.importorskip("pymc")
pytest.importorskip("nutpie")

KW = dict(draws=200, tune=200, chains=2, seed=7, target_accept=0.9, progress=False)


def _model(trials: list[int], events: list[int], prior_sd: float = 1.5) -> pm.Model:
    with pm.Model() as model:
        n = pm.Data("trials", np.asarray(trials, dtype=np.int64))
        k = pm.Data("events", np.asarray(events, dtype=np.int64))
        mu = pm.Normal("mu", 0.0, prior_sd)
        eta = pm.Normal("eta", mu, 1.0, shape=len(trials))
        pm.Binomial("y", n=n, p=pm.math.invlogit(eta), observed=k)
    return model


def _draws(trials: list[int], events: list[int]) -> np.ndarray:
    idata, used, _ = sample_nuts(lambda: _model(trials, events), "nutpie", **KW)
    assert used == "nutpie"
    return idata.posterior["eta"].values


def test_key_follows_the_structure_not_the_counts() -> None:
    a = structure_key(_model([10, 20, 30], [1, 5, 9]))
    assert a == structure_key(_model([40, 50, 60], [4, 5, 6]))  # other counts
    assert a != structure_key(_model([10, 20, 30, 40], [1, 5, 9, 9]))  # another shape
    assert a != structure_key(_model([10, 20, 30], [1, 5, 9], prior_sd=2.5))  # another prior


def test_cached_program_samples_what_a_fresh_compile_samples() -> None:
    first, second = ([30, 40, 50], [3, 20, 45]), ([60, 10, 90], [50, 2, 9])
    clear_nutpie_cache()
    fresh_first = _draws(*first)
    clear_nutpie_cache()
    fresh_second = _draws(*second)  # compiled for `second`'s counts ...
    cached_first = _draws(*first)  # ... and reused, with `first`'s counts set
    stats = cache_stats()
    assert (stats["misses"], stats["hits"]) == (1, 1)
    np.testing.assert_array_equal(cached_first, fresh_first)
    assert not np.array_equal(fresh_first, fresh_second)
    # the counts really reach the cached program: the posteriors follow each data set
    assert fresh_second[..., 2].mean() < 0 < cached_first[..., 2].mean()
