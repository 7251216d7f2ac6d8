"""The relational store: SQLModel tables, engines, migrations and aggregation queries.

Depends on sqlmodel, sqlalchemy, alembic and pandas; never imports cuegap.models or
cuegap.reports.
"""

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
from cuegap.schema._engine import DEFAULT_DB_FILE, ENV_VAR, describe_url, make_engine, resolve_url
from cuegap.schema._migrate import current_revision, head_revision, upgrade
from cuegap.schema._provenance import Provenance, provenance, raw_examples
from cuegap.schema._queries import StoreStatus, store_status
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
    Quarantine,
    Report,
    Response,
    Run,
    SignOff,
    StoreLock,
    System,
)

__all__ = [
    "ABSTENTION_COLUMNS",
    "COUNT_COLUMNS",
    "DEFAULT_DB_FILE",
    "ENV_VAR",
    "RECOVERY_COLUMNS",
    "STATUS_COLUMNS",
    "Analysis",
    "AnalysisArtifact",
    "AnalysisTable",
    "Annotation",
    "Dilemma",
    "IngestBatch",
    "Item",
    "ItemBank",
    "ItemIndividual",
    "Provenance",
    "Quarantine",
    "Report",
    "Response",
    "Run",
    "SignOff",
    "StoreLock",
    "StoreStatus",
    "System",
    "abstention_counts",
    "annotation_table",
    "current_revision",
    "decision_counts",
    "describe_url",
    "head_revision",
    "make_engine",
    "provenance",
    "raw_examples",
    "recovery_counts",
    "resolve_url",
    "status_counts",
    "store_status",
    "system_table",
    "upgrade",
]
