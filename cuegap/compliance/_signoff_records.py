"""Sign-off records: their hash, their signature check and reading them back in chain order.

What :func:`cuegap.compliance.sign_off` appends and :func:`cuegap.compliance.verify` checks;
kept apart from the act of signing so that verifying never needs the signing code.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.engine import Engine

from cuegap.compliance._keys import TrustedKey, signing_key
from cuegap.schema import SignOff, ledger

DECISIONS = ("approve", "reject", "changes-requested")
GENESIS = ledger.GENESIS
MAX_COMMENT = 10_000

_V2_FIELDS = ("analysis_digest", "ledger_head", "key_id")


def record_hash(
    *,
    seq: int,
    report_id: int,
    report_sha256: str,
    reviewer: str,
    decision: str,
    comment: str | None,
    signed_at: str,
    prev_hash: str,
    record_version: int = 1,
    analysis_digest: str | None = None,
    ledger_head: str | None = None,
    key_id: str | None = None,
) -> str:
    """SHA-256 of a sign-off record's canonical JSON (sorted keys, no whitespace).

    Version 1 records (written before the ledger) hash the first eight fields; version 2
    records also hash the version, the analysis digest, the ledger head and the key id.
    """
    payload: dict[str, object] = {
        "seq": seq,
        "report_id": report_id,
        "report_sha256": report_sha256,
        "reviewer": reviewer,
        "decision": decision,
        "comment": comment,
        "signed_at": signed_at,
        "prev_hash": prev_hash,
    }
    if record_version >= 2:
        payload.update(
            record_version=record_version,
            analysis_digest=analysis_digest,
            ledger_head=ledger_head,
            key_id=key_id,
        )
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class SignOffRecord:
    """A stored sign-off."""

    seq: int
    report_id: int
    report_sha256: str
    reviewer: str
    decision: str
    comment: str | None
    signed_at: str
    prev_hash: str
    record_hash: str
    record_version: int = 1
    analysis_digest: str | None = None
    ledger_head: str | None = None
    key_id: str | None = None
    public_key: str | None = None
    signature: str | None = None

    def hashed_fields(self) -> dict[str, object]:
        """The fields :func:`record_hash` covers, for this record's version."""
        out = {
            k: getattr(self, k)
            for k in SignOffRecord.__slots__
            if k not in ("record_hash", "public_key", "signature")
        }
        return out


# --------------------------------------------------------------------------- keys


def signature_valid(rec: SignOffRecord, trusted: dict[str, TrustedKey]) -> bool:
    """True when ``rec`` is signed by one of the ``trusted`` keys over its record hash."""
    return signing_key(rec.key_id, rec.signature, rec.record_hash, trusted) is not None


# --------------------------------------------------------------------------- sign-off


def signoffs(engine: Engine, report_id: int | None = None) -> list[SignOffRecord]:
    """Sign-off records in chain order (all, or those of one report)."""
    cols = [getattr(SignOff, k) for k in SignOffRecord.__slots__]
    stmt = select(*cols).order_by(SignOff.seq)
    if report_id is not None:
        stmt = stmt.where(SignOff.report_id == report_id)
    with engine.connect() as conn:
        return [SignOffRecord(*r) for r in conn.execute(stmt)]
