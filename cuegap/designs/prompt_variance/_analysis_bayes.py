"""Orchestration of the prompt-variance design's hierarchical Bayesian variance-components
fit (``cuegap analyze --design prompt-variance --bayes``): store → per-run scores →
:func:`cuegap.designs.prompt_variance.stats.fit_pv_bayes` (one gated fit per metric) → stored
tables.

Stored as one analysis of kind ``pv_bayesian`` (reused when data and settings are
unchanged), status ``not_converged`` when any metric's fit missed the gate (its rows say
``converged = False``). When the store's items come under both an explicit and an implicit
cue, the per-run cue gap
(:func:`cuegap.designs.prompt_variance.sensitivity.cue_gap_runs`) is fitted
too, as metric ``cue_gap`` with category ``(all)``: its ``pv_bayes_spread`` row is the
posterior of the spread that prompt construction alone gives the gap.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pandas as pd
from sqlalchemy.engine import Engine

import cuegap.designs.prompt_variance.stats as pv_stats
from cuegap.audit import find_analysis, frame_digest, load_table, save_analysis
from cuegap.designs import BayesSettings
from cuegap.designs.prompt_variance._analysis import PVSettings, _factors, runs_of
from cuegap.designs.prompt_variance.sensitivity import cue_gap_runs

BAYES_KIND = "pv_bayesian"
GAP_METRIC = "cue_gap"
ALL_CATEGORIES = "(all)"
BAYES_DESCRIPTIONS = {
    "pv_bayes_components": "Hierarchical Bayesian variance components per system × category "
    "× metric: each factor's, their interaction's and replicate noise's share of a run "
    "score's variance, with 90% posterior intervals",
    "pv_bayes_spread": "Posterior SD of the true score (or cue gap) across the prompt "
    "combinations (prompt construction alone) and for a new combination, 90% intervals",
    "pv_bayes_typical": "Share of each component for a typical system × category of each "
    "metric (geometric-mean SDs over the cells), with 90% posterior intervals",
    "pv_bayes_diagnostics": "Sampling attempts per metric: r-hat, bulk ESS, divergences, gate",
}


@dataclass(frozen=True, slots=True)
class PVBayesResult:
    """A stored prompt-variance Bayesian analysis."""

    id: int
    data_fingerprint: str
    factors: list[str]
    status: str
    message: str
    tables: dict[str, pd.DataFrame]
    reused: bool


def pv_bayes_fit_tables(
    counts: pd.DataFrame,
    *,
    factors: list[str],
    bayes: BayesSettings | None = None,
    gap_runs: pd.DataFrame | None = None,
    sampler_progress: bool = False,
    posteriors: dict[str, Any] | None = None,
    **gate: Any,
) -> tuple[dict[str, pd.DataFrame], str]:
    """Fit the variance-components model to a per-run count table (pure; no store).

    Parameters
    ----------
    counts : DataFrame
        :func:`cuegap.schema.pv_counts`'s runs (keys ``system``, ``category``).
    factors : list of one or two str
    bayes : BayesSettings, optional
        Draws, tuning, chains, seed and sampler (default: ``BayesSettings()``).
    gap_runs : DataFrame, optional
        Per-run cue gaps (``system``, factors, ``replicate``, ``gap``), fitted as metric
        ``cue_gap``.
    sampler_progress : bool
    posteriors : dict, optional
        When given, receives each metric's posterior as ``"idata:<metric>"`` (what
        :func:`cuegap.audit.save_analysis` stores).
    **gate
        ``min_ess`` / ``max_rhat`` for :func:`cuegap.designs.prompt_variance.stats.fit_pv_bayes`
        (tests only).

    Returns
    -------
    (dict of str to DataFrame, str)
        The tables and the gate message (``"ok"`` when every fit passed).
    """
    b = bayes or BayesSettings()
    scores = pv_stats.pv_scores(counts, factors=factors)
    cols = ["system", "category", "metric", *factors, "replicate", "score"]
    scores = scores.loc[scores["score"].notna(), cols]
    if gap_runs is not None and len(gap_runs):
        extra = gap_runs.rename(columns={"gap": "score"})
        extra = extra.assign(category=ALL_CATEGORIES, metric=GAP_METRIC)
        scores = pd.concat([scores, extra[cols]], ignore_index=True)
    fit = pv_stats.fit_pv_bayes(
        scores, factors=factors, **b.fit_kwargs(), progress=sampler_progress, **gate
    )
    tables = pv_stats.pv_bayes_tables(fit)
    tables["pv_bayes_diagnostics"] = fit.diagnostics
    if posteriors is not None:  # one posterior per metric, stored with the analysis
        posteriors.update({f"idata:{metric}": f[0] for metric, f in fit.fits.items()})
    messages = [f[3] for f in fit.fits.values() if not f[2]]
    return tables, "; ".join(messages) or "ok"


def analyze_pv_bayes(
    engine: Engine,
    settings: PVSettings | None = None,
    bayes: BayesSettings | None = None,
    *,
    force: bool = False,
    progress: Callable[[str], None] | None = None,
    sampler_progress: bool = False,
) -> PVBayesResult:
    """Fit and store the prompt-variance variance-components model of a store.

    Parameters
    ----------
    engine : Engine
    settings : PVSettings, optional
        Factors and strategy as for :func:`analyze_prompt_variance`.
    bayes : BayesSettings, optional
    force : bool, default False
        Refit even when data and settings are unchanged.
    progress : callable, optional
        Receives one line per step.
    sampler_progress : bool, default False

    Returns
    -------
    PVBayesResult

    Raises
    ------
    ValueError
        As :func:`analyze_prompt_variance`, and with more than two factors.
    """
    from cuegap.schema import pv_counts, read_snapshot

    settings = settings or PVSettings()
    b = bayes or BayesSettings()
    say = progress or (lambda _msg: None)
    say("reading per-run counts from the store")
    with read_snapshot(engine) as conn:
        factors = _factors(conn, settings)
        extra = [] if "strategy" in factors else ["strategy"]
        by_cue = pv_counts(conn, factors=[*factors, *extra], keys=["system", "category", "cue"])
    if len(factors) > 2:
        raise ValueError(
            f"the variance-components model takes one or two factors but the store has "
            f"{len(factors)} ({', '.join(factors)}); choose two with --factors"
        )
    counts = runs_of(by_cue, factors=factors, strategy=settings.strategy)
    if counts.empty:
        raise ValueError(f"the store holds no QA answers of strategy {settings.strategy!r}")
    fingerprint = frame_digest(by_cue)
    stored = {**settings.to_dict(), "factors": factors, "bayes": b.to_dict(),
              "model_version": pv_stats.PV_BAYES_VERSION}  # fmt: skip
    found = None
    if not force:
        found = find_analysis(
            engine, kind=BAYES_KIND, data_fingerprint=fingerprint, settings=stored
        )
    if found is not None:
        say("unchanged data and settings: reusing the stored prompt-variance Bayesian fit")
        tables = {n: load_table(engine, n, found) for n in BAYES_DESCRIPTIONS}
        ok = bool(tables["pv_bayes_diagnostics"].groupby("metric")["passed"].last().all())
        status = "ok" if ok else "not_converged"
        return PVBayesResult(found, fingerprint, factors, status, "", tables, reused=True)
    gaps = None
    if "strategy" not in factors:
        gaps = cue_gap_runs(by_cue, factors=factors, strategy=settings.strategy)
    say(f"sampling ({b.sampler}, {b.chains} chains x {b.draws} draws) per metric")
    posteriors: dict[str, Any] = {}
    tables, message = pv_bayes_fit_tables(
        counts, factors=factors, bayes=b, gap_runs=gaps, sampler_progress=sampler_progress,
        posteriors=posteriors,
    )  # fmt: skip
    status = "ok" if message == "ok" else "not_converged"
    systems = sorted(set(counts["system"]))
    analysis_id = save_analysis(
        engine,
        kind=BAYES_KIND,
        status=status,
        data_fingerprint=fingerprint,
        system_fingerprints={s: frame_digest(by_cue[by_cue["system"] == s]) for s in systems},
        settings=stored,
        tables=tables,
        descriptions=BAYES_DESCRIPTIONS,
        message=message,
        posteriors=posteriors,
    )
    return PVBayesResult(analysis_id, fingerprint, factors, status, message, tables, False)
