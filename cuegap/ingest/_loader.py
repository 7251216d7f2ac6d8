"""Bulk, streaming, idempotent loading of reader output into the store.

Responses are written in batches, one transaction per batch: executemany on SQLite,
COPY into a staging table on PostgreSQL. Every input record ends up counted exactly once
as stored, duplicate or quarantined, so ``read == stored + duplicate + quarantined``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
from sqlalchemy import insert, select, text, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection, Engine

from cuegap.ingest import itembank as itembank_mod
from cuegap.ingest._records import IngestError, Rejected, ResponseRecord, RunInfo
from cuegap.ingest.parsing import check_assignment, parse_response
from cuegap.ingest.registry import Reader, detect_reader, get_reader
from cuegap.schema import (
    Annotation,
    Dilemma,
    IngestBatch,
    Item,
    ItemBank,
    ItemIndividual,
    Quarantine,
    Response,
    Run,
    System,
)

BATCH_SIZE = 5000
Progress = Callable[[int, int], None]
_RESPONSE_COLS = [c.name for c in Response.__table__.columns if c.name != "id"]


def utcnow() -> datetime:
    """The current time in UTC."""
    return datetime.now(UTC)


@dataclass
class IngestSummary:
    """What one ingest of one path did. ``read == stored + duplicate + quarantined``."""

    path: str
    format: str
    kind: str
    read: int = 0
    stored: int = 0
    duplicate: int = 0
    quarantined: int = 0
    batch_id: int | None = None
    note: str | None = None
    problems: list[tuple[int, str]] = field(default_factory=list)

    @property
    def balanced(self) -> bool:
        """True when every record read is accounted for."""
        return self.read == self.stored + self.duplicate + self.quarantined


def file_sha256(path: Path) -> str:
    """SHA-256 of a file's bytes, read in chunks."""
    digest = hashlib.sha256()
    with Path(path).open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _hash16(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


def ingest_path(
    engine: Engine,
    path: Path | str,
    *,
    format: str | None = None,
    progress: Progress | None = None,
    batch_size: int = BATCH_SIZE,
) -> IngestSummary:
    """Ingest one file or directory into the store.

    Parameters
    ----------
    engine : Engine
        An initialised store (see ``cuegap init``).
    path : Path or str
        A response file or an item bank.
    format : str, optional
        Force a reader by name; by default the format is detected.
    progress : callable, optional
        Called as ``progress(bytes_done, bytes_total)`` after each batch.
    batch_size : int
        Records per transaction.

    Returns
    -------
    IngestSummary

    Raises
    ------
    FileNotFoundError, ValueError, IngestError
        For a missing path, an unknown format, or a file that cannot be read as a whole.
    """
    path = Path(path)
    if format is not None and not path.exists():
        raise FileNotFoundError(f"{path}: no such file or directory")
    reader = get_reader(format) if format else detect_reader(path)
    if reader.kind == "item_bank":
        return _ingest_bank(engine, path, reader)
    return _ResponseLoader(engine, path, reader, batch_size).run(progress)


# ---------------------------------------------------------------------------- item banks


def _ingest_bank(engine: Engine, path: Path, reader: Reader) -> IngestSummary:
    bank = reader.read(path)
    sha = hashlib.sha256(orjson.dumps(bank, option=orjson.OPT_SORT_KEYS)).hexdigest()
    n = len(bank["dilemmas"]) + len(bank["items"])
    summary = IngestSummary(str(path), reader.name, "item_bank", read=n)
    with engine.begin() as conn:
        existing = conn.execute(
            select(ItemBank.id, ItemBank.sha256).where(ItemBank.name == bank["name"])
        ).first()
        if existing is not None:
            if existing.sha256 != sha:
                raise IngestError(
                    f"{path}: item bank {bank['name']!r} is already in the store with different "
                    "content; give the changed bank a new name"
                )
            summary.duplicate = n
            summary.note = f"item bank {bank['name']!r} already in the store; nothing new"
            return summary
        bank_id = conn.execute(
            insert(ItemBank).returning(ItemBank.id),
            {
                "name": bank["name"],
                "description": bank.get("description"),
                "source": bank.get("source"),
                "genders": bank.get("genders"),
                "races": bank.get("races"),
                "source_path": str(path),
                "sha256": sha,
                "ingested_at": utcnow(),
            },
        ).scalar_one()
        conn.execute(
            insert(Dilemma),
            [
                {
                    "bank_id": bank_id,
                    "dilemma_key": d["dilemma_id"],
                    "topic_group": d.get("topic_group"),
                    "person_status": d.get("person_status"),
                    "benefit_option": d["benefit_option"],
                    "human_sys1": (d.get("human_decisions") or {}).get("sys1"),
                    "human_sys2": (d.get("human_decisions") or {}).get("sys2"),
                }
                for d in bank["dilemmas"]
            ],
        )
        dilemma_ids = dict(
            conn.execute(
                select(Dilemma.dilemma_key, Dilemma.id).where(Dilemma.bank_id == bank_id)
            ).all()
        )
        annotations = [
            {
                "dilemma_id": dilemma_ids[d["dilemma_id"]],
                "annotator": a["annotator"],
                "field": key,
                "value": a.get(key),
            }
            for d in bank["dilemmas"]
            for a in d.get("annotations") or []
            for key in ("person_status", "benefit_option", "sys1", "sys2")
            if key in a
        ]
        if annotations:
            conn.execute(insert(Annotation), annotations)
        conn.execute(
            insert(Item),
            [
                {
                    "bank_id": bank_id,
                    "item_key": it["item_id"],
                    "dilemma_id": dilemma_ids[it["dilemma_id"]],
                    "condition": it["condition"],
                    "difficulty": it.get("difficulty"),
                    "puzzle_id": it.get("puzzle_id"),
                    "solution_shape": it.get("solution_shape"),
                    "combination_id": it.get("combination_id"),
                }
                for it in bank["items"]
            ],
        )
        item_ids = dict(
            conn.execute(select(Item.item_key, Item.id).where(Item.bank_id == bank_id)).all()
        )
        individuals = [
            {
                "item_id": item_ids[it["item_id"]],
                "label": p["label"],
                "gender": p["gender"],
                "race": p["race"],
                "name": p.get("name"),
                "solution": p.get("solution"),
            }
            for it in bank["items"]
            for p in it.get("individuals") or []
        ]
        if individuals:
            conn.execute(insert(ItemIndividual), individuals)
    summary.stored = n
    summary.note = (
        f"item bank {bank['name']!r}: {len(bank['dilemmas'])} dilemmas, "
        f"{len(bank['items'])} items, {len(individuals)} individuals"
    )
    return summary


# ----------------------------------------------------------------------------- responses


@dataclass(slots=True)
class _ItemInfo:
    id: int
    condition: str
    difficulty: str | None
    labels: frozenset[str]
    solution: dict[str, dict[str, str]] | None


class _ResponseLoader:
    """Streams one response file into the store, batch by batch."""

    def __init__(self, engine: Engine, path: Path, reader: Reader, batch_size: int) -> None:
        self.engine = engine
        self.path = path
        self.reader = reader
        self.batch_size = batch_size
        self.banks: dict[str, tuple[int, dict[str, _ItemInfo]] | str] = {}
        self.systems: dict[str, int] = {}
        self.summary = IngestSummary(str(path), reader.name, "responses")

    # -- set-up ---------------------------------------------------------------------
    def run(self, progress: Progress | None) -> IngestSummary:
        sha = file_sha256(self.path)
        stream = self.reader.read(self.path)
        self.sha = sha
        self.info: RunInfo = stream.run
        self._open_run(sha)
        try:
            buf: list[ResponseRecord | Rejected] = []
            for rec in stream.records:
                buf.append(rec)
                if len(buf) >= self.batch_size:
                    self._flush(buf)
                    buf = []
                    if progress:
                        progress(stream.position(), stream.total)
            self._flush(buf)
            if progress:
                progress(stream.total, stream.total)
        except BaseException as exc:
            self._finish("failed", f"{type(exc).__name__}: {exc}")
            raise
        self._finish("completed", None)
        if self.summary.stored:
            with self.engine.begin() as conn:  # fresh planner statistics for aggregation
                conn.execute(text("ANALYZE"))
        s = self.summary
        if s.read and s.stored == 0 and s.duplicate:
            s.note = "file already ingested: nothing new stored"
        return s

    def _open_run(self, sha: str) -> None:
        info = self.info
        with self.engine.begin() as conn:
            run_id = conn.execute(select(Run.id).where(Run.source_sha256 == sha)).scalar()
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
                        "source_path": str(self.path),
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
                    "source_path": str(self.path),
                    "source_sha256": sha,
                    "format": self.reader.name,
                    "status": "running",
                    "started_at": utcnow(),
                },
            ).scalar_one()
        self.summary.batch_id = self.batch_id

    def _finish(self, status: str, error: str | None) -> None:
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

    # -- look-ups -------------------------------------------------------------------
    def _bank(self, conn: Connection, name: str | None) -> tuple[int, dict[str, _ItemInfo]] | str:
        """The bank's id and items, or why it cannot be used (cached either way)."""
        key = name or ""
        if key not in self.banks:
            self.banks[key] = self._load_bank(conn, name)
        return self.banks[key]

    def _load_bank(
        self, conn: Connection, name: str | None
    ) -> tuple[int, dict[str, _ItemInfo]] | str:
        if name:
            bank_id = conn.execute(select(ItemBank.id).where(ItemBank.name == name)).scalar()
            if bank_id is None:
                known = conn.execute(select(ItemBank.name)).scalars().all()
                return (
                    f"unknown item bank {name!r}; the store has: {', '.join(known) or 'none'} "
                    "(ingest the item bank first)"
                )
        else:
            rows = conn.execute(select(ItemBank.id, ItemBank.name)).all()
            if len(rows) != 1:
                names = ", ".join(r.name for r in rows) or "none"
                return (
                    'no item bank named (add "item_bank" to the header or the line) and the '
                    f"store holds {len(rows)} banks: {names}"
                )
            bank_id = rows[0].id
        items: dict[str, _ItemInfo] = {}
        indiv: dict[int, dict[str, dict[str, str]]] = {}
        for r in conn.execute(
            select(
                ItemIndividual.item_id,
                ItemIndividual.label,
                ItemIndividual.gender,
                ItemIndividual.race,
                ItemIndividual.solution,
            )
            .join(Item, Item.id == ItemIndividual.item_id)
            .where(Item.bank_id == bank_id)
        ):
            indiv.setdefault(r.item_id, {})[r.label] = r.solution or {
                "gender": r.gender,
                "race": r.race,
            }
        for r in conn.execute(
            select(Item.id, Item.item_key, Item.condition, Item.difficulty).where(
                Item.bank_id == bank_id
            )
        ):
            people = indiv.get(r.id, {})
            solution = people if r.condition in itembank_mod.PUZZLE_CONDITIONS else None
            items[r.item_key] = _ItemInfo(
                r.id, r.condition, r.difficulty, frozenset(people), solution
            )
        return bank_id, items

    def _system(self, conn: Connection, name: str) -> int:
        sid = self.systems.get(name)
        if sid is not None:
            return sid
        meta = self.info.systems.get(name)
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
        self.systems[name] = sid
        return sid

    # -- one batch ------------------------------------------------------------------
    def _quarantine(
        self, out: list[dict[str, Any]], line: int, raw: str, reason: str, fld: str | None
    ) -> None:
        self.summary.quarantined += 1
        if len(self.summary.problems) < 20:
            self.summary.problems.append((line, reason))
        out.append(
            {
                "batch_id": self.batch_id,
                "source_path": str(self.path),
                "source_sha256": self.sha,
                "line_no": line,
                "field": fld,
                "reason": reason,
                "raw": raw,
                "created_at": utcnow(),
            }
        )

    def _flush(self, buf: list[ResponseRecord | Rejected]) -> None:
        if not buf:
            return
        s = self.summary
        s.read += len(buf)
        quarantine: list[dict[str, Any]] = []
        rows: dict[str, dict[str, Any]] = {}
        with self.engine.begin() as conn:
            for rec in buf:
                if isinstance(rec, Rejected):
                    self._quarantine(quarantine, rec.line, rec.raw, rec.reason, rec.field)
                    continue
                row = self._row(conn, rec, quarantine)
                if row is None:
                    continue
                prev = rows.get(row["response_key"])
                if prev is None:
                    rows[row["response_key"]] = row
                elif prev["content_hash"] == row["content_hash"]:
                    s.duplicate += 1
                else:
                    self._quarantine(
                        quarantine,
                        rec.line,
                        rec.raw,
                        f"conflicts with line {prev['source_line']} of the same file: same system, "
                        "item, probe, individual, consequences, prompt_variant and repeat but a "
                        "different response (give one a different 'repeat')",
                        "response",
                    )
            # Insert first; only when some keys were already stored (a re-ingest, an overlap)
            # look them up to tell duplicates from conflicts. A fresh file pays no lookups.
            raws = {key: row.pop("_raw") for key, row in rows.items()}
            inserted = _write_responses(conn, list(rows.values()))
            s.stored += inserted
            if inserted < len(rows):
                existing = _existing(conn, list(rows), exclude_batch=self.batch_id)
                for key, row in rows.items():
                    old = existing.get(key)
                    if old is None:
                        continue  # stored by this batch
                    if old[0] == row["content_hash"]:
                        s.duplicate += 1
                        continue
                    self._quarantine(
                        quarantine,
                        row["source_line"],
                        raws[key],
                        f"conflicts with the stored response from {old[2]} line {old[1]}: same "
                        "system, item, probe, individual, consequences, prompt_variant and repeat "
                        "but a different response (give one a different 'repeat')",
                        "response",
                    )
            if quarantine:
                conn.execute(
                    _insert_ignore(conn, Quarantine.__table__, ["source_sha256", "line_no"]),
                    quarantine,
                )
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

    def _row(
        self, conn: Connection, rec: ResponseRecord, quarantine: list[dict[str, Any]]
    ) -> dict[str, Any] | None:
        bank_name = rec.item_bank or self.info.item_bank
        bank = self._bank(conn, bank_name)
        if isinstance(bank, str):
            self._quarantine(quarantine, rec.line, rec.raw, bank, "item_bank")
            return None
        bank_id, items = bank
        item = items.get(rec.item_id)
        if item is None:
            self._quarantine(
                quarantine,
                rec.line,
                rec.raw,
                f"unknown item_id {rec.item_id!r} in item bank {bank_name or bank_id!r}",
                "item_id",
            )
            return None
        if item.condition == "neutral" and rec.probe != "main":
            self._quarantine(
                quarantine,
                rec.line,
                rec.raw,
                f"probe {rec.probe!r} does not apply to the neutral item {rec.item_id!r} "
                "(only 'main')",
                "probe",
            )
            return None
        if rec.individual is not None and rec.individual not in item.labels:
            self._quarantine(
                quarantine,
                rec.line,
                rec.raw,
                f"individual {rec.individual!r} is not in item {rec.item_id!r} "
                f"(has {', '.join(sorted(item.labels))})",
                "individual",
            )
            return None
        parsed = parse_response(rec.response, probe=rec.probe, condition=item.condition)
        recovered = None
        if rec.probe == "main" and item.solution is not None:
            recovered = check_assignment(parsed.assignment, item.solution)
        natural = "\x1f".join(
            (
                rec.system,
                str(bank_id),
                rec.item_id,
                rec.probe,
                rec.individual or "",
                "1" if rec.consequences else "0",
                rec.prompt_variant,
                str(rec.repeat),
            )
        )
        return {
            "response_key": _hash16(natural),
            "content_hash": _hash16(rec.response),
            "run_id": self.run_id,
            "batch_id": self.batch_id,
            "system_id": self._system(conn, rec.system),
            "item_id": item.id,
            "condition": item.condition,
            "difficulty": item.difficulty,
            "probe": rec.probe,
            "individual": rec.individual,
            "consequences": rec.consequences,
            "prompt_variant": rec.prompt_variant,
            "repeat": rec.repeat,
            "raw_text": rec.response,
            "prompt": rec.prompt,
            "sample_id": rec.sample_id,
            "parsed_answer": parsed.answer,
            "selected_individual": parsed.individual,
            "parse_status": parsed.status,
            "abstained": parsed.abstained,
            "assignment": parsed.assignment,
            "recovered": recovered,
            "puzzle_correct": None
            if recovered is None
            else recovered == "".join(sorted(item.labels)),
            "runner_result": rec.runner_result,
            "source_line": rec.line,
            "_raw": rec.raw,
        }


# ---------------------------------------------------------------------- SQL helpers


def _col(values: dict[str, Any]) -> dict[str, Any]:
    """Map attribute names to column names where they differ (System.meta -> metadata)."""
    if "meta" in values:
        values = dict(values)
        values["metadata"] = values.pop("meta")
    return values


def _insert_ignore(conn: Connection, table: Any, conflict: list[str]) -> Any:
    if conn.dialect.name == "postgresql":
        return postgresql.insert(table).on_conflict_do_nothing(index_elements=conflict)
    return sqlite.insert(table).on_conflict_do_nothing(index_elements=conflict)


def _existing(
    conn: Connection, keys: list[str], *, exclude_batch: int
) -> dict[str, tuple[str, int, str]]:
    """Stored (content hash, line, source path) of response keys not written by a batch."""
    out: dict[str, tuple[str, int, str]] = {}
    for i in range(0, len(keys), 900):
        chunk = keys[i : i + 900]
        stmt = (
            select(
                Response.response_key, Response.content_hash, Response.source_line, Run.source_path
            )
            .join(Run, Run.id == Response.run_id)
            .where(Response.response_key.in_(chunk), Response.batch_id != exclude_batch)
        )
        for r in conn.execute(stmt):
            out[r.response_key] = (r.content_hash, r.source_line, r.source_path)
    return out


def _write_responses(conn: Connection, rows: list[dict[str, Any]]) -> int:
    """Insert new responses, skipping keys stored meanwhile by a concurrent ingest.

    Bypasses SQLAlchemy's per-row parameter processing: the DBAPI's executemany on SQLite,
    COPY into a staging table on PostgreSQL.
    """
    if not rows:
        return 0
    for row in rows:
        if row["assignment"] is not None:
            row["assignment"] = orjson.dumps(row["assignment"]).decode()
        if row["runner_result"] is not None:
            row["runner_result"] = orjson.dumps(row["runner_result"]).decode()
    values = [tuple(row[c] for c in _RESPONSE_COLS) for row in rows]
    raw = conn.connection.driver_connection
    cols = ", ".join(_RESPONSE_COLS)
    if conn.dialect.name != "postgresql":
        marks = ", ".join("?" * len(_RESPONSE_COLS))
        cur = raw.cursor()
        try:
            cur.executemany(f"INSERT OR IGNORE INTO response ({cols}) VALUES ({marks})", values)
            return cur.rowcount
        finally:
            cur.close()
    with raw.cursor() as cur:
        cur.execute(
            "CREATE TEMP TABLE IF NOT EXISTS _response_stage ON COMMIT DELETE ROWS AS "
            f"SELECT {cols} FROM response WITH NO DATA"
        )
        with cur.copy(f"COPY _response_stage ({cols}) FROM STDIN") as copy:
            for value in values:
                copy.write_row(value)
        cur.execute(
            f"INSERT INTO response ({cols}) SELECT {cols} FROM _response_stage "
            "ON CONFLICT (response_key) DO NOTHING"
        )
        inserted = cur.rowcount
        cur.execute("DELETE FROM _response_stage")
    return inserted
