"""Stored analysis settings read back (one codec for every design)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.engine import Engine

from cuegap.models import Policy
from cuegap.schema import Analysis


def stored_settings(engine: Engine, analysis_id: int) -> dict[str, Any]:
    """The settings an analysis was stored with, as a dict (``{}`` when none)."""
    with engine.connect() as conn:
        stored = conn.execute(select(Analysis.settings).where(Analysis.id == analysis_id)).scalar()
    if isinstance(stored, str):  # a JSON column read back as text
        stored = json.loads(stored)
    return dict(stored or {})


def analysis_kind(engine: Engine, analysis_id: int) -> str | None:
    """The kind of a stored analysis, or None when there is none with this id."""
    with engine.connect() as conn:
        return conn.execute(select(Analysis.kind).where(Analysis.id == analysis_id)).scalar()


def matching_fit(engine: Engine, analysis_id: int, kind: str, keys: tuple[str, ...]) -> int | None:
    """The newest analysis of ``kind`` (a Bayesian fit) of the same data as analysis
    ``analysis_id`` whose stored settings agree with its settings on ``keys``; None when
    there is none. Converged or not: a fit that missed its gate is still the fit of record.
    """
    with engine.connect() as conn:
        row = conn.execute(
            select(Analysis.data_fingerprint, Analysis.settings).where(Analysis.id == analysis_id)
        ).one()
        fits = conn.execute(
            select(Analysis.id, Analysis.settings)
            .where(Analysis.kind == kind, Analysis.data_fingerprint == row.data_fingerprint)
            .order_by(Analysis.id.desc())
        ).all()
    mine = row.settings or {}
    for fit in fits:
        if all((fit.settings or {}).get(k) == mine.get(k) for k in keys):
            return int(fit.id)
    return None


@dataclass(frozen=True, slots=True)
class BayesSettings:
    """How a design's hierarchical Bayesian model is sampled (see
    :func:`cuegap.designs.dilemma.stats.fit_bayes`)."""

    draws: int = 1000
    tune: int = 1000
    chains: int = 4
    seed: int = 2026
    sampler: str = "nutpie"

    def fit_kwargs(self, *, seed: int | None = None) -> dict[str, Any]:
        """The keyword arguments ``analyze --bayes`` passes to the fitting functions
        (:func:`cuegap.designs.dilemma.stats.fit_bayes`,
        :func:`cuegap.designs.qa.stats.fit_qa_bayes`); target
        acceptance, the retry and the convergence gate are those functions' defaults.

        Parameters
        ----------
        seed : int, optional
            Overrides :attr:`seed` (the validation benchmarks give each audit its own).
        """
        return {
            "draws": self.draws,
            "tune": self.tune,
            "chains": self.chains,
            "seed": self.seed if seed is None else seed,
            "sampler": self.sampler,
        }

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready settings."""
        return {
            "draws": self.draws,
            "tune": self.tune,
            "chains": self.chains,
            "seed": self.seed,
            "sampler": self.sampler,
        }


def policy_from_stored(stored: Mapping[str, Any]) -> Policy:
    """The verdict policy stored in an analysis's settings (its ``policy`` dict; keys this
    version does not know are left out, missing ones take their defaults). Every design's
    settings ``from_dict`` reads its policy this way."""
    pol = stored.get("policy") or {}
    return Policy.from_dict(pol)


def bayes_from_stored(stored: Mapping[str, Any]) -> BayesSettings | None:
    """The :class:`BayesSettings` stored in an analysis's settings (``bayes``), or None."""
    b = stored.get("bayes")
    if not b:
        return None
    return BayesSettings(**{k: v for k, v in b.items() if k in BayesSettings.__dataclass_fields__})
