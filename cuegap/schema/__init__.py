"""The relational store: SQLModel tables, engines, migrations and aggregation queries.

Depends on sqlmodel, sqlalchemy, alembic and pandas; never imports cuegap.models or
cuegap.reports.
"""

from cuegap.schema._aggregate import COUNT_COLUMNS, decision_counts
from cuegap.schema._engine import DEFAULT_DB_FILE, ENV_VAR, describe_url, make_engine, resolve_url
from cuegap.schema._migrate import current_revision, head_revision, upgrade
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
    Response,
    Run,
    System,
)

__all__ = [
    "COUNT_COLUMNS",
    "DEFAULT_DB_FILE",
    "ENV_VAR",
    "Analysis",
    "AnalysisArtifact",
    "AnalysisTable",
    "Annotation",
    "Dilemma",
    "IngestBatch",
    "Item",
    "ItemBank",
    "ItemIndividual",
    "Quarantine",
    "Response",
    "Run",
    "StoreStatus",
    "System",
    "current_revision",
    "decision_counts",
    "describe_url",
    "head_revision",
    "make_engine",
    "resolve_url",
    "store_status",
    "upgrade",
]
