"""the QA answer tally: QA answers counted per system, item, strategy and answer

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-25 16:40:00.000000

Adds ``qa_tally`` (see :mod:`cuegap.schema._qa_tally`), which the QA count query reads
instead of ``qa_response``, and fills it from the QA answers already stored. Downgrading
drops it. The fill uses today's definitions of ``qa_response`` and
``qa_response_factor``; a later migration that changes those columns must keep it valid.
"""

from __future__ import annotations

import sqlalchemy as sa
import sqlmodel
from alembic import op

from cuegap.schema._qa_tally import QA_TALLY_KEYS, qa_tally_select

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    text = sqlmodel.sql.sqltypes.AutoString
    op.create_table(
        "qa_tally",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("batch_id", sa.Integer(), nullable=True),
        sa.Column("system_id", sa.Integer(), nullable=False),
        sa.Column("item_id", sa.Integer(), nullable=False),
        sa.Column("strategy", text(length=200), nullable=True),
        sa.Column("answer", text(length=20), nullable=False),
        sa.Column("n", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(["batch_id"], ["ingest_batch.id"]),
        sa.ForeignKeyConstraint(["item_id"], ["qa_item.id"]),
        sa.ForeignKeyConstraint(["system_id"], ["system.id"]),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("qa_tally", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_qa_tally_batch_id"), ["batch_id"], unique=False)
        batch_op.create_index("ix_qa_tally_key", ["system_id", "item_id"], unique=False)
    tally = sa.table("qa_tally", *(sa.column(c) for c in (*QA_TALLY_KEYS, "n")))
    op.get_bind().execute(tally.insert().from_select([*QA_TALLY_KEYS, "n"], qa_tally_select()))


def downgrade() -> None:
    with op.batch_alter_table("qa_tally", schema=None) as batch_op:
        batch_op.drop_index("ix_qa_tally_key")
        batch_op.drop_index(batch_op.f("ix_qa_tally_batch_id"))
    op.drop_table("qa_tally")
