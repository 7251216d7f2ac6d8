"""the response tally: dilemma responses counted per distinct answer

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-25 15:30:00.000000

Adds ``response_tally`` (see :mod:`cuegap.schema._tally`), which the aggregation queries
read instead of the response table so that analysis cost follows the study design, not the
number of responses, and fills it from the responses already stored. Downgrading drops it.
The fill uses today's response table definition; a later migration that changes those
columns must keep this query valid.
"""

from __future__ import annotations

import sqlalchemy as sa
import sqlmodel
from alembic import op

from cuegap.schema._tally import TALLY_KEYS, tally_select

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    text = sqlmodel.sql.sqltypes.AutoString
    id_type = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
    op.create_table(
        "response_tally",
        sa.Column("id", id_type, nullable=False),
        sa.Column("batch_id", sa.Integer(), nullable=True),
        sa.Column("system_id", sa.Integer(), nullable=False),
        sa.Column("item_id", sa.Integer(), nullable=False),
        sa.Column("condition", text(length=20), nullable=False),
        sa.Column("difficulty", text(length=20), nullable=True),
        sa.Column("probe", text(length=20), nullable=False),
        sa.Column("individual", text(length=1), nullable=True),
        sa.Column("consequences", sa.Boolean(), nullable=False),
        sa.Column("prompt_variant", text(length=50), nullable=False),
        sa.Column("first", sa.Boolean(), nullable=False),
        sa.Column("parsed_answer", text(length=10), nullable=True),
        sa.Column("parse_status", text(length=10), nullable=False),
        sa.Column("abstained", sa.Boolean(), nullable=False),
        sa.Column("recovered", text(length=26), nullable=True),
        sa.Column("assignment", sa.Text(), nullable=True),
        sa.Column("n", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(["batch_id"], ["ingest_batch.id"]),
        sa.ForeignKeyConstraint(["item_id"], ["item.id"]),
        sa.ForeignKeyConstraint(["system_id"], ["system.id"]),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("response_tally", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_response_tally_batch_id"), ["batch_id"], unique=False)
        batch_op.create_index(
            "ix_response_tally_agg", ["system_id", "condition", "probe"], unique=False
        )
        batch_op.create_index(
            "ix_response_tally_item", ["item_id", "system_id"], unique=False
        )
    # the responses already stored, counted per key (merged rows: no batch)
    tally = sa.table("response_tally", *(sa.column(c) for c in (*TALLY_KEYS, "n")))
    op.get_bind().execute(
        tally.insert().from_select([*TALLY_KEYS, "n"], tally_select(by_batch=False))
    )


def downgrade() -> None:
    with op.batch_alter_table("response_tally", schema=None) as batch_op:
        batch_op.drop_index("ix_response_tally_item")
        batch_op.drop_index("ix_response_tally_agg")
        batch_op.drop_index(batch_op.f("ix_response_tally_batch_id"))
    op.drop_table("response_tally")
