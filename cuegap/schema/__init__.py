"""The relational store: SQLModel tables, engines, migrations and aggregation queries.

Depends on sqlmodel, sqlalchemy, alembic and pandas; never imports cuegap.models or
cuegap.reports. The query modules (which need pandas) load on first use, so that
``cuegap ingest`` and the other commands that do not need them start faster.
"""

from typing import TYPE_CHECKING, Any

from cuegap.schema import _ledger as ledger
from cuegap.schema._conv_tables import ConvAgent, ConvConfig, Conversation, ConvOpinion
from cuegap.schema._conv_tally import ConvTally, compact_conv_tally, conv_tally_mismatches
from cuegap.schema._counted import counted_batches, counted_tally
from cuegap.schema._engine import DEFAULT_DB_FILE, ENV_VAR, describe_url, make_engine, resolve_url
from cuegap.schema._migrate import (
    current_revision,
    head_revision,
    known_revision,
    newer_store_error,
    upgrade,
)
from cuegap.schema._qa_tables import (
    IndividualAxis,
    QAItem,
    QAOption,
    QAOptionAxis,
    QAResponse,
    QAResponseFactor,
)
from cuegap.schema._qa_tally import QA_TALLY_KEYS, QATally, compact_qa_tally, qa_tally_mismatches
from cuegap.schema._snapshot import read_snapshot
from cuegap.schema._tables import (
    Analysis,
    AnalysisArtifact,
    AnalysisTable,
    Annotation,
    Dilemma,
    IngestBatch,
    Item,
    ItemBank,
    ItemIndividual,
    LedgerEntry,
    Quarantine,
    Report,
    Response,
    Run,
    SignOff,
    StoreLock,
    System,
)
from cuegap.schema._tally import (
    TALLY_KEYS,
    ResponseTally,
    compact_tally,
    max_response_id,
    tally_mismatches,
    tally_new_responses,
)

__all__ = [
    "ABSTENTION_COLUMNS",
    "AGREEMENT_COLUMNS",
    "COUNT_COLUMNS",
    "DEFAULT_DB_FILE",
    "DIGEST_CHUNK",
    "ENV_VAR",
    "QA_COUNT_COLUMNS",
    "QA_TALLY_KEYS",
    "RECOVERY_COLUMNS",
    "RESPONSE_COLUMNS",
    "RUNNER_AGREES",
    "RUNNER_DIFFERS",
    "RUNNER_UNREAD",
    "STATUS_COLUMNS",
    "TALLY_KEYS",
    "TARGET_LOC_COLUMNS",
    "Analysis",
    "AnalysisArtifact",
    "AnalysisTable",
    "Annotation",
    "BatchLock",
    "ConvAgent",
    "ConvConfig",
    "ConvOpinion",
    "ConvTally",
    "Conversation",
    "Dilemma",
    "IndividualAxis",
    "IngestBatch",
    "Item",
    "ItemBank",
    "ItemIndividual",
    "LedgerEntry",
    "Provenance",
    "QAItem",
    "QAOption",
    "QAOptionAxis",
    "QAResponse",
    "QAResponseFactor",
    "QATally",
    "Quarantine",
    "Report",
    "Response",
    "ResponseTally",
    "Run",
    "SignOff",
    "StoreLock",
    "StoreStatus",
    "System",
    "abstention_counts",
    "annotation_table",
    "compact_conv_tally",
    "compact_qa_tally",
    "compact_tally",
    "conv_counts",
    "conv_tally_mismatches",
    "counted_batches",
    "counted_tally",
    "current_revision",
    "decision_counts",
    "describe_url",
    "head_revision",
    "is_alive",
    "known_revision",
    "latest_analysis_id",
    "ledger",
    "make_engine",
    "max_response_id",
    "newer_store_error",
    "provenance",
    "pv_counts",
    "pv_factor_names",
    "qa_counts",
    "qa_runner_agreement",
    "qa_status",
    "qa_tally_mismatches",
    "qa_tally_rows",
    "qa_target_loc_items",
    "raw_examples",
    "read_snapshot",
    "recovery_counts",
    "resolve_url",
    "status_counts",
    "store_status",
    "system_table",
    "tally_mismatches",
    "tally_new_responses",
    "tally_rows",
    "transitions",
    "upgrade",
]

_LAZY = {
    "cuegap.schema._liveness": (
        "BatchLock",
        "is_alive",
    ),
    "cuegap.schema._ledger": (
        "DIGEST_CHUNK",
        "RESPONSE_COLUMNS",
    ),
    "cuegap.schema._qa_tally": ("qa_tally_rows",),
    "cuegap.schema._conv_tally": (
        "tally_rows",
        "transitions",
    ),
    "cuegap.schema._conv_aggregate": ("conv_counts",),
    "cuegap.schema._provenance": (
        "Provenance",
        "provenance",
        "raw_examples",
    ),
    "cuegap.schema._pv_aggregate": (
        "pv_counts",
        "pv_factor_names",
    ),
    "cuegap.schema._qa_aggregate": (
        "QA_COUNT_COLUMNS",
        "qa_counts",
        "qa_status",
    ),
    "cuegap.schema._queries": (
        "StoreStatus",
        "latest_analysis_id",
        "store_status",
    ),
    "cuegap.schema._aggregate": (
        "ABSTENTION_COLUMNS",
        "COUNT_COLUMNS",
        "RECOVERY_COLUMNS",
        "STATUS_COLUMNS",
        "abstention_counts",
        "annotation_table",
        "decision_counts",
        "recovery_counts",
        "status_counts",
        "system_table",
    ),
    "cuegap.schema._qa_agreement": (
        "AGREEMENT_COLUMNS",
        "RUNNER_AGREES",
        "RUNNER_DIFFERS",
        "RUNNER_UNREAD",
        "qa_runner_agreement",
    ),
    "cuegap.schema._qa_targets": ("TARGET_LOC_COLUMNS", "qa_target_loc_items"),
}
_WHERE = {name: module for module, names in _LAZY.items() for name in names}


def __getattr__(name: str) -> Any:
    """Import the pandas-based query modules on first access (PEP 562)."""
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'cuegap.schema' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs
    from cuegap.schema._aggregate import (
        ABSTENTION_COLUMNS,
        COUNT_COLUMNS,
        RECOVERY_COLUMNS,
        STATUS_COLUMNS,
        abstention_counts,
        annotation_table,
        decision_counts,
        recovery_counts,
        status_counts,
        system_table,
    )
    from cuegap.schema._conv_aggregate import conv_counts
    from cuegap.schema._conv_tally import tally_rows, transitions
    from cuegap.schema._ledger import DIGEST_CHUNK, RESPONSE_COLUMNS
    from cuegap.schema._liveness import BatchLock, is_alive
    from cuegap.schema._provenance import Provenance, provenance, raw_examples
    from cuegap.schema._pv_aggregate import pv_counts, pv_factor_names
    from cuegap.schema._qa_aggregate import QA_COUNT_COLUMNS, qa_counts, qa_status
    from cuegap.schema._qa_agreement import (
        AGREEMENT_COLUMNS,
        RUNNER_AGREES,
        RUNNER_DIFFERS,
        RUNNER_UNREAD,
        qa_runner_agreement,
    )
    from cuegap.schema._qa_tally import qa_tally_rows
    from cuegap.schema._qa_targets import TARGET_LOC_COLUMNS, qa_target_loc_items
    from cuegap.schema._queries import StoreStatus, latest_analysis_id, store_status
