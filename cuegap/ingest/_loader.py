"""Bulk, streaming, idempotent loading of reader output into the store.

Responses are written in batches, one transaction per batch: executemany on SQLite,
COPY into a staging table on PostgreSQL. Every input record ends up counted exactly once
as stored, duplicate or quarantined, so ``read == stored + duplicate + quarantined``.

The per-record path is kept lean because it runs once per response (hundreds of
thousands per audit): insert tuples are built directly, the columns that follow from the
response text (parse result, content hash) are computed once per distinct text, probe and
item, and on SQLite NULLs and booleans are bound as cheap integers (binding Python's None
and bool is several times slower than binding an int in the sqlite3 module).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
from sqlalchemy import Index, insert, select, text, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection, Engine

from cuegap.ingest import itembank as itembank_mod
from cuegap.ingest._axes import write_individual_axes
from cuegap.ingest._concurrent import (
    in_key_order,
    nothing_new_note,
    retry_batch,
)
from cuegap.ingest._records import REST_OF_FILE, IngestError, Rejected, ResponseRecord, RunInfo
from cuegap.ingest._validate import check, storable
from cuegap.ingest.parsing import Parsed, check_assignment, parse_response
from cuegap.ingest.registry import Reader, detect_reader, get_reader, run_file, with_mapping
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
    ledger,
)

BATCH_SIZE = 50_000  # records per transaction: fewer commits rewrite fewer index pages
PROGRESS_EVERY = 10_000  # records between progress calls
# On SQLite, a load expected to bring at least this many responses, and at least as many
# as are stored, drops the secondary indexes of `response` and builds them once at the end.
DEFER_INDEXES_MIN = 100_000
Progress = Callable[[int, int], None]
# Insert order of the response columns: per-record values first, then the columns derived
# from (response text, probe, item), which come from one cached tuple.
_ROW_COLS = (
    "response_key",
    "run_id",
    "batch_id",
    "system_id",
    "item_id",
    "condition",
    "difficulty",
    "probe",
    "individual",
    "consequences",
    "prompt_variant",
    "repeat",
    "raw_text",
    "prompt",
    "sample_id",
    "runner_result",
    "source_line",
)
_DERIVED_COLS = (
    "content_hash",
    "parsed_answer",
    "selected_individual",
    "parse_status",
    "abstained",
    "assignment",
    "recovered",
    "puzzle_correct",
)
_RESPONSE_COLS = _ROW_COLS + _DERIVED_COLS
_LINE = _RESPONSE_COLS.index("source_line")
_CONTENT = _RESPONSE_COLS.index("content_hash")
# Derived-column tuples are cached for texts up to this length, in a cache emptied at size.
_DERIVED_TEXT = 2_048
_DERIVED_SIZE = 16_384


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
    incomplete: str | None = None
    """Why the file could not be read to its end (records after that point are unknown)."""

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
    mapping: Path | str | None = None,
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
        Called as ``progress(bytes_done, bytes_total)`` every few thousand records.
    batch_size : int
        Records per transaction.
    mapping : Path or str, optional
        A TOML mapping file for runner formats (see :mod:`cuegap.ingest.mapping`).

    Returns
    -------
    IngestSummary

    Raises
    ------
    FileNotFoundError, ValueError, IngestError
        For a missing path, an unknown format, or a file that cannot be read as a whole.
    """
    path = run_file(Path(path))  # a HELM run folder stands for its scenario_state.json
    if format is not None and not path.exists():
        raise FileNotFoundError(f"{path}: no such file or directory")
    reader = get_reader(format) if format else detect_reader(path)
    reader = with_mapping(reader, mapping)
    if reader.kind == "item_bank":
        return _ingest_bank(engine, path, reader)
    loader_cls: type[_ResponseLoader] = _ResponseLoader
    if reader.design == "qa":  # the QA design's answers (cuegap.ingest._qa_loader)
        from cuegap.ingest._qa_loader import QAResponseLoader as loader_cls
    loader = loader_cls(engine, path, reader, batch_size)
    if mapping is not None:  # recorded with the ingest pass, for provenance
        text_ = Path(mapping).read_bytes()
        loader.mapping = {
            "path": str(mapping),
            "sha256": hashlib.sha256(text_).hexdigest(),
            "toml": text_.decode("utf-8", "replace"),
        }
    return loader.run(progress)


# ---------------------------------------------------------------------------- item banks


def _ingest_bank(engine: Engine, path: Path, reader: Reader) -> IngestSummary:
    bank = reader.read(path)
    if bank.get("design") == "qa":  # the QA design's banks (cuegap.ingest._qa_bank)
        from cuegap.ingest._qa_bank import ingest_qa_bank

        return ingest_qa_bank(engine, path, reader.name, bank)
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
                "source_path": storable(str(path.resolve())),
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
            write_individual_axes(conn, bank_id)
        ledger.record(conn, "bank", bank_id)
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
    all_labels: str = ""  # the sorted labels joined: what a fully correct puzzle recovers
    main_key: str = ""  # what, besides the text, a main-probe answer's columns depend on

    def __post_init__(self) -> None:
        self.all_labels = "".join(sorted(self.labels))
        self.main_key = self.condition
        if self.solution is not None:
            solution = orjson.dumps(self.solution, option=orjson.OPT_SORT_KEYS).decode()
            self.main_key = f"{self.condition}\x1f{solution}"


@dataclass(frozen=True, slots=True)
class _Codec:
    """How NULLs and booleans are passed to the driver (see the module docstring).

    On SQLite, nullable columns are written as ``NULLIF(?, 0)`` (text) or ``NULLIF(?, '')``
    (boolean) and get 0 or '' for NULL; an integer never equals a text value in SQLite, so
    no real value is mistaken for the marker.
    """

    null: Any  # NULL in a nullable text column
    null_bool: Any  # NULL in a nullable boolean column
    true: Any
    false: Any


_SQLITE_CODEC = _Codec(0, "", 1, 0)
_PLAIN_CODEC = _Codec(None, None, True, False)
_SECONDARY = [ix for ix in Response.__table__.indexes if not ix.unique]
_NULLABLE_TEXT = frozenset(
    c.name
    for c in Response.__table__.columns
    if c.nullable and c.name in _RESPONSE_COLS and c.name != "puzzle_correct"
)


class _ResponseLoader:
    """Streams one response file into the store, batch by batch."""

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
        # Stored resolved (the same file from another working directory is the same file).
        self.source = storable(str(path.resolve()))
        self.open_quarantine = False  # the file has unresolved quarantined lines
        self.seen_before = False  # an earlier pass ingested this very file
        # Earlier passes of this file that were intact in the ledger when this one began:
        # a line quarantined again moves to this pass, so they are sealed anew at the end.
        self.earlier_intact: list[int] = []

    # -- set-up ---------------------------------------------------------------------
    def run(self, progress: Progress | None) -> IngestSummary:
        sha = file_sha256(self.path)
        stream = self.reader.read(self.path)
        self.sha = sha
        self.info: RunInfo = stream.run
        self._open_run(sha)
        self._restore_indexes(_SECONDARY)  # any left dropped by an interrupted ingest
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
        """On SQLite, drop the secondary indexes of ``response`` before a large load.

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
            stored = conn.execute(text("SELECT max(rowid) FROM response")).scalar() or 0
            if expected < max(stored, DEFER_INDEXES_MIN):
                return []
            for ix in _SECONDARY:
                ix.drop(conn)
        return list(_SECONDARY)

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
            # Seal what this pass wrote in the ledger (systems are sealed as they change).
            ledger.record(conn, "batch", self.batch_id)
            for earlier in self.earlier_intact:
                ledger.record(conn, "batch", earlier, only_if_changed=True)

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
        if not buf:
            return
        s = self.summary
        s.read += len(buf)
        quarantine: list[dict[str, Any]] = []
        rows: dict[str, tuple[Any, ...]] = {}
        recs: dict[str, ResponseRecord] = {}
        banks, systems, derived = self.banks, self.systems, self.derived
        header_bank = self.info.item_bank
        run_id, batch_id = self.run_id, self.batch_id
        null, true, false = self.codec.null, self.codec.true, self.codec.false
        blake2b, dumps = hashlib.blake2b, orjson.dumps
        accounted: list[int] = []  # lines stored or counted as duplicates: resolve quarantine
        with self.engine.begin() as conn:
            for rec in buf:
                if isinstance(rec, Rejected):
                    if rec.field == REST_OF_FILE:
                        s.incomplete = rec.reason
                    self._quarantine(quarantine, rec.line, rec.raw, rec.reason, rec.field)
                    continue
                problem = check(rec)
                if problem is not None:  # the same rule on every backend (see _validate)
                    self._quarantine(quarantine, rec.line, rec.raw, problem[1], problem[0])
                    continue
                bank_name = rec.item_bank or header_bank
                bank = banks.get(bank_name or "")
                if bank is None:
                    bank = self._bank(conn, bank_name)
                if isinstance(bank, str):
                    self._quarantine(quarantine, rec.line, rec.raw, bank, "item_bank")
                    continue
                bank_id, items = bank
                item = items.get(rec.item_id)
                probe, individual = rec.probe, rec.individual
                if (
                    item is None
                    or (item.condition == "neutral" and probe != "main")
                    or (individual is not None and individual not in item.labels)
                ):
                    self._reject(quarantine, rec, item, bank_name or bank_id)
                    continue
                response = rec.response
                parsed = parse_response(response, probe=probe, condition=item.condition)
                # Other probes' columns depend on the text and probe alone.
                dkey = (response, probe, item.main_key if probe == "main" else "")
                tail = derived.get(dkey)
                if tail is None:
                    tail = self._derive(dkey, item, parsed)
                consequences = rec.consequences
                natural = (
                    f"{rec.system}\x1f{bank_id}\x1f{rec.item_id}\x1f{probe}\x1f"
                    f"{individual or ''}\x1f{'1' if consequences else '0'}\x1f"
                    f"{rec.prompt_variant}\x1f{rec.repeat}"
                )
                key = blake2b(natural.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()
                system_id = systems.get(rec.system)
                if system_id is None:
                    system_id = self._system(conn, rec.system)
                prompt, sample_id, runner = rec.prompt, rec.sample_id, rec.runner_result
                row = (
                    key,
                    run_id,
                    batch_id,
                    system_id,
                    item.id,
                    item.condition,
                    null if item.difficulty is None else item.difficulty,
                    probe,
                    null if individual is None else individual,
                    true if consequences else false,
                    rec.prompt_variant,
                    rec.repeat,
                    response,
                    null if prompt is None else prompt,
                    null if sample_id is None else sample_id,
                    null if runner is None else dumps(runner).decode(),
                    rec.line,
                    *tail,
                )
                prev = rows.get(key)
                if prev is None:
                    rows[key] = row
                    recs[key] = rec
                elif prev[_CONTENT] == tail[0]:
                    s.duplicate += 1
                    accounted.append(rec.line)
                else:
                    self._quarantine(
                        quarantine,
                        rec.line,
                        rec.raw,
                        f"conflicts with line {prev[_LINE]} of the same file: same system, "
                        "item, probe, individual, consequences, prompt_variant and repeat but a "
                        "different response (give one a different 'repeat')",
                        "response",
                    )
            # Insert first; only when some keys were already stored (a re-ingest, an overlap)
            # look them up to tell duplicates from conflicts. A fresh file pays no lookups.
            inserted = _write_responses(conn, rows.values())
            s.stored += inserted
            if inserted < len(rows):
                existing = _existing(conn, list(rows))
                for key, row in rows.items():
                    old = existing.get(key)
                    if old is None or (old[3] == batch_id and old[1] == row[_LINE]):
                        accounted.append(row[_LINE])
                        continue  # stored by this transaction
                    if old[0] == row[_CONTENT]:
                        s.duplicate += 1
                        accounted.append(row[_LINE])
                        continue
                    where = (
                        f"line {old[1]} of the same file"
                        if old[3] == batch_id
                        else f"the stored response from {old[2]} line {old[1]}"
                    )
                    self._quarantine(
                        quarantine,
                        row[_LINE],
                        recs[key].raw,
                        f"conflicts with {where}: same system, item, probe, individual, "
                        "consequences, prompt_variant and repeat but a different response "
                        "(give one a different 'repeat')",
                        "response",
                    )
            else:
                accounted.extend(row[_LINE] for row in rows.values())
            if quarantine:
                conn.execute(
                    _upsert_quarantine(conn), in_key_order(quarantine, "source_sha256", "line_no")
                )
            if self.open_quarantine and accounted:
                _resolve_quarantine(conn, self.sha, accounted, batch_id)
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

    def _reject(
        self,
        quarantine: list[dict[str, Any]],
        rec: ResponseRecord,
        item: _ItemInfo | None,
        bank: str | int,
    ) -> None:
        """Quarantine a record whose item, probe or individual does not fit the bank."""
        if item is None:
            reason = f"unknown item_id {rec.item_id!r} in item bank {bank!r}"
            fld = "item_id"
        elif item.condition == "neutral" and rec.probe != "main":
            reason = (
                f"probe {rec.probe!r} does not apply to the neutral item {rec.item_id!r} "
                "(only 'main')"
            )
            fld = "probe"
        else:
            reason = (
                f"individual {rec.individual!r} is not in item {rec.item_id!r} "
                f"(has {', '.join(sorted(item.labels))})"
            )
            fld = "individual"
        self._quarantine(quarantine, rec.line, rec.raw, reason, fld)

    def _derive(
        self, dkey: tuple[str, str, str], item: _ItemInfo, parsed: Parsed
    ) -> tuple[Any, ...]:
        """The columns that follow from (response, probe, item), cached for short texts."""
        response, probe, _ = dkey
        null, codec = self.codec.null, self.codec
        recovered = None
        if probe == "main" and item.solution is not None:
            recovered = check_assignment(parsed.assignment, item.solution)
        tail = (
            _hash16(response),
            null if parsed.answer is None else parsed.answer,
            null if parsed.individual is None else parsed.individual,
            parsed.status,
            codec.true if parsed.abstained else codec.false,
            null if parsed.assignment is None else orjson.dumps(parsed.assignment).decode(),
            null if recovered is None else recovered,
            codec.null_bool
            if recovered is None
            else (codec.true if recovered == item.all_labels else codec.false),
        )
        if len(response) <= _DERIVED_TEXT:
            if len(self.derived) >= _DERIVED_SIZE:
                self.derived.clear()
            self.derived[dkey] = tail
        return tail


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


def _existing(conn: Connection, keys: list[str]) -> dict[str, tuple[str, int, str, int]]:
    """Stored (content hash, line, source path, ingest batch) of response keys.

    A key stored by the current ingest pass in an earlier transaction has the pass's batch
    id and another line: a repeat (or a conflict) within the file, counted as such.
    """
    out: dict[str, tuple[str, int, str, int]] = {}
    for i in range(0, len(keys), 900):
        chunk = keys[i : i + 900]
        stmt = (
            select(
                Response.response_key,
                Response.content_hash,
                Response.source_line,
                Run.source_path,
                Response.batch_id,
            )
            .join(Run, Run.id == Response.run_id)
            .where(Response.response_key.in_(chunk))
        )
        for r in conn.execute(stmt):
            out[r.response_key] = (r.content_hash, r.source_line, r.source_path, r.batch_id)
    return out


def _intact_batches_with_quarantine(conn: Connection, sha: str) -> list[int]:
    """Earlier batches of file ``sha`` holding quarantined lines whose content still
    matches their ledger entry (a tampered one is left for ``cuegap verify`` to name)."""
    ids = conn.execute(
        select(Quarantine.batch_id).where(Quarantine.source_sha256 == sha).distinct()
    ).scalars()
    return [
        b
        for b in sorted(ids)
        if (recorded := ledger.latest_digest(conn, "batch", b)) is not None
        and ledger.object_digest(conn, "batch", b) == recorded
    ]


def _upsert_quarantine(conn: Connection) -> Any:
    """Insert quarantine rows; a line quarantined before is reopened with the new reason."""
    ins = (postgresql if conn.dialect.name == "postgresql" else sqlite).insert(Quarantine.__table__)
    return ins.on_conflict_do_update(
        index_elements=["source_sha256", "line_no"],
        set_={
            "batch_id": ins.excluded.batch_id,
            "field": ins.excluded.field,
            "reason": ins.excluded.reason,
            "raw": ins.excluded.raw,
            "resolved_at": None,
            "resolved_batch_id": None,
        },
    )


def _resolve_quarantine(conn: Connection, sha: str, lines: list[int], batch_id: int) -> None:
    """Mark the quarantined lines of file ``sha`` that are now stored as resolved.

    The rows stay (the history of what went wrong); status and reports count only the
    unresolved ones.
    """
    now = utcnow()
    for i in range(0, len(lines), 900):
        conn.execute(
            update(Quarantine)
            .where(
                Quarantine.source_sha256 == sha,
                Quarantine.line_no.in_(lines[i : i + 900]),
                Quarantine.resolved_at.is_(None),
            )
            .values(resolved_at=now, resolved_batch_id=batch_id)
        )


def _write_responses(conn: Connection, rows: Collection[tuple[Any, ...]]) -> int:
    """Insert new responses, skipping keys stored meanwhile by a concurrent ingest.

    ``rows`` are tuples in ``_RESPONSE_COLS`` order, encoded with the dialect's
    :class:`_Codec`. Bypasses SQLAlchemy's per-row parameter processing: the DBAPI's
    executemany on SQLite, COPY into a staging table on PostgreSQL.
    """
    if not rows:
        return 0
    raw = conn.connection.driver_connection
    cols = ", ".join(_RESPONSE_COLS)
    if conn.dialect.name != "postgresql":
        cur = raw.cursor()
        try:
            cur.executemany(_SQLITE_INSERT, rows)
            return cur.rowcount
        finally:
            cur.close()
    with raw.cursor() as cur:
        cur.execute(
            "CREATE TEMP TABLE IF NOT EXISTS _response_stage ON COMMIT DELETE ROWS AS "
            f"SELECT {cols} FROM response WITH NO DATA"
        )
        with cur.copy(f"COPY _response_stage ({cols}) FROM STDIN") as copy:
            for row in rows:
                copy.write_row(row)
        # In key order: concurrent batches then lock their keys in one order, so that
        # overlapping ingests wait for each other instead of deadlocking.
        cur.execute(
            f"INSERT INTO response ({cols}) SELECT {cols} FROM _response_stage "
            "ORDER BY response_key ON CONFLICT (response_key) DO NOTHING"
        )
        inserted = cur.rowcount
        cur.execute("DELETE FROM _response_stage")
    return inserted


def _sqlite_value(col: str) -> str:
    if col == "puzzle_correct":
        return "NULLIF(?, '')"
    return "NULLIF(?, 0)" if col in _NULLABLE_TEXT else "?"


_SQLITE_INSERT = (
    f"INSERT OR IGNORE INTO response ({', '.join(_RESPONSE_COLS)}) "
    f"VALUES ({', '.join(_sqlite_value(c) for c in _RESPONSE_COLS)})"
)
