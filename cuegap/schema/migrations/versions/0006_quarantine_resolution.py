"""quarantine rows are resolved, not deleted, when their line is later stored

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-23 18:50:00
"""

from __future__ import annotations

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("quarantine") as batch_op:
        batch_op.add_column(sa.Column("resolved_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True))
        batch_op.add_column(sa.Column("resolved_batch_id", sa.Integer(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("quarantine") as batch_op:
        batch_op.drop_column("resolved_batch_id")
        batch_op.drop_column("resolved_at")
