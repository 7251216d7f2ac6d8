"""Loading two-agent transcripts (:class:`~cuegap.ingest.mac_conversation.ConvRecord`)
into the conversation tables.

On the machinery of every design (:class:`cuegap.ingest._pass._IngestPass`): one run
and ingest batch per pass, one transaction per batch of transcripts retried after a
deadlock, every transcript stored, counted as a duplicate or quarantined with its reason
(``read == stored + duplicate + quarantined``), quarantined transcripts resolved when a
later pass stores them, the pass sealed in the ledger.

A folder is one input: its run is keyed by :func:`~cuegap.ingest.mac_conversation.
fingerprint` (the SHA-256 of its files' relative names and sizes) rather than by the
bytes of one file, so ingesting an unchanged folder again is recognised as the same run,
and a transcript's "line" is its place in the walk. Idempotence rests on
``conversation.transcript_id``: a transcript stored before is a duplicate, whichever
file or folder it comes from; the same id with other content is quarantined as a
conflict. Configurations (one per snapshot) and systems are written in short
transactions of their own and cached, so a batch locks no shared row.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from sqlalchemy import insert, select, text, update
from sqlalchemy.engine import Connection

from cuegap.ingest import mac_conversation
from cuegap.ingest._bulk import insert_rows
from cuegap.ingest._concurrent import in_key_order, nothing_new_note
from cuegap.ingest._conv_snapshot import SnapshotSettings
from cuegap.ingest._guard import clean_run, refuse_foreign
from cuegap.ingest._pass import PROGRESS_EVERY, _IngestPass
from cuegap.ingest._records import REST_OF_FILE, Rejected
from cuegap.ingest._sql import (
    _insert_ignore,
    _resolve_quarantine,
    _upsert_quarantine,
    stored_by_key,
)
from cuegap.ingest._summary import IngestSummary, Progress, file_sha256
from cuegap.ingest._validate import text_problem
from cuegap.ingest.mac_conversation import ConvRecord
from cuegap.schema import (
    ConvAgent,
    ConvConfig,
    Conversation,
    ConvTally,
    IngestBatch,
    compact_conv_tally,
    tally_rows,
    transitions,
)

#: Transcripts per transaction: each keeps its raw JSON text, so batches stay small.
CONV_BATCH = 2_000


def _content_hash(rec: ConvRecord) -> str:
    h = hashlib.blake2b(digest_size=16)
    h.update(f"{rec.settings.config_key}\x1f{rec.question_id}\x1f{rec.status}".encode())
    for r, role, _agent, opinion, rationale, _retry in rec.opinions:
        h.update(f"\x1e{r}\x1f{role}\x1f{opinion}\x1f{rationale or ''}".encode("utf-8", "replace"))
    return h.hexdigest()


def _problem(rec: ConvRecord) -> str | None:
    """Why a record's text cannot be stored on every backend, else None."""
    for name, value in (("raw", rec.raw), ("transcript_id", rec.transcript_id),
                        ("question_id", rec.question_id)):  # fmt: skip
        if why := text_problem(value):
            return f"{name} {why}"
    for r, _role, agent, opinion, rationale, _retry in rec.opinions:
        for name, value in (("opinion", opinion), ("rationale", rationale or "")):
            if why := text_problem(value):
                return f"round {r}: the {name} of {agent} {why}"
    return None


class ConversationLoader(_IngestPass):
    """Streams a folder or file of two-agent transcripts into the store."""

    def __init__(self, engine: Any, path: Path, reader: Any, batch_size: int) -> None:
        super().__init__(engine, path, reader, min(batch_size, CONV_BATCH))
        self.configs: dict[str, int] = {}
        self.with_retries = 0

    def run(self, progress: Progress | None) -> IngestSummary:
        if self.path.is_dir():
            self.sha, total, _files = mac_conversation.fingerprint(self.path)
        else:
            self.sha, total = file_sha256(self.path), self.path.stat().st_size
        stream = mac_conversation.read(self.path, total=total)
        if self.forced:  # a forced format on a file of another: refused before any write
            stream.records = refuse_foreign(stream.records, self.reader, self.path)
        self.info = clean_run(stream.run)
        self._open_run(self.sha)
        try:
            buf: list[Any] = []
            for rec in stream.records:
                buf.append(rec)
                if len(buf) >= self.batch_size:
                    self._write_batch(buf)
                    buf = []
                if progress and (len(buf) % PROGRESS_EVERY == 0 or not buf):
                    progress(stream.position(), stream.total)
            self._write_batch(buf)
            if progress:
                progress(stream.total, stream.total)
        except BaseException as exc:
            self._finish("failed", f"{type(exc).__name__}: {exc}")
            raise
        self._finish("completed", None)
        s = self.summary
        if s.stored:
            with self.engine.connect() as conn:  # one tally row per configuration again
                compact_conv_tally(conn)
            with self.engine.begin() as conn:  # fresh planner statistics for conv_counts
                if conn.dialect.name == "sqlite":
                    conn.execute(text("PRAGMA analysis_limit=1000"))
                conn.execute(text("ANALYZE"))
        if s.read and s.stored == 0 and s.duplicate:
            with self.engine.connect() as conn:
                s.note = nothing_new_note(conn, self.sha, self.batch_id)
        elif self.with_retries:
            s.note = (
                f"{self.with_retries:,} stored conversations needed structured-output "
                "retries (kept; see conversation.retries)"
            )
        return s

    def _configs(self, recs: list[ConvRecord]) -> None:
        """Create the configurations (with their agents) a chunk meets for the first time,
        all in one transaction of their own, and cache their ids.

        One commit per chunk rather than per configuration: a paper-scale run has about
        25,000 configurations, and each commit is a disk sync.
        """
        new: dict[str, SnapshotSettings] = {}
        for rec in recs:
            if rec.settings.config_key not in self.configs:
                new.setdefault(rec.settings.config_key, rec.settings)
        if not new:
            return
        systems = {st.system: self._system(None, st.system) for st in new.values()}  # type: ignore[arg-type]
        rows = [
            {
                "config_key": key,
                "system_id": systems[st.system],
                "experiment_name": st.experiment_name[:300],
                "benchmark": st.benchmark[:100],
                "category": st.category[:200],
                "subcategory": st.subcategory[:300],
                "demographics": st.demographics,
                "persona": st.persona,
                "instantiation": st.instantiation,
                "reveal": st.reveal,
                "reveal_persona": st.switches[0],
                "reveal_demographics": st.switches[1],
                "reveal_presence_mode": st.switches[2],
                "max_rounds": st.max_rounds,
                "routing_strategy": st.routing_strategy,
                "snapshot_path": st.path,
                "snapshot": st.snapshot,
            }
            for key, st in new.items()
        ]
        g = ConvConfig.__table__
        with self.engine.begin() as conn:
            conn.execute(_insert_ignore(conn, g, ["config_key"]), in_key_order(rows, "config_key"))
            keys = sorted(new)
            ids: dict[str, int] = {}
            for i in range(0, len(keys), 900):
                part = keys[i : i + 900]
                ids.update(
                    conn.execute(
                        select(g.c.config_key, g.c.id).where(g.c.config_key.in_(part))
                    ).all()
                )  # type: ignore[arg-type]
            agents = [
                _agent_row(ids[key], st.roles[a["agent_id"]], a)
                for key, st in new.items()
                for a in st.agents
            ]
            conn.execute(
                _insert_ignore(conn, ConvAgent.__table__, ["config_id", "agent_id"]),
                in_key_order(agents, "config_id", "agent_id"),
            )
        self.configs.update(ids)

    def _flush(self, buf: list[Any]) -> None:
        if not buf:
            return
        s = self.summary
        s.read += len(buf)
        quarantine: list[dict[str, Any]] = []
        rows: dict[str, dict[str, Any]] = {}
        recs: dict[str, ConvRecord] = {}
        accounted: list[int] = []
        self._configs([r for r in buf if isinstance(r, ConvRecord)])
        for rec in buf:
            if isinstance(rec, Rejected):
                if rec.field == REST_OF_FILE:
                    s.incomplete = rec.reason
                self._quarantine(quarantine, rec.line, rec.raw, rec.reason, rec.field)
                continue
            if why := _problem(rec):
                tag = f"{rec.source_file}: " if rec.source_file else ""
                self._quarantine(quarantine, rec.line, rec.raw, tag + why, None)
                continue
            row = {
                "transcript_id": rec.transcript_id, "content_hash": _content_hash(rec),
                "run_id": self.run_id, "batch_id": self.batch_id,
                "config_id": self.configs[rec.settings.config_key],
                "question_id": rec.question_id,
                "status": rec.status, "rounds": rec.rounds, "consensus": rec.consensus,
                "retries": rec.retries, "source_file": rec.source_file,
                "source_line": rec.line, "raw": rec.raw,
            }  # fmt: skip
            prev = rows.get(rec.transcript_id)
            if prev is None:
                rows[rec.transcript_id], recs[rec.transcript_id] = row, rec
            elif prev["content_hash"] == row["content_hash"]:
                s.duplicate += 1
                accounted.append(rec.line)
            else:
                where = f"transcript {prev['source_line']} of the same input"
                self._quarantine(quarantine, rec.line, rec.raw, _conflict(rec, where), None)
        with self.engine.begin() as conn:
            if rows:
                ordered = in_key_order(rows.values(), "transcript_id")
                insert_rows(conn, "conversation", _CONV_COLS, ordered, conflict="transcript_id")
            stored = _stored(conn, list(rows))
            opinions: list[tuple[Any, ...]] = []
            counted: list[tuple[int, tuple[int, int, int, int]]] = []
            for tid, row in rows.items():
                old = stored[tid]
                if old["batch_id"] == self.batch_id and old["source_line"] == row["source_line"]:
                    s.stored += 1
                    accounted.append(row["source_line"])
                    self.with_retries += recs[tid].retries > 0
                    counted.append((row["config_id"], transitions(recs[tid].opinions)))
                    cid = old["id"]
                    opinions += [(cid, *op) for op in recs[tid].opinions]
                elif old["content_hash"] == row["content_hash"]:
                    s.duplicate += 1
                    accounted.append(row["source_line"])
                else:
                    where = (
                        f"the stored transcript from {old['source_path']} ({old['source_line']})"
                    )
                    rec = recs[tid]
                    self._quarantine(quarantine, rec.line, rec.raw, _conflict(rec, where), None)
            if opinions:  # counted in the same transaction: the tally never lags
                insert_rows(conn, "conv_opinion", _OPINION_COLS, opinions)
                conn.execute(insert(ConvTally), tally_rows(self.batch_id, counted))
            if quarantine:
                conn.execute(
                    _upsert_quarantine(conn), in_key_order(quarantine, "source_sha256", "line_no")
                )
            if self.open_quarantine and accounted:
                _resolve_quarantine(conn, self.sha, accounted, self.batch_id)
            conn.execute(
                update(IngestBatch)
                .where(IngestBatch.id == self.batch_id)
                .values(
                    lines_read=s.read,
                    stored=s.stored,
                    duplicate=s.duplicate,
                    quarantined=s.quarantined,
                )
            )


#: Stored columns of ``conversation`` (the loader's row dicts) and ``conv_opinion`` (a
#: conversation id, then :attr:`ConvRecord.opinions`' tuple order).
_CONV_COLS = (
    "transcript_id", "content_hash", "run_id", "batch_id", "config_id", "question_id",
    "status", "rounds", "consensus", "retries", "source_file", "source_line", "raw",
)  # fmt: skip
_OPINION_COLS = (
    "conversation_id", "round", "role", "agent_id", "opinion", "rationale", "retry_count",
)  # fmt: skip


def _agent_row(config_id: int, role: str, a: dict[str, Any]) -> dict[str, Any]:
    temp = a.get("temperature")
    return {
        "config_id": config_id,
        "agent_id": a["agent_id"],
        "role": role,  # from the configuration (_conv_snapshot.agent_roles)
        "agent_role": str(a.get("role"))[:50],
        "demographics": a.get("demographics"),
        "persona": a.get("persona"),
        "if_as_human": bool(a.get("if_as_human")),
        "model": str(a.get("model"))[:200],
        "temperature": temp if isinstance(temp, int | float) else None,
    }


def _conflict(rec: ConvRecord, where: str) -> str:
    tag = f"{rec.source_file}: " if rec.source_file else ""
    return (
        f"{tag}transcript_id {rec.transcript_id!r} conflicts with {where}: same id, different "
        "configuration, question or opinions"
    )


def _stored(conn: Connection, keys: list[str]) -> dict[str, dict[str, Any]]:
    """The stored rows (id, content hash, batch, line, source path) of transcript ids."""
    cols = ("id", "content_hash", "batch_id", "source_line")
    return stored_by_key(conn, Conversation.__table__, "transcript_id", cols, keys)
