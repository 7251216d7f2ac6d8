"""One ingest pass of a response file, whatever the study design.

The pass opens its run and ingest batch, streams the reader's records in batches (one
transaction each, retried after a deadlock), drops and rebuilds SQLite's secondary indexes
around a large load, creates the systems it meets and seals the pass in the ledger. A
design's loader subclasses :class:`_IngestPass` and writes one batch in ``_flush``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import Index, insert, select, text, update
from sqlalchemy.engine import Connection, Engine

from cuegap.ingest._concurrent import nothing_new_note, retry_batch
from cuegap.ingest._digest import ResponseDigest
from cuegap.ingest._guard import clean_run, refuse_foreign
from cuegap.ingest._records import Rejected, ResponseRecord, RunInfo, clip
from cuegap.ingest._sql import (
    _PLAIN_CODEC,
    _SECONDARY,
    _SQLITE_CODEC,
    _col,
    _insert_ignore,
    _intact_batches_with_quarantine,
)
from cuegap.ingest._summary import IngestSummary, Progress, file_sha256, utcnow
from cuegap.ingest._validate import storable
from cuegap.ingest.registry import Reader
from cuegap.schema import (
    BatchLock,
    IngestBatch,
    ItemBank,
    QAResponse,
    Quarantine,
    Run,
    System,
    compact_qa_tally,
    compact_tally,
    ledger,
)

if TYPE_CHECKING:
    from cuegap.ingest._response_rules import _ItemInfo

PROGRESS_EVERY = 10_000  # records between progress calls
# On SQLite, a load expected to bring at least this many responses, and at least as many
# as are stored, drops the secondary indexes of `response` and builds them once at the end.
DEFER_INDEXES_MIN = 100_000
_QA_SECONDARY = [ix for ix in QAResponse.__table__.indexes if not ix.unique]
# Every index a load may have dropped: an interrupted ingest of either design leaves them.
_DEFERRABLE = [*_SECONDARY, *_QA_SECONDARY]


class _IngestPass:
    """Streams one response file into the store, batch by batch; ``_flush`` writes a batch."""

    # The table a design's batches insert into, and its indexes a large SQLite load drops
    # and builds once at the end (all but the unique ones: idempotence rests on those).
    DEFERRED_TABLE = "response"
    DEFERRED: list[Index] = _SECONDARY
    # Whether ``_flush`` feeds ``self.digest`` the ``response`` rows it stores (see _digest).
    DIGESTS_RESPONSES = False

    def __init__(self, engine: Engine, path: Path, reader: Reader, batch_size: int) -> None:
        self.engine = engine
        self.path = path
        self.reader = reader
        self.batch_size = batch_size
        self.banks: dict[str, tuple[int, dict[str, _ItemInfo]] | str] = {}
        self.systems: dict[str, int] = {}
        self.derived: dict[tuple[str, str, str], tuple[Any, ...]] = {}
        self.codec = _SQLITE_CODEC if engine.dialect.name == "sqlite" else _PLAIN_CODEC
        self.summary = IngestSummary(str(path), reader.name, "responses")
        self.mapping: dict[str, str] | None = None
        self.forced = False  # the format was named, not detected (see refuse_foreign)
        # Stored resolved (the same file from another working directory is the same file).
        self.source = storable(str(path.resolve()))
        self.open_quarantine = False  # the file has unresolved quarantined lines
        self.seen_before = False  # an earlier pass ingested this very file
        # Earlier passes of this file that were intact in the ledger when this one began:
        # a line quarantined again moves to this pass, so they are sealed anew at the end.
        self.earlier_intact: list[int] = []
        self.digest = ResponseDigest(engine.dialect.name) if self.DIGESTS_RESPONSES else None

    # -- set-up ---------------------------------------------------------------------
    def run(self, progress: Progress | None) -> IngestSummary:
        sha = file_sha256(self.path)
        stream = self.reader.read(self.path)
        if self.forced:  # a forced format on a file of another: refused before any write
            stream.records = refuse_foreign(stream.records, self.reader, self.path)
        self.sha = sha
        self.info: RunInfo = clean_run(stream.run)  # a header's odd values never fail it
        self._open_run(sha)
        self._restore_indexes(_DEFERRABLE)  # any left dropped by an interrupted ingest
        deferred: list[Index] = []
        try:
            buf: list[ResponseRecord | Rejected] = []
            first = True
            for rec in stream.records:
                buf.append(rec)
                if len(buf) >= self.batch_size:
                    if first:  # the first batch tells how many records the file holds
                        first = False
                        expected = len(buf) * stream.total // max(1, stream.position())
                        deferred = self._defer_indexes(expected)
                    self._write_batch(buf)
                    buf = []
                    if progress:
                        progress(stream.position(), stream.total)
                elif progress and len(buf) % PROGRESS_EVERY == 0:
                    progress(stream.position(), stream.total)
            self._write_batch(buf)
            if progress:
                progress(stream.total, stream.total)
        except BaseException as exc:
            try:
                self._finish("failed", f"{type(exc).__name__}: {exc}")
            finally:
                self._restore_indexes(deferred)
            raise
        self._restore_indexes(deferred)
        self._finish("completed", None)
        if self.summary.stored:
            with self.engine.connect() as conn:  # one row per distinct answer again
                compact_tally(conn)
                compact_qa_tally(conn)
            with self.engine.begin() as conn:  # fresh planner statistics for aggregation
                if conn.dialect.name == "sqlite":  # sample, rather than read every index
                    conn.execute(text("PRAGMA analysis_limit=1000"))
                conn.execute(text("ANALYZE"))
        s = self.summary
        if s.read and s.stored == 0 and s.duplicate:
            with self.engine.connect() as conn:
                s.note = nothing_new_note(conn, self.sha, self.batch_id)
        return s

    def _defer_indexes(self, expected: int) -> list[Index]:
        """On SQLite, drop the secondary indexes of the design's table before a large load.

        Building an index once after the load costs less than keeping it up to date row by
        row. The unique index on ``response_key`` stays: idempotence rests on it. Indexes
        left dropped by an interrupted ingest are rebuilt by the next one.

        Parameters
        ----------
        expected : int
            Records the file is expected to hold.

        Returns
        -------
        list of Index
            The indexes dropped, for :meth:`_restore_indexes`.
        """
        if self.engine.dialect.name != "sqlite":
            return []
        with self.engine.begin() as conn:
            table = self.DEFERRED_TABLE
            stored = conn.execute(text(f"SELECT max(rowid) FROM {table}")).scalar() or 0
            if expected < max(stored, DEFER_INDEXES_MIN):
                return []
            for ix in self.DEFERRED:
                ix.drop(conn)
        return list(self.DEFERRED)

    def _restore_indexes(self, indexes: list[Index]) -> None:
        """Create those of ``indexes`` that are missing (SQLite only: none are dropped else)."""
        if indexes and self.engine.dialect.name == "sqlite":
            with self.engine.begin() as conn:
                for ix in indexes:
                    ix.create(conn, checkfirst=True)

    def _open_run(self, sha: str) -> None:
        info = self.info
        with self.engine.begin() as conn:
            run_id = conn.execute(select(Run.id).where(Run.source_sha256 == sha)).scalar()
            self.seen_before = run_id is not None
            self.open_quarantine = self.seen_before and (
                conn.execute(
                    select(Quarantine.id)
                    .where(Quarantine.source_sha256 == sha, Quarantine.resolved_at.is_(None))
                    .limit(1)
                ).first()
                is not None
            )
            if self.seen_before:
                self.earlier_intact = _intact_batches_with_quarantine(conn, sha)
            bank_id = None
            if info.item_bank:
                bank_id = conn.execute(
                    select(ItemBank.id).where(ItemBank.name == info.item_bank)
                ).scalar()
            if run_id is None:
                run_id = conn.execute(
                    _insert_ignore(conn, Run.__table__, ["source_sha256"]).returning(Run.id),
                    {
                        "source_sha256": sha,
                        "source_path": self.source,
                        "format": self.reader.name,
                        "runner": info.runner,
                        "runner_version": info.runner_version,
                        "bank_id": bank_id,
                        "started_at": info.started_at,
                        "settings": info.settings,
                        "ingested_at": utcnow(),
                    },
                ).scalar()
                if run_id is None:  # a concurrent ingest of the same file created it
                    run_id = conn.execute(
                        select(Run.id).where(Run.source_sha256 == sha)
                    ).scalar_one()
            self.run_id = run_id
            self.batch_id = conn.execute(
                insert(IngestBatch).returning(IngestBatch.id),
                {
                    "run_id": run_id,
                    "source_path": self.source,
                    "source_sha256": sha,
                    "format": self.reader.name,
                    "status": "running",
                    "mapping": self.mapping,
                    "started_at": utcnow(),
                },
            ).scalar_one()
            # Held until the pass ends, taken before its row is committed: a batch left
            # "running" whose lock is free was interrupted (cuegap.ingest._recover).
            self.alive = BatchLock(self.engine, self.batch_id)
        self.summary.batch_id = self.batch_id

    def _finish(self, status: str, error: str | None) -> None:
        written = None  # the responses' digest, when computed as they were written
        if self.digest is not None and status == "completed":
            written = self.digest.hexdigest()
        try:
            self._seal(status, error, written)
        finally:
            self.alive.release()

    def _seal(self, status: str, error: str | None, written: str | None) -> None:
        s = self.summary
        with self.engine.begin() as conn:
            conn.execute(
                update(IngestBatch)
                .where(IngestBatch.id == self.batch_id)
                .values(
                    status=status,
                    error=error,
                    finished_at=utcnow(),
                    lines_read=s.read,
                    stored=s.stored,
                    duplicate=s.duplicate,
                    quarantined=s.quarantined,
                )
            )
            # Seal what this pass wrote in the ledger (systems are sealed as they change).
            parts = None
            if written is not None:
                parts = ledger.batch_parts(conn, self.batch_id, responses=written)
            ledger.record(conn, "batch", self.batch_id, parts=parts)
            for earlier in self.earlier_intact:
                ledger.record(conn, "batch", earlier, only_if_changed=True)

    def _system(self, _batch: Connection, name: str) -> int:
        """The system's id, created or updated in a short transaction of its own.

        Committed at once rather than with the batch: the batch then holds no lock on a
        ``system`` row while it inserts (see :mod:`cuegap.ingest._concurrent`), and a cached
        id always belongs to a committed row, even when the batch is retried.
        """
        sid = self.systems.get(name)
        if sid is not None:
            return sid
        with self.engine.begin() as conn:
            sid = self._upsert_system(conn, name)
        self.systems[name] = sid
        return sid

    def _upsert_system(self, conn: Connection, name: str) -> int:
        meta = self.info.systems.get(name)
        if meta is None:  # a mapping shortened the runner's name ("openai/gpt-4o" -> "gpt-4o")
            near = [m for full, m in self.info.systems.items() if name in full]
            meta = near[0] if len(near) == 1 else None
        values = {
            "name": name,
            "provider": meta.provider if meta else None,
            "version": meta.version if meta else None,
            "meta": meta.metadata if meta else None,
            "created_at": utcnow(),
        }
        conn.execute(_insert_ignore(conn, System.__table__, ["name"]), [_col(values)])
        if meta:
            conn.execute(
                update(System)
                .where(System.name == name)
                .values(provider=meta.provider, version=meta.version, meta=meta.metadata)
            )
        sid = conn.execute(select(System.id).where(System.name == name)).scalar_one()
        # Sealed with the change itself: a crash before the pass ends leaves no system row
        # that differs from its ledger entry.
        ledger.record(conn, "system", sid, only_if_changed=True)
        return sid

    # -- one batch ------------------------------------------------------------------
    def _quarantine(
        self, out: list[dict[str, Any]], line: int, raw: str, reason: str, fld: str | None
    ) -> None:
        self.summary.quarantined += 1
        reason = clip(reason)  # one bounded line, however large the field it quotes
        if len(self.summary.problems) < 20:
            self.summary.problems.append((line, reason))
        out.append(
            {
                "batch_id": self.batch_id,
                "source_path": self.source,
                "source_sha256": self.sha,
                "line_no": line,
                "field": None if fld is None else storable(fld)[:100],
                "reason": storable(reason),
                "raw": storable(raw),
                "created_at": utcnow(),
                "resolved_at": None,
                "resolved_batch_id": None,
            }
        )

    def _write_batch(self, buf: list[ResponseRecord | Rejected]) -> None:
        """Write one batch in its own transaction, safe against concurrent ingests.

        See :mod:`cuegap.ingest._concurrent`: a deadlock or serialisation failure rolls the
        batch back and retries it.
        """
        if not buf:
            return
        retry_batch(lambda: self._flush(buf), self.summary)

    def _flush(self, buf: list[ResponseRecord | Rejected]) -> None:
        """Write one batch of records in the current transaction (each design's own)."""
        raise NotImplementedError
