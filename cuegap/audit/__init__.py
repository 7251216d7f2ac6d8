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
- :mod:`cuegap.audit.dilemma`: the moral-dilemma design (seed 000), with its settings in
  ``_dilemma_settings`` and its frequentist tables in ``_dilemma_tables``.

Every name below stays importable from ``cuegap.audit``.
"""

from cuegap.audit._dilemma_settings import (
    ALTERNATIVE_PAIR,
    DIFFICULTIES,
    FREQUENTIST_VERSION,
    AnalysisSettings,
    BayesSettings,
    Condition,
    Progress,
    parse_condition,
    resolve_conditions,
    settings_from_dict,
)
from cuegap.audit._dilemma_tables import (
    BOOTSTRAP_NOTE,
    TABLES,
    StoreData,
    fingerprints,
    frequentist_tables,
    load_store_data,
)
from cuegap.audit._store import (
    AnalysisResult,
    _frame_digest,
    export_table,
    find_analysis,
    find_table,
    latest_analysis_id,
    list_analyses,
    list_tables,
    load_idata,
    load_table,
    save_analysis,
    table_from_json,
    table_to_json,
)
from cuegap.audit.dilemma import (
    BAYES_TABLES_NOTE,
    FIT_KEYS,
    analyze,
    analyze_bayes,
    bayes_answering,
)
from cuegap.audit.qa import QASettings, analyze_qa, analyze_qa_bayes
from cuegap.models import condition_label

__all__ = [
    "ALTERNATIVE_PAIR",
    "BAYES_TABLES_NOTE",
    "BOOTSTRAP_NOTE",
    "DIFFICULTIES",
    "FIT_KEYS",
    "FREQUENTIST_VERSION",
    "TABLES",
    "AnalysisResult",
    "AnalysisSettings",
    "BayesSettings",
    "Condition",
    "Progress",
    "QASettings",
    "StoreData",
    "_frame_digest",
    "analyze",
    "analyze_bayes",
    "analyze_qa",
    "analyze_qa_bayes",
    "bayes_answering",
    "condition_label",
    "export_table",
    "find_analysis",
    "find_table",
    "fingerprints",
    "frequentist_tables",
    "latest_analysis_id",
    "list_analyses",
    "list_tables",
    "load_idata",
    "load_store_data",
    "load_table",
    "parse_condition",
    "resolve_conditions",
    "save_analysis",
    "settings_from_dict",
    "table_from_json",
    "table_to_json",
]
