"""``cuegap verify``: recompute everything the compliance record depends on.

What is checked, and what cannot be ruled out, is written for a compliance reader in
``docs/compliance.md`` ("What verify proves, and what it cannot"). The checks live beside
this module: the ledger and its sealed objects in :mod:`cuegap.compliance._verify_ledger`,
reports, sign-offs and artifacts in :mod:`cuegap.compliance._verify_records`, witness files
in :mod:`cuegap.compliance._witness`. Their names stay importable from here.
"""

from __future__ import annotations

import json
from pathlib import Path

from sqlalchemy import select
from sqlalchemy.engine import Connection, Engine

from cuegap.compliance._keys import load_trusted_keys
from cuegap.compliance._registry import ComplianceError, file_sha256, listed_analyses
from cuegap.compliance._seals import histories, reseal_problem
from cuegap.compliance._signoff_records import SignOffRecord, record_hash, signoffs
from cuegap.compliance._verify_counted import check_counted_files
from cuegap.compliance._verify_ledger import (
    _NOUN,  # noqa: F401 (re-exported: importable from here as before)
    _PART_NOUN,
    _TABLES,  # noqa: F401
    Verification,
    _check_anchors,
    _check_objects,
    _name,
    _walk_ledger,
)
from cuegap.compliance._verify_records import (
    _QUOTED,  # noqa: F401 (re-exported)
    _check_artifacts,
    _check_report_files,
    _check_signoffs,
    _quoted_hashes,
)
from cuegap.compliance._verify_unsealed import unsealed_problems
from cuegap.compliance._witness import _check_witness, read_witness, write_witness
from cuegap.schema import Analysis, LedgerEntry, Report, ledger

# --------------------------------------------------------------------------- verify


def verify(
    engine: Engine,
    *,
    quoted: dict[int, list[str]] | None = None,
    witness: Path | str | None = None,
    trusted: list[Path] | list[str] | list[Path | str] | None = None,
) -> Verification:
    """Recompute everything a verdict and a sign-off depend on, and name what changed.

    Parameters
    ----------
    quoted : dict, optional
        Report id -> sign-off record hashes that the report's rendered sign-off block
        quotes; each must still be in the chain. Default: read from the HTML kept in the
        store for every registered report (PDFs included) and from registered HTML files.
    witness : path, optional
        A witness file written by :func:`write_witness` (``cuegap witness``): every head it
        records must still be in the ledger, unchanged.
    trusted : list of paths, optional
        Reviewers' public keys, each bound to its reviewer (``KEY.pub``, or
        ``NAME=KEY.pub`` for a key file that names no reviewer): every sign-off must then
        carry a valid signature by the key of the reviewer it names.

    Returns
    -------
    Verification
    """
    from cuegap.designs import registered as designs  # here: importing compliance loads none

    out = Verification()
    keys = load_trusted_keys(list(trusted)) if trusted is not None else None
    heads = read_witness(witness) if witness is not None else None
    with engine.connect() as conn:
        entries, bounds = _walk_ledger(conn, out)
        _check_objects(conn, entries, bounds, out)
        out.unsealed = unsealed_problems(conn, int(bounds.get("batch", 0)))
        registered = _check_report_files(conn, out)
        _check_artifacts(conn, out)
        for design in designs().values():  # each design's derived count tables
            out.problems += design.tally_problems(conn)
        check_counted_files(conn, out)  # files counted outside the store, where reachable
        hashes = _check_signoffs(
            engine, conn, registered, {e.entry_hash for e in entries}, keys, out
        )
        for report_id, quoted_hashes in sorted(_quoted_hashes(conn, quoted or {}).items()):
            for h in quoted_hashes:
                if h not in hashes:
                    out.problems.append(
                        f"report {report_id} quotes sign-off {h[:12]}…, which is no longer "
                        "in the chain (deleted)"
                    )
    if heads is not None:
        _check_witness(entries, heads, out)
    if heads is not None or keys is not None:
        _check_anchors(entries, out)
    if heads is None:
        out.limits.append(
            "no witness file given (--against): a rewrite of the whole ledger, or removal "
            "of its newest entries, by someone with write access to the store cannot be "
            "ruled out; record heads with `cuegap witness FILE`"
        )
    return out


def check_report(engine: Engine, report_id: int) -> list[str]:
    """Problems with one registered report: its file, its registry record and the analysis
    it was rendered from, against the ledger. Empty when all three are intact."""
    problems: list[str] = []
    with engine.connect() as conn:
        rep = conn.execute(
            select(
                Report.path, Report.sha256, Report.analysis_id, Report.analysis_digest, Report.html
            ).where(Report.id == report_id)
        ).first()
        if rep is None:
            return [f"report {report_id} is not registered"]
        path = Path(rep.path)
        if not path.is_file():
            problems.append(f"file {path} is missing")
        elif file_sha256(path) != rep.sha256:
            problems.append(f"{path} was altered since it was registered")
        listed = {a: d for a, d in listed_analyses(rep.html).items() if a != rep.analysis_id}
        objects = (("report", report_id), ("analysis", rep.analysis_id),
                   *(("analysis", a) for a in sorted(listed)))  # fmt: skip
        seals = histories(conn, _entries_of(conn, objects))
        for kind, ref in objects:
            h = seals.get((kind, ref))
            if h is None:
                if ledger.count(conn) and _after_genesis(conn, kind, ref):
                    problems.append(f"{_name(kind, ref)} has no ledger entry")
                continue
            problems += [reseal_problem(_name(kind, ref), kind, r, _PART_NOUN) for r in h.forged]
            parts = ledger.PARTS[kind](conn, ref)
            if parts is None or ledger.combine(ledger.as_recorded(parts, h.valid.parts)) != (
                h.valid.digest
            ):
                problems.append(f"{_name(kind, ref)} changed after it was recorded")
        current = conn.execute(
            select(Analysis.content_digest).where(Analysis.id == rep.analysis_id)
        ).scalar()
        if rep.analysis_digest is not None and current != rep.analysis_digest:
            problems.append(f"analysis {rep.analysis_id} no longer has the reported content")
        for other, digest in sorted(listed.items()):
            now = conn.execute(select(Analysis.content_digest).where(Analysis.id == other)).scalar()
            if now != digest:
                problems.append(f"analysis {other} no longer has the reported content")
    return problems


def _entries_of(conn: Connection, objects: tuple[tuple[str, int], ...]) -> list[ledger.Entry]:
    cols = [getattr(LedgerEntry, k) for k in ledger.Entry.__slots__]
    found = []
    for kind, ref in objects:
        stmt = select(*cols).where(LedgerEntry.kind == kind, LedgerEntry.ref_id == ref)
        found += [ledger.Entry(*r) for r in conn.execute(stmt)]
    return sorted(found, key=lambda e: e.seq)


def _after_genesis(conn: Connection, kind: str, ref: int) -> bool:
    entries = ledger.entries(conn)[:1]
    if not entries:
        return False
    bounds = json.loads(entries[0].detail or "{}")
    return ref > int(bounds.get(kind, 0))


def signed_records(engine: Engine, report_id: int) -> list[SignOffRecord]:
    """The sign-offs of one report, each checked against its hash (raises otherwise)."""
    recs = signoffs(engine, report_id)
    for rec in recs:
        if record_hash(**rec.hashed_fields()) != rec.record_hash:  # type: ignore[arg-type]
            raise ComplianceError(f"sign-off {rec.seq} was edited after signing")
    return recs


__all__ = ["Verification", "check_report", "read_witness", "verify", "write_witness"]
