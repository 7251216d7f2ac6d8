"""Bulk, streaming, idempotent loading of reader output into the store.

Responses are written in batches, one transaction per batch: executemany on SQLite,
COPY into a staging table on PostgreSQL. Every input record ends up counted exactly once
as stored, duplicate or quarantined, so ``read == stored + duplicate + quarantined``.

This module is the entry point (:func:`ingest_path`) and loads item banks; the rest lives
beside it and its names stay importable from here:

- ``_summary``: :class:`IngestSummary`, file digests, the clock;
- ``_pass``: one ingest pass of a response file, whatever the design (run and batch rows,
  batches and retries, SQLite's deferred indexes, the ledger);
- ``_responses``: the dilemma design's loader, which joins records to the item bank and
  parses answers on a lean per-record path;
- ``_sql``: column order, the SQLite value encoding and the bulk, idempotent writes;
- ``_digest``: the ledger digest of the responses, computed as they are written.

Tests that patch ``DEFER_INDEXES_MIN`` or ``parse_response`` patch them in ``_pass`` and
``_responses``, where they are read.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import orjson
from sqlalchemy import insert, select
from sqlalchemy.engine import Engine

from cuegap.ingest._axes import write_individual_axes
from cuegap.ingest._plan import with_system
from cuegap.ingest._recover import recover_interrupted
from cuegap.ingest._responses import _ResponseLoader
from cuegap.ingest._sql import _insert_ignore, _resolve_quarantine, _upsert_quarantine, insert_bank
from cuegap.ingest._summary import (
    IngestSummary,
    Progress,
    _hash16,
    file_sha256,
    gc_paused,
    utcnow,
)
from cuegap.ingest.registry import Reader, detect_reader, get_reader, run_file, with_mapping
from cuegap.schema import (
    Annotation,
    Dilemma,
    Item,
    ItemIndividual,
    ledger,
)

BATCH_SIZE = 50_000  # records per transaction: fewer commits rewrite fewer index pages


def ingest_path(
    engine: Engine,
    path: Path | str,
    *,
    format: str | None = None,
    progress: Progress | None = None,
    batch_size: int = BATCH_SIZE,
    mapping: Path | str | None = None,
    system: str | None = None,
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
    system : str, optional
        The system (audited LLM) of records that name none, for formats whose records may
        leave it out (BBQ-style results); a line's or a header's system wins. Ignored for
        item banks.

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
    reader = with_system(reader, system)
    recover_interrupted(engine)  # seal what a killed pass left, before this one starts
    if reader.kind == "item_bank":
        return _ingest_bank(engine, path, reader)
    loader_cls = _design(reader.design).response_loader()  # the reader's design stores them
    if loader_cls is None:
        raise ValueError(f"design {reader.design!r} stores no responses of its own")
    loader = loader_cls(engine, path, reader, batch_size)
    loader.forced = format is not None
    if mapping is not None:  # recorded with the ingest pass, for provenance
        text_ = Path(mapping).read_bytes()
        loader.mapping = {
            "path": str(mapping),
            "sha256": hashlib.sha256(text_).hexdigest(),
            "toml": text_.decode("utf-8", "replace"),
        }
    with gc_paused():  # see gc_paused: the batches hold no cycles worth collecting
        return loader.run(progress)


# ---------------------------------------------------------------------------- item banks


def _design(name: str) -> Any:
    """A registered study design (:mod:`cuegap.designs`): it names its loaders."""
    from cuegap.designs import get

    return get(name)


def _ingest_bank(engine: Engine, path: Path, reader: Reader) -> IngestSummary:
    bank = reader.read(path)
    ingest = _design(str(bank.get("design") or reader.design)).bank_loader()
    if ingest is None:
        raise ValueError(f"{path}: design {reader.design!r} has no item banks of its own")
    return ingest(engine, path, reader.name, bank)


def ingest_dilemma_bank(
    engine: Engine, path: Path, reader_name: str, bank: dict[str, Any]
) -> IngestSummary:
    """Store a dilemma item bank (seed 000's dilemmas, items and individuals) in one
    transaction, sealed in the ledger; a bank already stored is reported, not duplicated."""
    sha = hashlib.sha256(orjson.dumps(bank, option=orjson.OPT_SORT_KEYS)).hexdigest()
    n = len(bank["dilemmas"]) + len(bank["items"])
    summary = IngestSummary(str(path), reader_name, "item_bank", read=n)
    with engine.begin() as conn:
        axes = {"genders": bank.get("genders"), "races": bank.get("races")}
        bank_id = insert_bank(conn, path, bank, sha, summary, axes)
        if bank_id is None:
            return summary
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


__all__ = [
    "BATCH_SIZE",
    "IngestSummary",
    "Progress",
    "_ResponseLoader",
    "_hash16",
    "_insert_ignore",
    "_resolve_quarantine",
    "_upsert_quarantine",
    "file_sha256",
    "ingest_path",
    "utcnow",
]
