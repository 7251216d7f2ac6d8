"""The system-level gap regression of the dilemma analysis (Appendix O), from the systems'
metadata: which covariates, how text tiers are coded, and the error a user sees.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

import cuegap.designs.dilemma.stats as dilemma_stats
from cuegap.designs.dilemma._analysis_settings import COVARIATE_ORDER


def regression_tables(
    headline: pd.DataFrame, systems: pd.DataFrame, covariates: Sequence[str]
) -> dict[str, pd.DataFrame]:
    """The gap regression (Appendix O) on those ``covariates`` the system metadata has.

    Text levels named in :data:`COVARIATE_ORDER` (alignment low / medium / high, as a
    runner's metadata may give them) are coded 1, 2, 3; other text is not guessed at: the
    ``gap_regression_fit`` table then holds the error, which says to give numbers.

    Returns
    -------
    dict of str to DataFrame
        ``gap_regression``, ``gap_regression_correlations`` and ``gap_regression_fit``; or
        only ``gap_regression_fit`` with ``error``; or nothing when no covariate is present
        or there are too few systems.
    """
    present = [c for c in covariates if c in systems.columns]
    if not present or len(headline) <= len(present) + 1:
        return {}
    order = {c: levels for c, levels in COVARIATE_ORDER.items() if c in present}
    try:
        fit = dilemma_stats.gap_regression(headline, systems, covariates=present, order=order)
    except ValueError as exc:  # e.g. a constant covariate: say so rather than fail
        hint = ""
        if "text" in str(exc) or "outside its declared order" in str(exc):
            known = f"cuegap analyze reads {_levels_text(order)}; " if order else ""
            hint = f" ({known}give any other covariate as numbers in the runner's metadata)"
        return {
            "gap_regression_fit": pd.DataFrame(
                [{"covariates": ", ".join(present), "error": f"{exc}{hint}"}]
            )
        }
    return {
        "gap_regression": fit.coefficients,
        "gap_regression_correlations": fit.correlations,
        "gap_regression_fit": pd.DataFrame(
            [
                {
                    "covariates": ", ".join(present),
                    "r2": fit.r2,
                    "adj_r2": fit.adj_r2,
                    "n": fit.n,
                    "k": fit.k,
                    "error": None,
                }
            ]
        ),
    }


def _levels_text(order: dict[str, tuple[str, ...]]) -> str:
    """``alignment as low = 1, medium = 2, high = 3``."""
    return "; ".join(
        f"{name} as " + ", ".join(f"{lev} = {i + 1}" for i, lev in enumerate(levels))
        for name, levels in order.items()
    )


__all__ = ["regression_tables"]
