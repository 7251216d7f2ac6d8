"""The report registry, and writing report files without ever replacing one."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from sqlalchemy import func, insert, select
from sqlalchemy.engine import Connection, Engine

from cuegap.schema import Analysis, Report, ledger


class ComplianceError(ValueError):
    """A sign-off or registry request that cannot be honoured; nothing was written."""


def sha256_bytes(data: bytes) -> str:
    """Hex SHA-256 of bytes."""
    return hashlib.sha256(data).hexdigest()


def file_sha256(path: Path) -> str:
    """Hex SHA-256 of a file, read in chunks."""
    h = hashlib.sha256()
    with Path(path).open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


#: An analysis a report lists with the content digest it was rendered from
#: (``<code data-cuegap-analysis="ID">DIGEST</code>``; the board report lists every design's).
_LISTED = re.compile(r'data-cuegap-analysis="(\d+)">([0-9a-f]{64})<')


def listed_analyses(html: str | None) -> dict[int, str]:
    """The analyses a report's HTML lists with their content digests, beyond the one it is
    registered under: ``verify`` checks each (a board report shows several analyses)."""
    return {int(i): d for i, d in _LISTED.findall(html or "")}


# --------------------------------------------------------------------------- registry


def register_report(
    engine: Engine,
    path: Path | str,
    *,
    analysis_id: int,
    format: str | None = None,
    supersedes_id: int | None = None,
    html: str | None = None,
    conn: Connection | None = None,
) -> int:
    """Register a rendered report file and seal it in the ledger; returns its id.

    The version is one more than the newest registered report of the same format.

    Parameters
    ----------
    html : str, optional
        The HTML the file was rendered from, kept in the store so that a signed copy
        shows exactly what was reviewed. Default: the file's text for an HTML file.
    conn : Connection, optional
        Register inside this transaction (to register several files atomically).

    Raises
    ------
    ComplianceError
        When the file or the analysis does not exist.
    """
    path = Path(path).resolve()
    if not path.is_file():
        raise ComplianceError(f"{path}: report file not found")
    fmt = format or path.suffix.lstrip(".").lower()
    data = path.read_bytes()
    if html is None and fmt == "html":
        html = data.decode("utf-8", errors="replace")
    if conn is None:
        with engine.begin() as own:
            return _register(own, path, data, fmt, analysis_id, supersedes_id, html)
    return _register(conn, path, data, fmt, analysis_id, supersedes_id, html)


def _register(
    conn: Connection,
    path: Path,
    data: bytes,
    fmt: str,
    analysis_id: int,
    supersedes_id: int | None,
    html: str | None,
) -> int:
    ledger.lock_ledger(conn)  # also serialises version numbers
    row = conn.execute(
        select(Analysis.data_fingerprint, Analysis.content_digest).where(Analysis.id == analysis_id)
    ).first()
    if row is None:
        raise ComplianceError(f"analysis {analysis_id} does not exist")
    newest = conn.execute(select(func.max(Report.version)).where(Report.format == fmt))
    version = (newest.scalar() or 0) + 1
    report_id = int(
        conn.execute(
            insert(Report).values(
                analysis_id=analysis_id,
                data_fingerprint=row.data_fingerprint,
                format=fmt,
                path=str(path),
                sha256=sha256_bytes(data),
                version=version,
                supersedes_id=supersedes_id,
                created_at=datetime.now(UTC),
                html=html,
                analysis_digest=row.content_digest,
            )
        ).inserted_primary_key[0]
    )
    ledger.record(conn, "report", report_id)
    return report_id


@dataclass(frozen=True, slots=True)
class RegisteredReport:
    """A row of the report registry."""

    id: int
    analysis_id: int
    data_fingerprint: str
    format: str
    path: str
    sha256: str
    version: int


def find_report(engine: Engine, report: int | str | Path) -> RegisteredReport:
    """Look a report up by id, by path, or by (a prefix of at least 8 chars of) its SHA-256.

    Raises
    ------
    ComplianceError
        When no registered report matches, or a hash prefix is ambiguous.
    """
    cols = select(
        Report.id,
        Report.analysis_id,
        Report.data_fingerprint,
        Report.format,
        Report.path,
        Report.sha256,
        Report.version,
    )
    text = str(report)
    with engine.connect() as conn:
        if isinstance(report, int) or text.isdigit():
            rows = conn.execute(cols.where(Report.id == int(text))).fetchall()
        elif len(text) >= 8 and all(c in "0123456789abcdef" for c in text.lower()):
            rows = conn.execute(cols.where(Report.sha256.startswith(text.lower()))).fetchall()
        else:
            path = str(Path(text).resolve())
            rows = conn.execute(cols.where(Report.path == path).order_by(Report.id.desc()))
            rows = rows.fetchall()[:1]
    if not rows:
        raise ComplianceError(f"no registered report matches {text!r}")
    if len(rows) > 1:
        raise ComplianceError(f"{text!r} matches {len(rows)} reports; give more of the hash")
    return RegisteredReport(*rows[0])
