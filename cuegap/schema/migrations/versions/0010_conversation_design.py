"""the conversation design: configurations, agents, conversations and per-round opinions

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-25 18:00:00.000000

Adds the tables of the multi-agent conversation design (seed 003, §4-5; see
:mod:`cuegap.schema._conv_tables`): ``conv_config`` (one resolved MAC-Fairness config
snapshot), ``conv_agent``, ``conversation`` (one transcript, raw JSON kept) and
``conv_opinion`` (each agent's opinion and rationale per round) and ``conv_tally`` (the
transition counts per configuration that the count query reads; see
:mod:`cuegap.schema._conv_tally`). New tables only, empty: stores of earlier revisions
keep every row. Downgrading drops them.
"""

from __future__ import annotations

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None

_BigInt = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    text = sqlmodel.sql.sqltypes.AutoString
    op.create_table(
        "conv_config",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("config_key", text(length=64), nullable=False),
        sa.Column("system_id", sa.Integer(), nullable=False),
        sa.Column("experiment_name", text(length=300), nullable=False),
        sa.Column("benchmark", text(length=100), nullable=False),
        sa.Column("category", text(length=200), nullable=False),
        sa.Column("subcategory", text(length=300), nullable=False),
        sa.Column("demographics", text(length=200), nullable=True),
        sa.Column("persona", text(length=200), nullable=True),
        sa.Column("instantiation", text(length=10), nullable=False),
        sa.Column("reveal", text(length=10), nullable=False),
        sa.Column("reveal_persona", sa.Boolean(), nullable=False),
        sa.Column("reveal_demographics", sa.Boolean(), nullable=False),
        sa.Column("reveal_presence_mode", sa.Boolean(), nullable=False),
        sa.Column("max_rounds", sa.Integer(), nullable=False),
        sa.Column("routing_strategy", text(length=100), nullable=True),
        sa.Column("snapshot_path", sa.Text(), nullable=False),
        sa.Column("snapshot", sa.JSON(), nullable=True),
        sa.ForeignKeyConstraint(["system_id"], ["system.id"]),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("config_key"),
    )
    op.create_index(op.f("ix_conv_config_system_id"), "conv_config", ["system_id"], unique=False)
    op.create_table(
        "conv_agent",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("config_id", sa.Integer(), nullable=False),
        sa.Column("agent_id", text(length=20), nullable=False),
        sa.Column("role", text(length=20), nullable=False),
        sa.Column("agent_role", text(length=50), nullable=False),
        sa.Column("demographics", text(length=200), nullable=True),
        sa.Column("persona", text(length=200), nullable=True),
        sa.Column("if_as_human", sa.Boolean(), nullable=False),
        sa.Column("model", text(length=200), nullable=False),
        sa.Column("temperature", sa.Float(), nullable=True),
        sa.ForeignKeyConstraint(["config_id"], ["conv_config.id"]),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("config_id", "agent_id"),
    )
    op.create_table(
        "conversation",
        sa.Column("id", _BigInt, nullable=False),
        sa.Column("transcript_id", text(length=64), nullable=False),
        sa.Column("content_hash", text(length=32), nullable=False),
        sa.Column("run_id", sa.Integer(), nullable=False),
        sa.Column("batch_id", sa.Integer(), nullable=False),
        sa.Column("config_id", sa.Integer(), nullable=False),
        sa.Column("question_id", text(length=200), nullable=False),
        sa.Column("status", text(length=20), nullable=False),
        sa.Column("rounds", sa.Integer(), nullable=False),
        sa.Column("consensus", sa.Boolean(), nullable=True),
        sa.Column("retries", sa.Integer(), nullable=False),
        sa.Column("source_file", sa.Text(), nullable=True),
        sa.Column("source_line", sa.Integer(), nullable=False),
        sa.Column("raw", sa.Text(), nullable=False),
        sa.ForeignKeyConstraint(["batch_id"], ["ingest_batch.id"]),
        sa.ForeignKeyConstraint(["config_id"], ["conv_config.id"]),
        sa.ForeignKeyConstraint(["run_id"], ["run.id"]),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("transcript_id"),
    )
    op.create_index("ix_conversation_batch", "conversation", ["batch_id"], unique=False)
    op.create_index(
        "ix_conversation_config", "conversation", ["config_id", "question_id"], unique=False
    )
    op.create_index(op.f("ix_conversation_run_id"), "conversation", ["run_id"], unique=False)
    op.create_table(
        "conv_opinion",
        sa.Column("id", _BigInt, nullable=False),
        sa.Column("conversation_id", _BigInt, nullable=False),
        sa.Column("round", sa.Integer(), nullable=False),
        sa.Column("role", text(length=20), nullable=False),
        sa.Column("agent_id", text(length=20), nullable=False),
        sa.Column("opinion", text(length=100), nullable=True),
        sa.Column("rationale", sa.Text(), nullable=True),
        sa.Column("retry_count", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(["conversation_id"], ["conversation.id"]),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("conversation_id", "round", "role"),
    )
    op.create_table(
        "conv_tally",
        sa.Column("id", _BigInt, nullable=False),
        sa.Column("batch_id", sa.Integer(), nullable=True),
        sa.Column("config_id", sa.Integer(), nullable=False),
        sa.Column("iden_disagree", sa.Integer(), nullable=False),
        sa.Column("iden_shift", sa.Integer(), nullable=False),
        sa.Column("base_disagree", sa.Integer(), nullable=False),
        sa.Column("base_shift", sa.Integer(), nullable=False),
        sa.Column("conversations", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(["batch_id"], ["ingest_batch.id"]),
        sa.ForeignKeyConstraint(["config_id"], ["conv_config.id"]),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index(op.f("ix_conv_tally_batch_id"), "conv_tally", ["batch_id"], unique=False)
    op.create_index(op.f("ix_conv_tally_config_id"), "conv_tally", ["config_id"], unique=False)


def downgrade() -> None:
    op.drop_index(op.f("ix_conv_tally_config_id"), table_name="conv_tally")
    op.drop_index(op.f("ix_conv_tally_batch_id"), table_name="conv_tally")
    op.drop_table("conv_tally")
    op.drop_table("conv_opinion")
    op.drop_index(op.f("ix_conversation_run_id"), table_name="conversation")
    op.drop_index("ix_conversation_config", table_name="conversation")
    op.drop_index("ix_conversation_batch", table_name="conversation")
    op.drop_table("conversation")
    op.drop_table("conv_agent")
    op.drop_index(op.f("ix_conv_config_system_id"), table_name="conv_config")
    op.drop_table("conv_config")
