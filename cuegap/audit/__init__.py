"""Orchestration: store -> count tables -> statistics -> stored, exportable result tables.

The CLI and notebook users call the same functions::

    from cuegap.audit import analyze, load_table
    from cuegap.schema import make_engine

    engine = make_engine("sqlite:///cuegap.db")
    result = analyze(engine)                 # computes and stores every table
    gap = load_table(engine, "macro_gap")    # tidy DataFrame, documented in TABLES

Everything statistical lives in :mod:`cuegap.models`; everything SQL in
:mod:`cuegap.schema`. This package only wires them together and stores the results, one
module per study design beside the storage they share:

- :mod:`cuegap.audit._store`: saving, finding and loading analyses, their tables and
  artifacts (every design);
- :mod:`cuegap.designs.dilemma._analysis`: the moral-dilemma design (seed 000), with its settings in
  ``_dilemma_settings`` and its frequentist tables in ``_dilemma_tables``.

Every name below stays importable from ``cuegap.audit``.
"""

from cuegap.audit._store import (
    AnalysisResult,
    export_table,
    find_analysis,
    find_table,
    frame_digest,
    latest_analysis_id,
    list_analyses,
    list_tables,
    load_idata,
    load_posteriors,
    load_result,
    load_table,
    posterior_artifacts,
    save_analysis,
    settings_key,
    table_from_json,
    table_to_json,
)

__all__ = [
    "AnalysisResult",
    "export_table",
    "find_analysis",
    "find_table",
    "frame_digest",
    "latest_analysis_id",
    "list_analyses",
    "list_tables",
    "load_idata",
    "load_posteriors",
    "load_result",
    "load_table",
    "posterior_artifacts",
    "save_analysis",
    "settings_key",
    "table_from_json",
    "table_to_json",
]
