"""Orchestration of the moral-dilemma design (seed 000): counts -> stored analyses.

:func:`analyze` computes and stores every frequentist table (:data:`TABLES`);
:func:`analyze_bayes` fits the hierarchical Bayesian model and stores its tables, verdicts
and InferenceData; :func:`bayes_answering` finds the fit that answers a given question.
Statistics live in :mod:`cuegap.models`, SQL in :mod:`cuegap.schema`, storage in
:mod:`cuegap.audit._store`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import pandas as pd
from sqlalchemy import select
from sqlalchemy.engine import Engine

import cuegap.designs.dilemma.stats as dilemma_stats
from cuegap import models
from cuegap.audit import (
    AnalysisResult,
    find_analysis,
    load_idata,
    save_analysis,
)
from cuegap.audit import load_result as _load_result
from cuegap.audit import settings_key as _settings_key
from cuegap.designs import BayesSettings
from cuegap.designs.dilemma._analysis_formats import TABLE as FORMATS_TABLE
from cuegap.designs.dilemma._analysis_formats import apply_formats
from cuegap.designs.dilemma._analysis_settings import (
    AnalysisSettings,
    Progress,
    resolve_conditions,
    settings_from_dict,
)
from cuegap.designs.dilemma._analysis_tables import (
    TABLES,
    StoreData,
    _parsable,
    _recovery,
    fingerprints,
    frequentist_tables,
    load_store_data,
)
from cuegap.designs.dilemma.stats import condition_label
from cuegap.schema import Analysis, AnalysisArtifact


def analyze(
    engine: Engine,
    settings: AnalysisSettings | None = None,
    *,
    force: bool = False,
    progress: Progress | None = None,
    data: StoreData | None = None,
) -> AnalysisResult:
    """Compute every frequentist table from a store and store them as one analysis.

    When an analysis with the same data fingerprint and settings is already stored, it is
    returned instead (``reused=True``) unless ``force``. ``data`` passes count tables
    already read from this store in one snapshot (:func:`load_store_data`), so that a
    caller who needs them too reads the store once.

    Raises
    ------
    ValueError
        When the store holds no What-if decisions to analyse.
    """
    s = settings or AnalysisSettings()
    say = progress or (lambda _msg: None)
    if data is None:
        say("reading count tables from the store")
        data = load_store_data(engine)
    if data.decisions.empty:
        raise ValueError(
            "the store holds no What-if decisions with a Neutral baseline to analyse; "
            "ingest an item bank and responses first (cuegap ingest)"
        )
    s = resolve_conditions(data.decisions, s)
    fp, per_system = fingerprints(data)
    settings_dict = s.to_dict()
    if not force:
        found = find_analysis(
            engine, kind="frequentist", data_fingerprint=fp, settings=settings_dict
        )
        if found is not None:
            say("unchanged data and settings: reusing the stored analysis")
            return _load_result(engine, found, reused=True)
    tables = frequentist_tables(data, s, progress=say)
    say("storing results")
    analysis_id = save_analysis(
        engine,
        kind="frequentist",
        status="ok",
        data_fingerprint=fp,
        system_fingerprints=per_system,
        settings=settings_dict,
        tables=tables,
        descriptions=TABLES,
    )
    return _load_result(engine, analysis_id, tables=tables)


BAYES_TABLES_NOTE = (
    "A Bayesian analysis stores bayes_group_rates, bayes_gap, bayes_gap_by_condition, "
    "bayes_asymmetry, bayes_overall, bayes_ranks, bayes_pair_order, bayes_kendall_tau "
    "(see cuegap.designs.dilemma.stats.bayes_tables), bayes_diagnostics (one row per "
    "sampling attempt) "
    "and verdicts from the posterior; the InferenceData is stored as a NetCDF artifact."
)


def macro_posterior(bayes_gap: pd.DataFrame) -> pd.DataFrame:
    """The posterior input of :func:`cuegap.models.verdicts` from the ``bayes_gap`` table
    of :func:`cuegap.designs.dilemma.stats.bayes_tables`: per system the macro gap's posterior
    mean, 90%
    interval (5% and 95% quantiles) and P(gap > δ), P(|gap| < δ)."""
    macro = bayes_gap[bayes_gap["group_type"] == "macro"]
    return pd.DataFrame(
        {
            "system": macro["system"],
            "gap_pp": macro["gap_mean"],
            "gap_low_pp": macro["gap_q05"],
            "gap_high_pp": macro["gap_q95"],
            "p_gap_gt_delta": macro["p_gap_gt_delta"],
            "p_abs_lt_delta": macro["p_abs_lt_delta"],
        }
    )


def analyze_bayes(
    engine: Engine,
    settings: AnalysisSettings | None = None,
    bayes: BayesSettings | None = None,
    *,
    force: bool = False,
    progress: Progress | None = None,
    sampler_progress: bool = False,
    sample: bool = True,
    data: StoreData | None = None,
) -> AnalysisResult | None:
    """Fit the hierarchical Bayesian model and store its tables, verdicts and InferenceData.

    The frequentist analysis of the same data and settings is computed (or reused) first:
    its exclusions, parsable counts and puzzle recovery feed the verdicts. Refitting is
    skipped when a Bayesian analysis with the same data fingerprint, model version and
    settings is stored, unless ``force``. When a stored fit differs only in the verdict
    policy, its posterior is reused: tables and verdicts are recomputed under the new
    policy without sampling. With ``sample=False`` nothing is sampled: None is returned
    when no stored posterior fits. A fit that fails its convergence gate is stored with
    status ``not_converged`` and every verdict is inconclusive.
    """
    s = settings or AnalysisSettings()
    b = bayes or BayesSettings()
    say = progress or (lambda _msg: None)
    say("reading count tables from the store")
    if data is None:  # read once, for both the frequentist analysis and the fit
        data = load_store_data(engine)
    freq = analyze(engine, s, progress=say, data=data)
    used = settings_from_dict(freq.settings or {})  # the conditions analyze resolved
    s = replace(s, explicit=used.explicit, implicit=used.implicit, consequences=used.consequences)
    data_fp = freq.data_fingerprint
    excluded = sorted(freq.tables["exclusions"].query("excluded")["system"])
    settings_dict = {
        **s.to_dict(),
        "bayes": b.to_dict(),
        "model_version": dilemma_stats.MODEL_VERSION,
        "excluded": excluded,
    }
    donor = None
    if not force:  # the bootstrap settings do not matter here: the fit and policy do
        found = _same_fit(engine, data_fp, settings_dict, keys=(*FIT_KEYS, "policy"))
        if found is not None:
            say("unchanged data and settings: reusing the stored Bayesian fit")
            return _load_result(engine, found, reused=True)
        donor = _same_fit(engine, data_fp, settings_dict)
    if donor is None and not sample:
        return None
    if donor is not None:  # only the verdict policy differs: the posterior still holds
        say(f"same fit as Bayesian analysis {donor}: new verdicts from its posterior")
        fit = dilemma_stats.BayesFit.from_idata(load_idata(engine, donor))
    else:
        say(f"sampling ({b.sampler}, {b.chains} chains x {b.draws} draws)")
        fit = dilemma_stats.fit_bayes(
            data.decisions,
            explicit=s.explicit,
            implicit=s.implicit,
            consequences=s.consequences,
            **b.fit_kwargs(),
            progress=sampler_progress,
            exclude_systems=excluded,
        )
    say("posterior summaries and verdicts")
    tables = dilemma_stats.bayes_tables(fit, delta=s.policy.delta_pp)
    tables["bayes_diagnostics"] = fit.diagnostics
    posterior = macro_posterior(tables["bayes_gap"])
    tables["verdicts"] = models.verdicts(
        freq.tables["macro_gap"][freq.tables["macro_gap"]["consequences"] == s.consequences],
        s.policy,
        exclusions=freq.tables["exclusions"],
        parsable=_parsable(freq.tables, s),
        recovery=_recovery(freq.tables, s),
        posterior=posterior,
        converged=fit.converged,
        convergence_message=fit.message,
        level=0.9,
    )  # a gap that does not survive the prompt variants is never a clean flag or pass:
    tables["verdicts"] = apply_formats(tables["verdicts"], freq.tables.get(FORMATS_TABLE), s)
    say("storing results")
    analysis_id = save_analysis(
        engine,
        kind="bayesian",
        status="ok" if fit.converged else "not_converged",
        data_fingerprint=data_fp,
        system_fingerprints=fingerprints(data)[1],
        settings=settings_dict,
        tables=tables,
        message=fit.message,
        posteriors={"idata": fit.idata},
    )
    return _load_result(engine, analysis_id, tables=tables)


def _differences(stored: Mapping[str, Any], settings: AnalysisSettings) -> list[str]:
    """What about the question a Bayesian analysis answered differs from ``settings``."""
    out = []
    pair = [list(settings.explicit), list(settings.implicit)]
    if [stored.get("explicit"), stored.get("implicit")] != pair:
        have = " vs ".join(
            condition_label(tuple(c or ("?", None)))
            for c in (stored.get("explicit"), stored.get("implicit"))
        )
        out.append(f"it compared {have}")
    if stored.get("consequences", True) != settings.consequences:
        out.append("it used the other consequences setting")
    if stored.get("policy") != settings.policy.to_dict():
        out.append("its verdicts used another policy")
    return out


def bayes_answering(
    engine: Engine, data_fingerprint: str, settings: AnalysisSettings | None = None
) -> tuple[int | None, str]:
    """The newest Bayesian analysis of the same data and question, or None with the reason.

    Parameters
    ----------
    data_fingerprint : str
        Fingerprint of the frequentist analysis in question; a Bayesian analysis of other
        data is not used.
    settings : AnalysisSettings, optional
        That analysis's settings: a Bayesian analysis that compared other conditions, used
        the other consequences setting or another verdict policy is not used either (its
        verdicts answer another question).

    Returns
    -------
    (int or None, str)
        The analysis id and an empty note, or None and a one-line reason.
    """
    with engine.connect() as conn:
        rows = conn.execute(
            select(Analysis.id, Analysis.data_fingerprint, Analysis.settings)
            .where(Analysis.kind == "bayesian")
            .order_by(Analysis.id.desc())
        ).all()
    if not rows:
        return None, "no Bayesian fit is stored for this store"
    same_data = [r for r in rows if r.data_fingerprint == data_fingerprint]
    if not same_data:
        return None, (
            f"no Bayesian fit of this data: Bayesian analysis {rows[0].id} was fitted to other "
            "data (its fingerprint differs) and is not used"
        )
    if settings is None:
        return int(same_data[0].id), ""
    for r in same_data:
        if not _differences(r.settings or {}, settings):
            return int(r.id), ""
    why = "; ".join(_differences(same_data[0].settings or {}, settings))
    return None, (
        f"no Bayesian fit of this question: Bayesian analysis {same_data[0].id} is not used "
        f"({why}); run `cuegap analyze --bayes` with this report's settings"
    )


#: The settings a posterior depends on; the verdict policy and bootstrap settings are not.
FIT_KEYS = ("explicit", "implicit", "consequences", "bayes", "model_version", "excluded")


def _same_fit(
    engine: Engine,
    data_fingerprint: str,
    settings: dict[str, Any],
    keys: tuple[str, ...] = FIT_KEYS,
) -> int | None:
    """A stored Bayesian analysis whose posterior is the one ``settings`` would sample
    (and, with ``keys`` including ``policy``, whose verdicts used the same policy)."""
    stmt = (
        select(Analysis.id, Analysis.settings)
        .join(AnalysisArtifact, AnalysisArtifact.analysis_id == Analysis.id)
        .where(
            Analysis.kind == "bayesian",
            Analysis.data_fingerprint == data_fingerprint,
            AnalysisArtifact.name == "idata",
        )
        .order_by(Analysis.id.desc())
    )
    want = _settings_key({k: settings.get(k) for k in keys})
    with engine.connect() as conn:
        for row in conn.execute(stmt):
            stored = row.settings if not isinstance(row.settings, str) else json.loads(row.settings)
            if _settings_key({k: (stored or {}).get(k) for k in keys}) == want:
                return int(row.id)
    return None


__all__ = [
    "BAYES_TABLES_NOTE",
    "FIT_KEYS",
    "analyze",
    "analyze_bayes",
    "bayes_answering",
    "macro_posterior",
]
