"""SQLModel tables of the QA design (seed 001) and the tidy demographic axes.

Revision 0007. A QA item bank is an ``item_bank`` row with ``qa_item`` rows (context,
question, condition, polarity, cue), their ``qa_option`` rows (text and role: ``target``,
``non_target``, ``unknown``, or ``unresolved`` when the bank's metadata does not say which
option the stereotype is about) and any number of demographic axes per option
(``qa_option_axis``). A response to a QA item is a ``qa_response`` with the prompt
conditions it was produced under as named factors (``qa_response_factor``: strategy,
choice format, ...).

``individual_axis`` holds the demographics of the dilemma design's individuals as tidy
(individual, axis, value) rows; the ``gender`` and ``race`` columns of
``item_individual`` stay, so the dilemma design's results do not change.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import JSON, BigInteger, Column, ForeignKey, Index, Integer, Text, UniqueConstraint
from sqlmodel import Field, SQLModel

_BigIntPK = BigInteger().with_variant(Integer(), "sqlite")
_BigIntFK = BigInteger().with_variant(Integer(), "sqlite")

ROLES = ("target", "non_target", "unknown", "unresolved")
ANSWERS = ("target", "non_target", "unknown", "unparsable")
CUES = ("explicit", "implicit", "control_neutral", "control_none")
CONTEXTS = ("ambiguous", "disambiguated")
#: Difference-Awareness items (prompt-variance design) keep their split in
#: ``context_condition``; their group options have role ``unresolved``, so the QA design's
#: counts leave them out (see :mod:`cuegap.ingest.diffaware`).
DA_SPLITS = ("different", "equal")
POLARITIES = ("negative", "nonneg")


class IndividualAxis(SQLModel, table=True):
    """One demographic axis of a dilemma individual (e.g. gender = female)."""

    __tablename__ = "individual_axis"
    __table_args__ = (
        UniqueConstraint("individual_id", "axis"),
        Index("ix_individual_axis_value", "axis", "value"),
    )

    id: int | None = Field(default=None, primary_key=True)
    individual_id: int = Field(foreign_key="item_individual.id")
    axis: str = Field(max_length=50)
    value: str = Field(max_length=100)


class QAItem(SQLModel, table=True):
    """One QA prompt item: context, question, condition, polarity, cue and gold option."""

    __tablename__ = "qa_item"
    __table_args__ = (
        UniqueConstraint("bank_id", "item_key"),
        Index("ix_qa_item_source", "bank_id", "source_id"),
    )

    id: int | None = Field(default=None, primary_key=True)
    bank_id: int = Field(foreign_key="item_bank.id", index=True)
    item_key: str = Field(max_length=200)
    dimension: str = Field(max_length=100)
    subgroup: str = Field(default="", max_length=500)
    context_condition: str = Field(max_length=20)  # ambiguous | disambiguated | DA split
    polarity: str = Field(max_length=20)  # negative | nonneg
    cue: str = Field(max_length=20)  # explicit | implicit | control_neutral | control_none
    cue_texts: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON))
    template_id: str | None = Field(default=None, max_length=200)
    source_id: str | None = Field(default=None, max_length=200)
    context: str = Field(sa_column=Column(Text, nullable=False))
    question: str = Field(sa_column=Column(Text, nullable=False))
    gold_index: int
    meta: dict[str, Any] | None = Field(default=None, sa_column=Column("metadata", JSON))


class QAOption(SQLModel, table=True):
    """One answer option of a QA item, with its role."""

    __tablename__ = "qa_option"
    __table_args__ = (UniqueConstraint("item_id", "option_index"),)

    id: int | None = Field(default=None, primary_key=True)
    item_id: int = Field(foreign_key="qa_item.id", index=True)
    option_index: int
    label: str = Field(max_length=20)
    text: str = Field(sa_column=Column(Text, nullable=False))
    role: str = Field(max_length=20)  # target | non_target | unknown | unresolved


class QAOptionAxis(SQLModel, table=True):
    """One demographic axis of an answer option (e.g. age = old)."""

    __tablename__ = "qa_option_axis"
    __table_args__ = (
        UniqueConstraint("option_id", "axis"),
        Index("ix_qa_option_axis_value", "axis", "value"),
    )

    id: int | None = Field(default=None, primary_key=True)
    option_id: int = Field(foreign_key="qa_option.id")
    axis: str = Field(max_length=50)
    value: str = Field(max_length=200)


class QAResponse(SQLModel, table=True):
    """One system answer to a QA item, with the raw text always kept.

    ``response_key`` hashes the natural key (system, bank, item, factors, repeat) and makes
    ingest idempotent; ``content_hash`` tells a repeated line from a conflicting one.
    ``answer`` is the chosen option's role, or ``unparsable`` (``parse_reason`` says why).
    When the runner's own reading (``predicted``) decided, ``parse_reason`` notes whether
    cuegap's reading of ``raw_text`` agrees (:mod:`cuegap.schema._qa_agreement`).
    """

    __tablename__ = "qa_response"
    __table_args__ = (
        Index("ix_qa_response_agg", "system_id", "item_id", "answer"),
        Index("ix_qa_response_batch", "batch_id"),
    )

    id: int | None = Field(default=None, sa_column=Column(_BigIntPK, primary_key=True))
    response_key: str = Field(max_length=32, unique=True)
    content_hash: str = Field(max_length=32)
    run_id: int = Field(foreign_key="run.id", index=True)
    batch_id: int = Field(foreign_key="ingest_batch.id")
    system_id: int = Field(foreign_key="system.id")
    item_id: int = Field(foreign_key="qa_item.id")
    repeat: int = 0
    raw_text: str = Field(sa_column=Column(Text, nullable=False))
    predicted: str | None = Field(default=None, max_length=100)
    parsed_index: int | None = None
    answer: str = Field(max_length=20)  # a role, or unparsable
    parse_status: str = Field(max_length=20)  # ok | unparsable
    parse_reason: str | None = Field(default=None, sa_column=Column(Text))
    sample_id: str | None = Field(default=None, max_length=200)
    source_line: int


class QAResponseFactor(SQLModel, table=True):
    """One prompt condition a QA response was produced under (e.g. strategy = cot)."""

    __tablename__ = "qa_response_factor"
    __table_args__ = (
        UniqueConstraint("response_id", "name"),
        Index("ix_qa_response_factor_name", "name", "value"),
    )

    id: int | None = Field(default=None, sa_column=Column(_BigIntPK, primary_key=True))
    response_id: int = Field(
        sa_column=Column(_BigIntFK, ForeignKey("qa_response.id"), nullable=False)
    )
    name: str = Field(max_length=50)
    value: str = Field(max_length=200)
