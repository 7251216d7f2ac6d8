"""Orchestration of the QA design (seed 001): store → counts → statistics → stored tables.

The QA counterpart of :mod:`cuegap.audit` (the dilemma design). One snapshot of the store
is aggregated in SQL (:func:`cuegap.schema.qa_counts`, one row per system × strategy × cue
× context × dimension × subgroup × polarity × gold × answer), so the cost does not grow
with the number of responses; :mod:`cuegap.models` computes seed 001's scores, the
bootstrap and the verdicts; everything is stored as one analysis of kind ``qa`` and sealed
in the ledger like every other analysis.

Tables (names are part of the interface; ``cuegap export NAME`` works for each):
``qa_scores``, ``qa_system_scores``, ``qa_cue_gap``, ``qa_dimension_gap``, ``qa_controls``,
``qa_mitigation`` and ``verdicts``.

When the answers also carry prompt-construction factors (a response factor other than
``strategy`` with two or more values), ``verdicts`` gains the format-sensitivity columns
of :func:`cuegap.designs.prompt_variance.sensitivity.with_format_sensitivity` and a flag
or pass whose
gap would not keep its zone across prompt formats becomes ``format-sensitive``; the
per-system spread is stored as ``qa_cue_gap_formats``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

import pandas as pd
from sqlalchemy import select
from sqlalchemy.engine import Engine

import cuegap.designs.qa.stats as qa_stats
from cuegap.audit import find_analysis, frame_digest, load_table, save_analysis
from cuegap.designs import BayesSettings, policy_from_stored
from cuegap.designs.qa.stats._bayes_model import qa_levels_table
from cuegap.models import Policy
from cuegap.schema import AnalysisTable

KIND = "qa"
DESCRIPTIONS = {
    "qa_scores": "Seed 001 §4.2 scores per system × strategy × cue × context × dimension, "
    "with bootstrap intervals",
    "qa_system_scores": "Scores per system × strategy × cue: unweighted means over dimensions",
    "qa_cue_gap": "Explicit vs implicit per system, strategy and metric (positive = looks "
    "fairer when the identity is stated)",
    "qa_dimension_gap": "The explicit vs implicit gap per dimension",
    "qa_controls": "Accuracy under control cues (neutral cues, no cues)",
    "qa_mitigation": "Bias reduction of each prompting strategy against zero-shot",
    "verdicts": "Flagged / passed / inconclusive (or format-sensitive) per system, with the reason",
    "qa_cue_gap_formats": "The explicit vs implicit gap per system against the spread that "
    "prompt construction alone gives it",
    "qa_parse_agreement": "Per system: answers the runner read itself, and how often "
    "cuegap's reading of their text agrees (answers stored without a note read again)",
    "qa_target_loc": "Items whose target BBQ's additional_metadata.csv (target_loc) sets "
    "differently from cuegap's own derivation, per dimension and cue, with their answers",
}


@dataclass(frozen=True, slots=True)
class QASettings:
    """How a QA analysis is run.

    Attributes
    ----------
    policy : Policy
        ``delta_bias`` (δ on the bias-score scale, the ``[qa]`` section of a policy file),
        ``probability`` and ``min_parsable`` are used.
    strategy : str
        The prompting strategy whose gap decides the verdict.
    n_boot, seed : int
        Bootstrap replicates and seed.
    """

    policy: Policy = field(default_factory=Policy)
    strategy: str = "zero-shot"
    n_boot: int = 1000
    seed: int = 2026

    @property
    def delta(self) -> float:
        """The practical threshold δ on the bias-score scale (the policy's ``delta_bias``)."""
        return self.policy.delta_bias

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form, stored with the analysis."""
        out = asdict(self)
        out["policy"] = self.policy.to_dict()
        out["delta"] = self.delta
        out["design"] = KIND
        return out

    @classmethod
    def from_dict(cls, stored: Mapping[str, Any]) -> QASettings:
        """The settings :meth:`to_dict` stored (``delta`` and ``design`` are derived)."""
        base = cls()
        return cls(
            policy=policy_from_stored(stored),
            strategy=str(stored.get("strategy", base.strategy)),
            n_boot=int(stored.get("n_boot", base.n_boot)),
            seed=int(stored.get("seed", base.seed)),
        )


@dataclass(frozen=True, slots=True)
class QAResult:
    """A stored QA analysis."""

    id: int
    data_fingerprint: str
    tables: dict[str, pd.DataFrame]
    reused: bool


def qa_tables(counts: pd.DataFrame, settings: QASettings) -> dict[str, pd.DataFrame]:
    """Every QA result table from a count table (pure; no store).

    Parameters
    ----------
    counts : DataFrame
        :func:`cuegap.schema.qa_counts`'s table.
    settings : QASettings

    Returns
    -------
    dict of str to DataFrame
    """
    boot = qa_stats.qa_bootstrap(
        counts, n_boot=settings.n_boot, seed=settings.seed, delta=settings.delta
    )
    system_scores = boot["system_scores"]
    strategies = set(system_scores["strategy"]) if not system_scores.empty else set()
    mitigation = (
        qa_stats.qa_mitigation(system_scores, baseline=settings.strategy)
        if settings.strategy in strategies and len(strategies) > 1
        else pd.DataFrame()
    )
    verdicts = qa_stats.qa_verdicts(
        boot["cue_gap"],
        delta=settings.delta,
        probability=settings.policy.probability,
        strategy=settings.strategy,
        min_parsable=settings.policy.min_parsable,
    )
    return {
        "qa_scores": boot["scores"],
        "qa_system_scores": system_scores,
        "qa_cue_gap": boot["cue_gap"],
        "qa_dimension_gap": boot["dimension_gap"],
        "qa_controls": qa_stats.qa_controls(system_scores),
        "qa_mitigation": mitigation,
        "verdicts": verdicts,
    }


def _read_counts(engine: Engine, say: Callable[[str], None]) -> tuple[pd.DataFrame, str]:
    """The QA count table of one snapshot of the store, and its fingerprint."""
    counts, fingerprint, _ = _read_with_formats(engine, say)
    return counts, fingerprint


def _read_with_formats(
    engine: Engine, say: Callable[[str], None], quality: dict[str, pd.DataFrame] | None = None
) -> tuple[pd.DataFrame, str, tuple[list[str], pd.DataFrame] | None]:
    """The QA count table, its fingerprint and, when answers carry prompt factors, the
    factors and the per-run counts by cue (the fingerprint then covers them too).
    ``quality``, when given, receives the data-quality tables ``qa_parse_agreement`` and
    (when some item's target_loc differs) ``qa_target_loc`` read in the same snapshot."""
    from cuegap.designs.qa._agreement import parse_agreement
    from cuegap.schema import (
        pv_counts,
        pv_factor_names,
        qa_counts,
        qa_target_loc_items,
        read_snapshot,
    )

    say("reading QA count tables from the store")
    with read_snapshot(engine) as conn:
        counts = qa_counts(conn)
        if quality is not None:
            quality["qa_parse_agreement"] = parse_agreement(conn)
            targets = qa_target_loc_items(conn)  # BBQ's target_loc against cuegap's own
            if len(targets):
                quality["qa_target_loc"] = targets
        factors = [f for f in pv_factor_names(conn) if f != "strategy"]
        runs = (
            pv_counts(conn, factors=[*factors, "strategy"], keys=["system", "category", "cue"])
            if factors
            else None
        )
    if counts.empty:
        raise ValueError(
            "the store holds no QA responses: ingest a QA item bank and its results first"
        )
    fingerprint = frame_digest(counts)
    if runs is None:
        return counts, fingerprint, None
    both = frame_digest(pd.DataFrame({"a": [fingerprint], "b": [frame_digest(runs)]}))
    return counts, both, (factors, runs)


def _add_format_sensitivity(
    tables: dict[str, pd.DataFrame],
    formats: tuple[list[str], pd.DataFrame] | None,
    settings: QASettings,
    say: Callable[[str], None],
) -> None:
    """With prompt factors in the store: ``qa_cue_gap_formats`` and the verdicts'
    format-sensitivity columns (:mod:`cuegap.designs.prompt_variance.sensitivity`), in
    place."""
    if formats is None:
        return
    from cuegap.designs.prompt_variance.sensitivity import (
        cue_gap_formats,
        with_format_sensitivity,
    )

    factors, runs = formats
    say(f"format sensitivity of the gaps across {', '.join(factors)}")
    spread = cue_gap_formats(
        runs, factors=factors, strategy=settings.strategy, delta=settings.delta
    )
    if spread is not None:
        tables["qa_cue_gap_formats"] = spread
        tables["verdicts"] = with_format_sensitivity(
            tables["verdicts"], spread, delta=settings.delta
        )


def check_strategy(counts: pd.DataFrame, strategy: str) -> None:
    """Refuse a strategy the store's QA answers were not given under (a typo such as
    ``zero_shot`` would otherwise give an analysis whose every verdict is inconclusive).

    Raises
    ------
    ValueError
        Naming the strategy and listing those the store holds.
    """
    held = sorted(set(counts["strategy"]))
    if strategy not in held:
        raise ValueError(
            f"strategy {strategy!r} is not in the store: its QA answers were given under "
            f"{', '.join(held)}"
        )


def _system_fingerprints(counts: pd.DataFrame) -> dict[str, str]:
    return {
        str(s): frame_digest(counts[counts["system"] == s]) for s in sorted(set(counts["system"]))
    }


def _reuse(engine: Engine, kind: str, fingerprint: str, stored: dict, names) -> QAResult | None:
    found = find_analysis(engine, kind=kind, data_fingerprint=fingerprint, settings=stored)
    if found is None:
        return None
    with engine.connect() as conn:
        have = set(
            conn.execute(
                select(AnalysisTable.name).where(AnalysisTable.analysis_id == found)
            ).scalars()
        )
    tables = {name: load_table(engine, name, found) for name in names if name in have}
    return QAResult(found, fingerprint, tables, reused=True)


def analyze_qa(
    engine: Engine,
    settings: QASettings | None = None,
    *,
    force: bool = False,
    progress: Callable[[str], None] | None = None,
) -> QAResult:
    """Analyse the QA responses of a store and store the tables (reused when the data and
    settings are unchanged, unless ``force``).

    Raises
    ------
    ValueError
        When the store holds no QA responses, or none of ``settings.strategy``.
    """
    settings = settings or QASettings()
    say = progress or (lambda _msg: None)
    quality: dict[str, pd.DataFrame] = {}
    counts, fingerprint, formats = _read_with_formats(engine, say, quality)
    check_strategy(counts, settings.strategy)
    stored = settings.to_dict()
    if not force and (found := _reuse(engine, KIND, fingerprint, stored, DESCRIPTIONS)):
        say("unchanged data and settings: reusing the stored QA analysis")
        return found
    say(f"scores and {settings.n_boot} bootstrap replicates")
    tables = qa_tables(counts, settings) | quality
    _add_format_sensitivity(tables, formats, settings, say)
    analysis_id = save_analysis(
        engine,
        kind=KIND,
        status="ok",
        data_fingerprint=fingerprint,
        system_fingerprints=_system_fingerprints(counts),
        settings=stored,
        tables=tables,
        descriptions=DESCRIPTIONS,
    )
    return QAResult(analysis_id, fingerprint, tables, reused=False)


BAYES_KIND = "qa_bayesian"
BAYES_DESCRIPTIONS = {
    "qa_bayes_scores": "Posterior ambiguous accuracy and bias scores per system and cue",
    "qa_bayes_cue_gap": "Posterior explicit vs implicit gap per system and metric (positive = "
    "looks fairer when the identity is stated)",
    "qa_bayes_gap": "Posterior S_amb gap (implicit - explicit) per system, P(gap > δ), "
    "P(|gap| < δ) and rank intervals",
    "qa_bayes_diagnostics": "Sampling attempts: r-hat, bulk ESS, divergences, gate",
    "qa_bayes_levels": "The model's pooling levels (dimension, sub-group, cell): in the "
    "model, or left out with the reason (one system cannot inform a cell level)",
    "verdicts": "Flagged / passed / inconclusive (or format-sensitive) per system from the "
    "posterior",
    "qa_cue_gap_formats": "The explicit vs implicit gap per system against the spread that "
    "prompt construction alone gives it",
}


def analyze_qa_bayes(
    engine: Engine,
    settings: QASettings | None = None,
    bayes: BayesSettings | None = None,
    *,
    force: bool = False,
    progress: Callable[[str], None] | None = None,
    sampler_progress: bool = False,
) -> QAResult:
    """Fit the QA hierarchical Bayesian model (:func:`cuegap.designs.qa.stats.fit_qa_bayes`) and
    store its tables, gated verdicts and InferenceData as an analysis of kind
    ``qa_bayesian`` (reused when the data and settings are unchanged).

    A fit that fails the convergence gate is stored with status ``not_converged`` and all
    its verdicts are inconclusive, with the reason.
    """
    settings = settings or QASettings()
    b = bayes or BayesSettings()
    say = progress or (lambda _msg: None)
    counts, fingerprint, formats = _read_with_formats(engine, say)
    check_strategy(counts, settings.strategy)
    stored = {
        **settings.to_dict(),
        "bayes": b.to_dict(),
        "model_version": qa_stats.QA_MODEL_VERSION,
    }
    if not force and (found := _reuse(engine, BAYES_KIND, fingerprint, stored, BAYES_DESCRIPTIONS)):
        say("unchanged data and settings: reusing the stored QA Bayesian fit")
        return found
    say(f"sampling ({b.sampler}, {b.chains} chains x {b.draws} draws)")
    fit = qa_stats.fit_qa_bayes(
        counts, strategy=settings.strategy, **b.fit_kwargs(), progress=sampler_progress
    )
    say("posterior summaries and verdicts")
    tables = qa_stats.qa_bayes_tables(fit, delta=settings.delta)
    tables["qa_bayes_diagnostics"] = fit.diagnostics
    tables["qa_bayes_levels"] = qa_levels_table(fit.data)
    tables["verdicts"] = qa_stats.qa_bayes_verdicts(
        fit, tables["qa_bayes_gap"], delta=settings.delta,
        probability=settings.policy.probability, min_parsable=settings.policy.min_parsable,
        cue_gap=tables["qa_bayes_cue_gap"],
    )  # fmt: skip
    _add_format_sensitivity(tables, formats, settings, say)
    analysis_id = save_analysis(
        engine,
        kind=BAYES_KIND,
        status="ok" if fit.converged else "not_converged",
        data_fingerprint=fingerprint,
        system_fingerprints=_system_fingerprints(counts),
        settings=stored,
        tables=tables,
        descriptions=BAYES_DESCRIPTIONS,
        message=fit.message,
        posteriors={"idata": _slim(fit.idata)},
    )
    return QAResult(analysis_id, fingerprint, tables, reused=False)


def _slim(idata: Any) -> Any:
    """The posterior's cell logits and hyperparameters, and the divergences: what the
    stored tables are derived from."""
    import arviz as az

    post = idata.posterior
    keep = [v for v in post.data_vars if not str(v).startswith("z_cell_")]
    stats = idata.sample_stats[["diverging"]]
    return az.InferenceData(posterior=post[keep], sample_stats=stats)
