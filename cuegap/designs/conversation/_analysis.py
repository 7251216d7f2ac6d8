"""Orchestration of the conversation design (seed 003 §4-5): store → transition counts →
statistics → stored tables and verdicts.

One snapshot of the store is aggregated in SQL (``cuegap.schema._conv_aggregate.
conv_counts``: one row per system × benchmark × category × demographics × persona ×
instantiation × reveal [× question], with the four transition counts), so the analysis
costs the same for 8 thousand or 8 million transcripts. :mod:`cuegap.models` computes
seed 003's shift rates, contrasts, t-tests and cross-benchmark consistency; the verdict
policy (:mod:`cuegap.designs.conversation.stats._verdict`) judges each system; everything is stored
as
one analysis of kind ``conversation`` and, with ``--bayes``, the hierarchical model's
tables and posterior verdicts as one of kind ``conversation_bayesian``.

Tables (``cuegap export NAME`` works for each): ``conv_shift_rates``, ``conv_contrasts``,
``conv_tests`` (the t-test's unit and correction in its ``unit`` / ``correction``
columns and in the analysis settings), ``conv_consistency``, ``conv_consistency_summary``
and ``verdicts``; Bayesian: ``conv_bayes_contrasts``, ``conv_bayes_consistency``,
``conv_bayes_policy``, ``conv_bayes_diagnostics`` and ``verdicts``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pandas as pd
from sqlalchemy.engine import Engine

from cuegap.audit import find_analysis, frame_digest, load_table, save_analysis
from cuegap.designs.conversation._analysis_tables import (
    ConvSettings,
    conv_audit_tables,
    conv_bayes_audit_tables,
    fewest_disagreements,
)
from cuegap.designs.conversation.stats._frame import CELL

__all__ = [
    "BAYES_DESCRIPTIONS",
    "BAYES_KIND",
    "DESCRIPTIONS",
    "KIND",
    "ConvResult",
    "ConvSettings",
    "analyze_conversation",
    "conv_audit_tables",
    "conv_bayes_audit_tables",
    "fewest_disagreements",
    "load_conv_counts",
]

KIND = "conversation"
BAYES_KIND = "conversation_bayesian"
DESCRIPTIONS = {
    "conv_shift_rates": "Seed 003 Eqs. 1-2: λ_iden and λ_base per system × benchmark × "
    "demographics × instantiation × reveal, with Wilson intervals",
    "conv_contrasts": "The identity, reveal and instantiation contrasts of seed 003 §5 and "
    "Appendix B per evaluation condition and benchmark",
    "conv_tests": "One-sample t-tests of each contrast against zero over the recorded unit "
    "(persona, question or category), optionally Benjamini–Hochberg",
    "conv_consistency": "Cross-benchmark consistency: significant with one sign on every benchmark",
    "conv_consistency_summary": "Findings per contrast and instantiation (seed 003: 10, 6, 3, "
    "1, 1)",
    "verdicts": "Flagged / passed / inconclusive per system under the policy, with the reason",
}
BAYES_DESCRIPTIONS = {
    "conv_bayes_contrasts": "Posterior mean and interval of every contrast per benchmark",
    "conv_bayes_consistency": "P(a contrast has one sign on every benchmark)",
    "conv_bayes_policy": "Per evaluation condition of the policy's contrast: P(beyond ±δ on "
    "every benchmark), P(within ±δ on every benchmark)",
    "conv_bayes_diagnostics": "Sampling attempts: r-hat, bulk ESS, divergences, gate",
    "verdicts": "Flagged / passed / inconclusive per system from the posterior, with the reason",
}


@dataclass(frozen=True, slots=True)
class ConvResult:
    """A stored conversation analysis (and its Bayesian fit, when one was asked for)."""

    id: int
    data_fingerprint: str
    tables: dict[str, pd.DataFrame]
    reused: bool
    bayes_id: int | None = None
    bayes_tables: dict[str, pd.DataFrame] | None = None
    converged: bool | None = None
    bayes_message: str = ""


def load_conv_counts(engine: Engine, *, unit: str | None = None) -> pd.DataFrame:
    """The store's transition count frame, from one snapshot.

    ``unit`` ``"question"`` adds the question to the key; persona and category are keys
    of every count frame already.

    Raises
    ------
    ValueError
        When the store holds no conversations.
    """
    from cuegap.schema import conv_counts, read_snapshot

    extra = None if unit is None or unit in CELL else unit
    with read_snapshot(engine) as conn:
        counts = conv_counts(conn, unit=extra)
    if counts.empty:
        raise ValueError(
            "the store holds no conversation transcripts: ingest MAC-Fairness transcripts "
            "first (or cuegap simulate --design conversation)"
        )
    return counts


def _reuse(engine: Engine, kind: str, fp: str, stored: dict, names) -> tuple[int, dict] | None:
    found = find_analysis(engine, kind=kind, data_fingerprint=fp, settings=stored)
    if found is None:
        return None
    tables = {}
    for name in names:
        try:
            tables[name] = load_table(engine, name, found)
        except (KeyError, LookupError, ValueError):
            continue
    return found, tables


def _system_fingerprints(counts: pd.DataFrame) -> dict[str, str]:
    systems = sorted(set(counts["system"].astype(str)))
    return {s: frame_digest(counts[counts["system"].astype(str) == s]) for s in systems}


def analyze_conversation(
    engine: Engine,
    settings: ConvSettings | None = None,
    *,
    counts: pd.DataFrame | None = None,
    force: bool = False,
    progress: Callable[[str], None] | None = None,
    sampler_progress: bool = False,
) -> ConvResult:
    """Analyse the conversations of a store and store the tables and verdicts (reused when
    the data and settings are unchanged, unless ``force``).

    Parameters
    ----------
    engine : Engine
    settings : ConvSettings, optional
        With ``settings.bayes`` the hierarchical model is fitted too and stored as an
        analysis of kind ``conversation_bayesian`` (status ``not_converged`` when it
        missed the gate; its verdicts are then all inconclusive).
    counts : DataFrame, optional
        A count frame to analyse instead of the store's (tests, notebooks).
    force : bool, default False
    progress : callable, optional
        Receives one line per step.

    Returns
    -------
    ConvResult
    """
    settings = settings or ConvSettings()
    say = progress or (lambda _msg: None)
    if counts is None:
        say("reading transition counts from the store")
        counts = load_conv_counts(engine, unit=settings.unit)
    fingerprint = frame_digest(counts)
    stored = settings.to_dict()
    found = None if force else _reuse(engine, KIND, fingerprint, stored, DESCRIPTIONS)
    if found is not None:
        say("unchanged data and settings: reusing the stored conversation analysis")
        analysis_id, tables = found
    else:
        say(f"shift rates, contrasts and t-tests over {settings.unit}")
        tables = conv_audit_tables(counts, settings)
        analysis_id = save_analysis(
            engine, kind=KIND, status="ok", data_fingerprint=fingerprint,
            system_fingerprints=_system_fingerprints(counts), settings=stored,
            tables=tables, descriptions=DESCRIPTIONS,
        )  # fmt: skip
    result = ConvResult(analysis_id, fingerprint, tables, reused=found is not None)
    if settings.bayes is None:
        return result
    b_stored = settings.to_dict(bayes=True)
    b_found = (
        None if force else _reuse(engine, BAYES_KIND, fingerprint, b_stored, BAYES_DESCRIPTIONS)
    )
    if b_found is not None:
        say("unchanged data and settings: reusing the stored Bayesian fit")
        b_id, b_tables = b_found
        diag = b_tables.get("conv_bayes_diagnostics", pd.DataFrame())
        ok = bool(diag["passed"].iloc[-1]) if len(diag) else False
        return _with_bayes(result, b_id, b_tables, ok, "")
    b = settings.bayes
    say(f"sampling the hierarchical model ({b.sampler}, {b.chains} chains x {b.draws} draws)")
    fit, b_tables = conv_bayes_audit_tables(counts, settings, sampler_progress=sampler_progress)
    b_id = save_analysis(
        engine, kind=BAYES_KIND, status="ok" if fit.converged else "not_converged",
        data_fingerprint=fingerprint, system_fingerprints=_system_fingerprints(counts),
        settings=b_stored, tables=b_tables, descriptions=BAYES_DESCRIPTIONS,
        message=fit.message,
        posteriors={"idata": fit.idata},
    )  # fmt: skip
    return _with_bayes(result, b_id, b_tables, fit.converged, fit.message)


def _with_bayes(r: ConvResult, b_id: int, tables: dict, ok: bool, message: str) -> ConvResult:
    return ConvResult(r.id, r.data_fingerprint, r.tables, r.reused, b_id, tables, ok, message)
