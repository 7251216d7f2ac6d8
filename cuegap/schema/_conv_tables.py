"""SQLModel tables of the multi-agent conversation design (seed 003, §4-5).

Revision 0010. A MAC-Fairness two-agent run writes one transcript per conversation and
one YAML config snapshot per experiment; the store keeps them as

* ``conv_config``: one resolved configuration (a config snapshot, keyed by the SHA-256 of
  its canonical JSON): the system, benchmark and category, the identity agent's
  demographics, persona and instantiation, the reveal condition and its three switches,
  the number of rounds, and the whole snapshot as JSON;
* ``conv_agent``: the agents of a configuration (``role`` identity or baseline, read from
  its ``agent_definitions``), each with its own demographics, persona, ``if_as_human``,
  model and temperature;
* ``conversation``: one transcript (natural key ``transcript_id``), its question, status
  and raw JSON text, always kept;
* ``conv_opinion``: each agent's opinion per round, with its rationale text (raw system
  output, kept like every raw response) and the retries it took.

Null demographics and persona are stored as NULL; the count query reads them as
``"none"`` (:func:`cuegap.schema.conv_counts`).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import JSON, BigInteger, Column, ForeignKey, Index, Integer, Text, UniqueConstraint
from sqlmodel import Field, SQLModel

_BigIntPK = BigInteger().with_variant(Integer(), "sqlite")
_BigIntFK = BigInteger().with_variant(Integer(), "sqlite")

#: ``conv_opinion.role`` of the two agents of seed 003's design.
IDENTITY, BASELINE = "identity", "baseline"
#: ``conv_config.instantiation`` (MAC-Fairness ``if_as_human`` true / false).
INSTANTIATIONS = ("human", "ai")
#: ``conv_config.reveal``: all three reveal switches true / all false / anything else.
REVEALS = ("revealed", "anonymous", "partial")


class ConvConfig(SQLModel, table=True):
    """One resolved two-agent configuration (a MAC-Fairness config snapshot)."""

    __tablename__ = "conv_config"

    id: int | None = Field(default=None, primary_key=True)
    config_key: str = Field(max_length=64, unique=True)
    system_id: int = Field(foreign_key="system.id", index=True)
    experiment_name: str = Field(max_length=300)
    benchmark: str = Field(max_length=100)
    category: str = Field(max_length=200)
    subcategory: str = Field(max_length=300)
    demographics: str | None = Field(default=None, max_length=200)
    persona: str | None = Field(default=None, max_length=200)
    instantiation: str = Field(max_length=10)  # human | ai
    reveal: str = Field(max_length=10)  # revealed | anonymous | partial
    reveal_persona: bool
    reveal_demographics: bool
    reveal_presence_mode: bool
    max_rounds: int
    routing_strategy: str | None = Field(default=None, max_length=100)
    snapshot_path: str = Field(sa_column=Column(Text, nullable=False))
    snapshot: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON))


class ConvAgent(SQLModel, table=True):
    """One agent of a configuration, as its snapshot defines it."""

    __tablename__ = "conv_agent"
    __table_args__ = (UniqueConstraint("config_id", "agent_id"),)

    id: int | None = Field(default=None, primary_key=True)
    config_id: int = Field(foreign_key="conv_config.id")
    agent_id: str = Field(max_length=20)  # spkr_000 ...
    role: str = Field(max_length=20)  # identity | baseline
    agent_role: str = Field(max_length=50)  # MAC-Fairness role: participant
    demographics: str | None = Field(default=None, max_length=200)
    persona: str | None = Field(default=None, max_length=200)
    if_as_human: bool
    model: str = Field(max_length=200)
    temperature: float | None = None


class Conversation(SQLModel, table=True):
    """One transcript of a two-agent conversation; ``raw`` keeps its JSON text.

    ``transcript_id`` makes ingest idempotent; ``content_hash`` (configuration, question,
    status and every opinion) tells a repeated transcript from a conflicting one.
    """

    __tablename__ = "conversation"
    __table_args__ = (
        Index("ix_conversation_config", "config_id", "question_id"),
        Index("ix_conversation_batch", "batch_id"),
    )

    id: int | None = Field(default=None, sa_column=Column(_BigIntPK, primary_key=True))
    transcript_id: str = Field(max_length=64, unique=True)
    content_hash: str = Field(max_length=32)
    run_id: int = Field(foreign_key="run.id", index=True)
    batch_id: int = Field(foreign_key="ingest_batch.id")
    config_id: int = Field(foreign_key="conv_config.id")
    question_id: str = Field(max_length=200)
    status: str = Field(max_length=20)
    rounds: int
    consensus: bool | None = None
    retries: int = 0
    source_file: str | None = Field(default=None, sa_column=Column(Text))
    source_line: int
    raw: str = Field(sa_column=Column(Text, nullable=False))


class ConvOpinion(SQLModel, table=True):
    """One agent's opinion in one round (0-indexed), with its rationale text."""

    __tablename__ = "conv_opinion"
    # The unique key is also the index the count query's self-join looks rounds up by.
    __table_args__ = (UniqueConstraint("conversation_id", "round", "role"),)

    id: int | None = Field(default=None, sa_column=Column(_BigIntPK, primary_key=True))
    conversation_id: int = Field(
        sa_column=Column(_BigIntFK, ForeignKey("conversation.id"), nullable=False)
    )
    round: int
    role: str = Field(max_length=20)  # identity | baseline
    agent_id: str = Field(max_length=20)
    opinion: str | None = Field(default=None, max_length=100)
    rationale: str | None = Field(default=None, sa_column=Column(Text))
    retry_count: int = 0
