"""Verification of files counted outside the store (``cuegap count``).

A counted file's tally rows are sealed with its ingest batch, so the ledger check already
names an altered tally. Here each counted file is checked against what was counted: its
size and SHA-256 when the file is reachable from this machine (a local path), and the sum
of its tally rows against the batch's count. A file behind a URL is stated as not checked:
the raw lines stay in the lake, and ``cuegap verify --recount`` reads them there.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from sqlalchemy import func, select
from sqlalchemy.engine import Connection
from sqlmodel import SQLModel

from cuegap.compliance._verify_ledger import Verification
from cuegap.schema import IngestBatch, counted_batches


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def check_counted_files(conn: Connection, out: Verification) -> None:
    """Check every counted file's size and digest, and its tally's sum, into ``out``.

    Parameters
    ----------
    conn : Connection
        A connection to the store.
    out : Verification
        Problems go to ``out.problems``; one stated result per file to ``out.counted``.
    """
    b = IngestBatch.__table__.c
    for batch_id, mapping in counted_batches(conn).items():
        row = conn.execute(
            select(b.source_path, b.source_sha256, b.stored).where(b.id == batch_id)
        ).one()
        name = f"counted file {row.source_path} (batch {batch_id}, {mapping.get('engine')})"
        table = SQLModel.metadata.tables.get(str(mapping["tally"]))
        if table is not None and "batch_id" in table.c:
            total = conn.execute(
                select(func.coalesce(func.sum(table.c.n), 0)).where(table.c.batch_id == batch_id)
            ).scalar()
            if int(total) != int(row.stored):
                out.problems.append(
                    f"{name}: its {table.name} rows sum to {int(total):,}, the file counted "
                    f"{int(row.stored):,}"
                )
        if "://" in row.source_path:
            out.counted.append(f"{name}: not reachable from here, not checked")
            continue
        path = Path(row.source_path)
        if not path.is_file():
            out.problems.append(f"{name} is missing: its digest cannot be checked")
            continue
        size = path.stat().st_size
        if mapping.get("size") is not None and size != int(mapping["size"]):
            out.problems.append(
                f"{name} changed since it was counted: {size:,} bytes, counted "
                f"{int(mapping['size']):,}"
            )
        elif (actual := _sha256(path)) != row.source_sha256:
            out.problems.append(
                f"{name} changed since it was counted: SHA-256 {actual[:12]}…, counted "
                f"{row.source_sha256[:12]}…"
            )
        else:
            out.counted.append(f"{name}: size and SHA-256 as counted")
