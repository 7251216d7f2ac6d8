"""Resampling helpers every design's bootstrap shares: a random stream per system, and the
SD and percentile interval over replicates.

Pure numpy.
"""

from __future__ import annotations

import hashlib
import warnings

import numpy as np


def system_rng(seed: int, system: object) -> np.random.Generator:
    """A generator per system, from the seed and a stable hash of the system's name.

    Deriving each system's stream from its own name (not from its position among the
    systems) makes a system's replicates independent of which other systems are in the
    table and of the row order.
    """
    digest = hashlib.blake2b(str(system).encode("utf-8"), digest_size=8).digest()
    return np.random.default_rng([seed, int.from_bytes(digest, "little")])


def summarise(reps: np.ndarray, level: float) -> tuple[np.ndarray, ...]:
    """Column-wise SD (ddof=1), percentile interval and count over the non-NaN replicates.

    Parameters
    ----------
    reps : ndarray, shape (n_boot, m)
        Replicate values; NaN marks a replicate where the statistic is undefined.
    level : float
        Coverage of the central percentile interval.

    Returns
    -------
    sd, low, high, n_valid : ndarray, shape (m,)
        SD is NaN with fewer than 2 valid replicates, the interval with fewer than 1.
        Quantiles use linear interpolation between order statistics (numpy's default
        ``method="linear"``) over the valid replicates only.
    """
    valid = ~np.isnan(reps)
    n_valid = valid.sum(axis=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        sd = np.nanstd(reps, axis=0, ddof=1)
    sd = np.where(n_valid >= 2, sd, np.nan)
    ordered = np.sort(reps, axis=0)  # NaN sorts last
    last = np.maximum(n_valid - 1, 0)
    bounds = []
    for q in ((1 - level) / 2, (1 + level) / 2):
        pos = q * last
        lo = np.floor(pos).astype(np.int64)
        hi = np.ceil(pos).astype(np.int64)
        v_lo = np.take_along_axis(ordered, lo[None, :], axis=0)[0]
        v_hi = np.take_along_axis(ordered, hi[None, :], axis=0)[0]
        value = v_lo + (pos - lo) * (v_hi - v_lo)
        bounds.append(np.where(n_valid >= 1, value, np.nan))
    return sd, bounds[0], bounds[1], n_valid


__all__ = ["summarise", "system_rng"]
