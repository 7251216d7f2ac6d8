"""SQLModel tables of the cuegap store.

The audited LLM is a *system*. Every table change ships with an Alembic migration in
``cuegap/schema/migrations/versions``; ``tests/test_schema.py`` checks that the
migrations produce exactly these tables.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Column,
    Index,
    Integer,
    LargeBinary,
    Text,
    UniqueConstraint,
)
from sqlmodel import Field, SQLModel

# SQLite only auto-increments INTEGER PRIMARY KEY; PostgreSQL gets BIGINT.
_BigIntPK = BigInteger().with_variant(Integer(), "sqlite")


class System(SQLModel, table=True):
    """An audited LLM (never called a "model": models are statistical here)."""

    __tablename__ = "system"

    id: int | None = Field(default=None, primary_key=True)
    name: str = Field(max_length=200, unique=True, index=True)
    version: str | None = Field(default=None, max_length=200)
    provider: str | None = Field(default=None, max_length=200)
    meta: dict[str, Any] | None = Field(default=None, sa_column=Column("metadata", JSON))
    created_at: datetime


class ItemBank(SQLModel, table=True):
    """A set of dilemmas and the prompt items built on them."""

    __tablename__ = "item_bank"

    id: int | None = Field(default=None, primary_key=True)
    name: str = Field(max_length=200, unique=True, index=True)
    description: str | None = Field(default=None, sa_column=Column(Text))
    source: str | None = Field(default=None, sa_column=Column(Text))
    genders: list[str] | None = Field(default=None, sa_column=Column(JSON))
    races: list[str] | None = Field(default=None, sa_column=Column(JSON))
    source_path: str | None = Field(default=None, sa_column=Column(Text))
    sha256: str = Field(max_length=64)
    ingested_at: datetime


class Dilemma(SQLModel, table=True):
    """One moral dilemma with its majority-vote annotations (Section 3.1)."""

    __tablename__ = "dilemma"
    __table_args__ = (UniqueConstraint("bank_id", "dilemma_key"),)

    id: int | None = Field(default=None, primary_key=True)
    bank_id: int = Field(foreign_key="item_bank.id", index=True)
    dilemma_key: str = Field(max_length=100)
    topic_group: str | None = Field(default=None, max_length=100)
    person_status: str | None = Field(default=None, max_length=20)
    benefit_option: str = Field(max_length=10)
    human_sys1: str | None = Field(default=None, max_length=10)
    human_sys2: str | None = Field(default=None, max_length=10)


class Annotation(SQLModel, table=True):
    """One annotator's label of one dilemma field, for agreement statistics (Appendix B)."""

    __tablename__ = "annotation"
    __table_args__ = (UniqueConstraint("dilemma_id", "annotator", "field"),)

    id: int | None = Field(default=None, primary_key=True)
    dilemma_id: int = Field(foreign_key="dilemma.id", index=True)
    annotator: str = Field(max_length=100)
    field: str = Field(max_length=50)
    value: str | None = Field(default=None, max_length=50)


class Item(SQLModel, table=True):
    """A prompt item: a dilemma under one condition, difficulty and demographic combination."""

    __tablename__ = "item"
    __table_args__ = (UniqueConstraint("bank_id", "item_key"),)

    id: int | None = Field(default=None, primary_key=True)
    bank_id: int = Field(foreign_key="item_bank.id", index=True)
    item_key: str = Field(max_length=100)
    dilemma_id: int = Field(foreign_key="dilemma.id", index=True)
    condition: str = Field(max_length=20)
    difficulty: str | None = Field(default=None, max_length=20)
    puzzle_id: str | None = Field(default=None, max_length=100)
    solution_shape: str | None = Field(default=None, max_length=20)
    combination_id: str | None = Field(default=None, max_length=50)


class ItemIndividual(SQLModel, table=True):
    """One of the individuals (A-D) of an item with its demographic assignment."""

    __tablename__ = "item_individual"
    __table_args__ = (UniqueConstraint("item_id", "label"),)

    id: int | None = Field(default=None, primary_key=True)
    item_id: int = Field(foreign_key="item.id", index=True)
    label: str = Field(max_length=1)
    gender: str = Field(max_length=50)
    race: str = Field(max_length=50)
    name: str | None = Field(default=None, max_length=100)
    solution: dict[str, str] | None = Field(default=None, sa_column=Column(JSON))


class Run(SQLModel, table=True):
    """One source file of responses written by a runner."""

    __tablename__ = "run"

    id: int | None = Field(default=None, primary_key=True)
    source_sha256: str = Field(max_length=64, unique=True, index=True)
    source_path: str = Field(sa_column=Column(Text, nullable=False))
    format: str = Field(max_length=50)
    runner: str | None = Field(default=None, max_length=200)
    runner_version: str | None = Field(default=None, max_length=100)
    bank_id: int | None = Field(default=None, foreign_key="item_bank.id")
    started_at: str | None = Field(default=None, max_length=50)
    settings: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON))
    ingested_at: datetime


class IngestBatch(SQLModel, table=True):
    """One ``cuegap ingest`` pass over one file, with its line accounting."""

    __tablename__ = "ingest_batch"

    id: int | None = Field(default=None, primary_key=True)
    run_id: int | None = Field(default=None, foreign_key="run.id", index=True)
    source_path: str = Field(sa_column=Column(Text, nullable=False))
    source_sha256: str = Field(max_length=64, index=True)
    format: str = Field(max_length=50)
    status: str = Field(max_length=20)  # running | completed | failed
    lines_read: int = 0
    stored: int = 0
    duplicate: int = 0
    quarantined: int = 0
    error: str | None = Field(default=None, sa_column=Column(Text))
    # The runner mapping this pass read the file with: path, sha256 and the TOML text.
    mapping: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON))
    started_at: datetime
    finished_at: datetime | None = None


class Quarantine(SQLModel, table=True):
    """An input line that could not be stored, with the reason; nothing is dropped silently."""

    __tablename__ = "quarantine"
    __table_args__ = (UniqueConstraint("source_sha256", "line_no"),)

    id: int | None = Field(default=None, primary_key=True)
    batch_id: int = Field(foreign_key="ingest_batch.id", index=True)
    source_path: str = Field(sa_column=Column(Text, nullable=False))
    source_sha256: str = Field(max_length=64)
    line_no: int
    field: str | None = Field(default=None, max_length=100)
    reason: str = Field(sa_column=Column(Text, nullable=False))
    raw: str = Field(sa_column=Column(Text, nullable=False))
    created_at: datetime
    # Set when a later ingest stores the line (or finds it stored): kept as history, no
    # longer counted by status and reports.
    resolved_at: datetime | None = None
    resolved_batch_id: int | None = None


class Response(SQLModel, table=True):
    """One system output to one probe, with the raw text always kept.

    ``response_key`` is a hash of the natural key (system, bank, item, probe, individual,
    consequences, prompt variant, repeat) and makes ingest idempotent; ``content_hash``
    tells a repeated line from a conflicting one. ``condition`` and ``difficulty`` are
    copied from the item so that aggregation is one indexed GROUP BY.
    """

    __tablename__ = "response"
    __table_args__ = (
        Index("ix_response_agg", "system_id", "condition", "probe", "consequences"),
        Index("ix_response_item", "item_id", "system_id"),
    )

    id: int | None = Field(default=None, sa_column=Column(_BigIntPK, primary_key=True))
    response_key: str = Field(max_length=32, unique=True)
    content_hash: str = Field(max_length=32)
    run_id: int = Field(foreign_key="run.id", index=True)
    batch_id: int = Field(foreign_key="ingest_batch.id")
    system_id: int = Field(foreign_key="system.id")
    item_id: int = Field(foreign_key="item.id")
    condition: str = Field(max_length=20)
    difficulty: str | None = Field(default=None, max_length=20)
    probe: str = Field(max_length=20)
    individual: str | None = Field(default=None, max_length=1)
    consequences: bool = True
    prompt_variant: str = Field(default="v0", max_length=50)
    repeat: int = 0
    raw_text: str = Field(sa_column=Column(Text, nullable=False))
    prompt: str | None = Field(default=None, sa_column=Column(Text))
    sample_id: str | None = Field(default=None, max_length=200)
    parsed_answer: str | None = Field(default=None, max_length=10)
    selected_individual: str | None = Field(default=None, max_length=1)
    parse_status: str = Field(max_length=10)
    abstained: bool
    assignment: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON))
    recovered: str | None = Field(default=None, max_length=26)
    puzzle_correct: bool | None = None
    runner_result: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON))
    source_line: int


class Analysis(SQLModel, table=True):
    """One run of ``cuegap analyze``: what went in, with which settings, and its status.

    ``data_fingerprint`` hashes the aggregated counts the statistics read (so re-ingesting
    the same data, or splitting a file in two, gives the same fingerprint);
    ``system_fingerprints`` holds the same per system, for incremental re-analysis.
    """

    __tablename__ = "analysis"

    id: int | None = Field(default=None, primary_key=True)
    kind: str = Field(max_length=20, index=True)  # frequentist | bayesian
    status: str = Field(max_length=20)  # ok | not_converged | failed
    data_fingerprint: str = Field(max_length=64, index=True)
    system_fingerprints: dict[str, str] | None = Field(default=None, sa_column=Column(JSON))
    settings: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON))
    versions: dict[str, str] | None = Field(default=None, sa_column=Column(JSON))
    message: str | None = Field(default=None, sa_column=Column(Text))
    created_at: datetime
    # Revision 0005: the content digest sealed with the analysis (cuegap.ledger).
    content_digest: str | None = Field(default=None, max_length=64)


class AnalysisTable(SQLModel, table=True):
    """One tidy result table of an analysis, stored as JSON (pandas ``orient="table"``)."""

    __tablename__ = "analysis_table"
    __table_args__ = (UniqueConstraint("analysis_id", "name"),)

    id: int | None = Field(default=None, primary_key=True)
    analysis_id: int = Field(foreign_key="analysis.id", index=True)
    name: str = Field(max_length=100)
    description: str | None = Field(default=None, sa_column=Column(Text))
    n_rows: int
    data: str = Field(sa_column=Column(Text, nullable=False))


class AnalysisArtifact(SQLModel, table=True):
    """A binary artifact of an analysis (e.g. the NetCDF InferenceData of a Bayesian fit)."""

    __tablename__ = "analysis_artifact"
    __table_args__ = (UniqueConstraint("analysis_id", "name"),)

    id: int | None = Field(default=None, primary_key=True)
    analysis_id: int = Field(foreign_key="analysis.id", index=True)
    name: str = Field(max_length=100)
    media_type: str = Field(max_length=100)
    sha256: str = Field(max_length=64)
    content: bytes = Field(sa_column=Column(LargeBinary, nullable=False))


class Report(SQLModel, table=True):
    """A rendered audit report, registered with its hash and the analysis it came from."""

    __tablename__ = "report"

    id: int | None = Field(default=None, primary_key=True)
    analysis_id: int = Field(foreign_key="analysis.id", index=True)
    data_fingerprint: str = Field(max_length=64)
    format: str = Field(max_length=10)  # html | pdf
    path: str = Field(sa_column=Column(Text, nullable=False))
    sha256: str = Field(max_length=64, index=True)
    version: int = 1
    supersedes_id: int | None = Field(default=None, foreign_key="report.id")
    created_at: datetime
    # The HTML the file was rendered from (the file itself for HTML): what a reviewer saw,
    # kept so that a signed copy reproduces it exactly. NULL for reports registered before
    # revision 0005.
    html: str | None = Field(default=None, sa_column=Column(Text))
    # The content digest of the analysis when the report was registered (see cuegap.ledger).
    analysis_digest: str | None = Field(default=None, max_length=64)


class SignOff(SQLModel, table=True):
    """An append-only review decision on a report, hash-chained to the previous record.

    ``record_hash`` is the SHA-256 of the record's canonical JSON including ``prev_hash``,
    so editing, deleting or reordering a row breaks the chain that ``cuegap verify`` walks.
    """

    __tablename__ = "signoff"

    id: int | None = Field(default=None, primary_key=True)
    seq: int = Field(unique=True)
    report_id: int = Field(foreign_key="report.id", index=True)
    report_sha256: str = Field(max_length=64)
    reviewer: str = Field(max_length=200)
    decision: str = Field(max_length=30)  # approve | reject | changes-requested
    comment: str | None = Field(default=None, sa_column=Column(Text))
    signed_at: str = Field(max_length=40)  # ISO 8601 UTC, hashed as text
    prev_hash: str = Field(max_length=64)
    record_hash: str = Field(max_length=64, unique=True)
    # Revision 0005: what the record hash also covers (``record_version`` 2), and an
    # optional Ed25519 signature of the record hash by the reviewer's own key.
    record_version: int = Field(default=1)
    analysis_digest: str | None = Field(default=None, max_length=64)
    ledger_head: str | None = Field(default=None, max_length=64)
    key_id: str | None = Field(default=None, max_length=64)
    public_key: str | None = Field(default=None, sa_column=Column(Text))
    signature: str | None = Field(default=None, sa_column=Column(Text))


class LedgerEntry(SQLModel, table=True):
    """One entry of the store's append-only, hash-chained ledger.

    Every ingest batch, item bank, system record, analysis, registered report and sign-off
    that cuegap writes gets an entry whose ``digest`` covers that object's content as
    written; ``entry_hash`` covers the entry and ``prev_hash``, so editing, deleting,
    inserting or reordering entries breaks the chain. ``cuegap verify`` recomputes every
    digest from the live rows. Entry 1 (kind ``genesis``) records, in ``detail``, the
    highest ids that existed when the ledger began: older objects are not covered.
    """

    __tablename__ = "ledger"
    __table_args__ = (Index("ix_ledger_kind_ref", "kind", "ref_id"),)

    seq: int = Field(primary_key=True, sa_column_kwargs={"autoincrement": False})
    kind: str = Field(max_length=20)
    ref_id: int | None = Field(default=None)
    digest: str = Field(max_length=64)
    detail: str | None = Field(default=None, sa_column=Column(Text))
    recorded_at: str = Field(max_length=40)
    prev_hash: str = Field(max_length=64)
    entry_hash: str = Field(max_length=64, unique=True)


class StoreLock(SQLModel, table=True):
    """A named advisory lock held in the store (e.g. by a scheduled re-analysis)."""

    __tablename__ = "store_lock"

    name: str = Field(max_length=100, primary_key=True)
    holder: str = Field(max_length=200)
    acquired_at: datetime
    expires_at: datetime
