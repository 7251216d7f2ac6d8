"""a hash-chained ledger over everything written, signed copies of reports, keyed sign-offs

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-23 19:10:00

The ledger's first entry (``genesis``) records the highest ids that existed before it, so
that ``cuegap verify`` can tell objects written before the ledger (not covered) from
objects inserted behind cuegap's back (no ledger entry).
"""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

GENESIS = "0" * 64
_BOUNDS = {
    "analysis": "SELECT MAX(id) FROM analysis",
    "bank": "SELECT MAX(id) FROM item_bank",
    "batch": "SELECT MAX(id) FROM ingest_batch",
    "report": "SELECT MAX(id) FROM report",
    "signoff": "SELECT MAX(seq) FROM signoff",
    "system": "SELECT MAX(id) FROM system",
}


def upgrade() -> None:
    op.create_table(
        "ledger",
        sa.Column("seq", sa.Integer(), primary_key=True, autoincrement=False),
        sa.Column("kind", sa.String(length=20), nullable=False),
        sa.Column("ref_id", sa.Integer(), nullable=True),
        sa.Column("digest", sa.String(length=64), nullable=False),
        sa.Column("detail", sa.Text(), nullable=True),
        sa.Column("recorded_at", sa.String(length=40), nullable=False),
        sa.Column("prev_hash", sa.String(length=64), nullable=False),
        sa.Column("entry_hash", sa.String(length=64), nullable=False, unique=True),
    )
    op.create_index("ix_ledger_kind_ref", "ledger", ["kind", "ref_id"])
    with op.batch_alter_table("analysis") as b:
        b.add_column(sa.Column("content_digest", sa.String(length=64), nullable=True))
    with op.batch_alter_table("report") as b:
        b.add_column(sa.Column("html", sa.Text(), nullable=True))
        b.add_column(sa.Column("analysis_digest", sa.String(length=64), nullable=True))
    with op.batch_alter_table("signoff") as b:
        b.add_column(
            sa.Column("record_version", sa.Integer(), nullable=False, server_default="1")
        )
        b.add_column(sa.Column("analysis_digest", sa.String(length=64), nullable=True))
        b.add_column(sa.Column("ledger_head", sa.String(length=64), nullable=True))
        b.add_column(sa.Column("key_id", sa.String(length=64), nullable=True))
        b.add_column(sa.Column("public_key", sa.Text(), nullable=True))
        b.add_column(sa.Column("signature", sa.Text(), nullable=True))
    conn = op.get_bind()
    bounds = {k: int(conn.execute(sa.text(q)).scalar() or 0) for k, q in _BOUNDS.items()}
    detail = json.dumps(bounds, sort_keys=True, separators=(",", ":"))
    digest = hashlib.sha256(detail.encode()).hexdigest()
    recorded_at = datetime.now(UTC).isoformat(timespec="seconds")
    # The same canonical form as cuegap.ledger.entry_hash (kept here so that the migration
    # does not depend on the package's code of the day).
    payload = {
        "seq": 1,
        "kind": "genesis",
        "ref_id": None,
        "digest": digest,
        "detail": detail,
        "recorded_at": recorded_at,
        "prev_hash": GENESIS,
    }
    entry = hashlib.sha256(
        json.dumps(payload, sort_keys=True, separators=(",", ":")).encode()
    ).hexdigest()
    op.execute(
        sa.table(
            "ledger",
            sa.column("seq"),
            sa.column("kind"),
            sa.column("ref_id"),
            sa.column("digest"),
            sa.column("detail"),
            sa.column("recorded_at"),
            sa.column("prev_hash"),
            sa.column("entry_hash"),
        )
        .insert()
        .values(
            seq=1,
            kind="genesis",
            ref_id=None,
            digest=digest,
            detail=detail,
            recorded_at=recorded_at,
            prev_hash=GENESIS,
            entry_hash=entry,
        )
    )


def downgrade() -> None:
    with op.batch_alter_table("signoff") as b:
        for col in ("signature", "public_key", "key_id", "ledger_head", "analysis_digest"):
            b.drop_column(col)
        b.drop_column("record_version")
    with op.batch_alter_table("report") as b:
        b.drop_column("analysis_digest")
        b.drop_column("html")
    with op.batch_alter_table("analysis") as b:
        b.drop_column("content_digest")
    op.drop_index("ix_ledger_kind_ref", table_name="ledger")
    op.drop_table("ledger")
