"""Verification of what reviewers see and sign: report files, quoted hashes, sign-offs,
stored artifacts.

Each check appends to a :class:`~cuegap.compliance._verify_ledger.Verification`.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from sqlalchemy import select
from sqlalchemy.engine import Connection, Engine

from cuegap.compliance._keys import TrustedKey, signing_key
from cuegap.compliance._registry import file_sha256, listed_analyses
from cuegap.compliance._signoff_records import GENESIS, record_hash, signoffs
from cuegap.compliance._verify_ledger import Verification
from cuegap.schema import Analysis, AnalysisArtifact, Report

_QUOTED = re.compile(r'data-cuegap="record-hash">([0-9a-f]{64})<')


# --------------------------------------------------------------------------- reports


def _check_report_files(conn: Connection, out: Verification) -> dict[int, str]:
    rows = conn.execute(
        select(Report.id, Report.path, Report.sha256, Report.analysis_digest, Report.analysis_id,
               Report.html)
    ).fetchall()  # fmt: skip
    digests = dict(conn.execute(select(Analysis.id, Analysis.content_digest)).fetchall())
    by_hash: dict[str, list[int]] = {}
    for r in rows:
        by_hash.setdefault(r.sha256, []).append(r.id)
    for r in rows:
        out.reports += 1
        path = Path(r.path)
        if not path.is_file():
            out.problems.append(f"report {r.id}: file {path} is missing")
        elif (actual := file_sha256(path)) != r.sha256:
            # still a problem (this report's file is gone), but say when the bytes there are
            # another registered render, e.g. after the folder was emptied and rendered again
            others = [i for i in by_hash.get(actual, []) if i != r.id]
            what = (
                f"now holds the bytes of report {', '.join(map(str, others))} (written to the "
                "same path after this report's file was removed or replaced)"
                if others
                else "was altered"
            )
            out.problems.append(
                f"report {r.id}: {path} {what} (SHA-256 {actual[:12]}…, registered "
                f"{r.sha256[:12]}…)"
            )
        if r.analysis_digest is not None and digests.get(r.analysis_id) != r.analysis_digest:
            out.problems.append(
                f"report {r.id}: analysis {r.analysis_id} no longer has the content the "
                "report was rendered from"
            )
        for other, digest in sorted(listed_analyses(r.html).items()):
            if other != r.analysis_id and digests.get(other) != digest:
                out.problems.append(
                    f"report {r.id}: analysis {other} no longer has the content the report "
                    "was rendered from"
                )
    return {r.id: r.sha256 for r in rows}


def _quoted_hashes(conn: Connection, quoted: dict[int, list[str]]) -> dict[int, list[str]]:
    """Record hashes quoted by signed reports: from the HTML kept in the store (PDFs too)
    and from registered HTML files."""
    out = dict(quoted)
    for r in conn.execute(select(Report.id, Report.path, Report.format, Report.html)):
        if r.id in out:
            continue
        found = set(_QUOTED.findall(r.html or ""))
        path = Path(r.path)
        if r.format == "html" and path.is_file():
            found |= set(_QUOTED.findall(path.read_text(encoding="utf-8", errors="replace")))
        if found:
            out[r.id] = sorted(found)
    return out


# --------------------------------------------------------------------------- sign-offs


def _check_signoffs(
    engine: Engine,
    conn: Connection,
    registered: dict[int, str],
    ledger_hashes: set[str],
    trusted: dict[str, TrustedKey] | None,
    out: Verification,
) -> set[str]:
    prev, expected = GENESIS, 1
    hashes: set[str] = set()
    unsigned = 0
    for rec in signoffs(engine):
        out.signoffs += 1
        hashes.add(rec.record_hash)
        who = f"sign-off {rec.seq} (report {rec.report_id}, {rec.reviewer})"
        if rec.seq != expected:
            out.problems.append(
                f"sign-off chain: record {expected} is missing (next is {rec.seq}): a "
                "sign-off was deleted"
            )
        if rec.prev_hash != prev:
            out.problems.append(
                f"sign-off {rec.seq}: its link to the previous record is broken (a sign-off "
                "was deleted, reordered or edited before it)"
            )
        if record_hash(**rec.hashed_fields()) != rec.record_hash:  # type: ignore[arg-type]
            out.problems.append(f"{who}: its content was edited after signing")
        if registered.get(rec.report_id, rec.report_sha256) != rec.report_sha256:
            out.problems.append(
                f"sign-off {rec.seq}: report {rec.report_id}'s registered hash changed after "
                "it was signed"
            )
        if rec.ledger_head and rec.ledger_head not in ledger_hashes:
            out.problems.append(
                f"{who}: the ledger it vouched for is gone (its head {rec.ledger_head[:12]}… "
                "is no longer in the ledger): the ledger was rewritten"
            )
        if trusted is not None:
            signer = signing_key(rec.key_id, rec.signature, rec.record_hash, trusted)
            if signer is None:
                out.problems.append(f"{who}: not signed by a trusted key")
            elif signer.reviewer != rec.reviewer:
                out.problems.append(
                    f"sign-off {rec.seq} (report {rec.report_id}) names the reviewer "
                    f"{rec.reviewer!r} but is signed with the key of {signer.reviewer!r} "
                    f"({signer.path}, key id {rec.key_id}): a key signs only for its own "
                    "reviewer"
                )
            else:
                out.anchors.append((rec.ledger_head, f"sign-off {rec.seq} by {rec.reviewer}"))
        unsigned += rec.signature is None
        prev, expected = rec.record_hash, rec.seq + 1
    out.head = prev
    if trusted is None and out.signoffs:
        out.limits.append(
            "no trusted reviewer keys given (--trust): who made each sign-off is not proven, "
            "and someone with write access to the store could append a forged sign-off "
            f"with a valid hash ({unsigned} of {out.signoffs} sign-off(s) carry no "
            "signature at all)"
        )
    return hashes


def _check_artifacts(conn: Connection, out: Verification) -> None:
    rows = conn.execute(
        select(
            AnalysisArtifact.analysis_id,
            AnalysisArtifact.name,
            AnalysisArtifact.sha256,
            AnalysisArtifact.content,
        ).execution_options(yield_per=1)
    )
    for a in rows:
        out.artifacts += 1
        content = a.content if isinstance(a.content, bytes) else str(a.content).encode()
        if hashlib.sha256(content).hexdigest() != a.sha256:
            out.problems.append(
                f"analysis {a.analysis_id}: its stored {a.name} was altered (the bytes no "
                f"longer match SHA-256 {a.sha256[:12]}…)"
            )
