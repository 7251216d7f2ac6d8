"""The one place a report reads a stored Bayesian analysis (issue 4's tables).

Everything Bayesian-specific is in :func:`load_bayesian`: it maps the stored tables'
column names onto the few the report uses, so a renamed column is a one-line change here.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from sqlalchemy import select
from sqlalchemy.engine import Engine

from cuegap.audit import load_table
from cuegap.designs.dilemma._analysis import bayes_answering
from cuegap.designs.dilemma._analysis_settings import AnalysisSettings
from cuegap.schema import Analysis


@dataclass
class BayesResults:
    """What the report shows from a Bayesian analysis.

    Attributes
    ----------
    analysis_id : int
        The stored Bayesian analysis.
    status : str
        ``ok`` or e.g. ``not_converged``.
    message : str
        The analysis's message (why it did not converge, say).
    gap : DataFrame
        Macro gap per system: ``system``, ``gap_pp``, ``gap_sd_pp``, ``gap_low_pp``,
        ``gap_high_pp`` (90 % interval), ``p_gap_gt_delta``, ``p_abs_lt_delta``.
    ranks : DataFrame
        ``system``, ``ranking`` (direct, puzzled, gap), ``median``, ``q25``, ``q75``,
        ``q05``, ``q95``.
    diagnostics : DataFrame
        The sampler's diagnostics as stored (one row per attempt).
    verdicts : DataFrame or None
        A ``verdicts`` table stored with the Bayesian analysis, if any.
    """

    analysis_id: int
    status: str
    message: str
    gap: pd.DataFrame
    ranks: pd.DataFrame
    diagnostics: pd.DataFrame
    verdicts: pd.DataFrame | None


def _pick(df: pd.DataFrame, *names: str) -> pd.Series:
    """The first of ``names`` that is a column of ``df``, else a NaN column."""
    for name in names:
        if name in df.columns:
            return df[name]
    return pd.Series(np.nan, index=df.index)


def _table(engine: Engine, name: str, analysis_id: int) -> pd.DataFrame | None:
    try:
        return load_table(engine, name, analysis_id)
    except KeyError:
        return None


def load_bayesian(
    engine: Engine, data_fingerprint: str, settings: AnalysisSettings | None = None
) -> tuple[BayesResults | None, str]:
    """The newest Bayesian analysis of the same data and question, or None with the reason.

    Parameters
    ----------
    engine : Engine
        The store.
    data_fingerprint : str
        Fingerprint of the frequentist analysis the report is about; a Bayesian analysis
        of other data is ignored (and the returned note says so).
    settings : AnalysisSettings, optional
        The report's analysis settings: a fit that compared other conditions, used the
        other consequences setting or another verdict policy is not used either (its
        verdicts would answer another question).

    Returns
    -------
    (BayesResults or None, str)
        The results and an empty note, or None and a one-line note for the report.
    """
    found, note = bayes_answering(engine, data_fingerprint, settings)
    if found is None:
        return None, note
    with engine.connect() as conn:
        row = conn.execute(
            select(Analysis.status, Analysis.message).where(Analysis.id == found)
        ).one()
    gap_t = _table(engine, "bayes_gap", found)
    gap = pd.DataFrame(columns=["system"])
    if gap_t is not None and len(gap_t):
        macro = gap_t[_pick(gap_t, "group_type").eq("macro") | _pick(gap_t, "group").eq("macro")]
        macro = macro.drop_duplicates("system")
        gap = pd.DataFrame(
            {
                "system": macro["system"],
                "gap_pp": _pick(macro, "gap_mean", "gap_pp", "gap"),
                "gap_sd_pp": _pick(macro, "gap_sd", "gap_sd_pp"),
                "gap_low_pp": _pick(macro, "gap_q05", "gap_low_pp", "gap_low"),
                "gap_high_pp": _pick(macro, "gap_q95", "gap_high_pp", "gap_high"),
                "p_gap_gt_delta": _pick(macro, "p_gap_gt_delta"),
                "p_abs_lt_delta": _pick(macro, "p_abs_lt_delta"),
            }
        ).reset_index(drop=True)
    ranks_t = _table(engine, "bayes_ranks", found)
    ranks = pd.DataFrame(columns=["system", "ranking"])
    if ranks_t is not None and len(ranks_t):
        ranks = pd.DataFrame(
            {
                "system": ranks_t["system"],
                "ranking": _pick(ranks_t, "ranking", "by"),
                "median": _pick(ranks_t, "rank_median", "median_rank", "rank"),
                "q25": _pick(ranks_t, "rank_q25", "rank_low50"),
                "q75": _pick(ranks_t, "rank_q75", "rank_high50"),
                "q05": _pick(ranks_t, "rank_q05", "rank_low90"),
                "q95": _pick(ranks_t, "rank_q95", "rank_high90"),
            }
        ).reset_index(drop=True)
    diag = _table(engine, "bayes_diagnostics", found)
    return (
        BayesResults(
            analysis_id=found,
            status=row.status,
            message=row.message or "",
            gap=gap,
            ranks=ranks,
            diagnostics=diag if diag is not None else pd.DataFrame(),
            verdicts=_table(engine, "verdicts", found),
        ),
        "",
    )
