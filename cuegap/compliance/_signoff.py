"""Hash-chained sign-offs, optionally signed with the reviewer's own Ed25519 key.

A sign-off record's hash covers its content, the previous record's hash, and (record
version 2) the content digest of the analysis behind the report and the ledger head at
the time of signing: a sign-off thus vouches for everything the store held when it was
made. With ``--key`` the reviewer's Ed25519 private key (which never enters the store)
signs the record hash; ``cuegap verify --trust KEY.pub`` then proves who signed, and that
no one with only write access to the store forged or rewrote a sign-off.
"""

from __future__ import annotations

import base64
from datetime import UTC, datetime
from pathlib import Path

from sqlalchemy import insert, select
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError

from cuegap.compliance._keys import (
    MAX_REVIEWER,
    TrustedKey,
    check_reviewer,
    generate_key,
    key_id,
    load_pem,
    load_trusted_keys,
    raw_public,
)
from cuegap.compliance._registry import ComplianceError, file_sha256, find_report
from cuegap.compliance._signoff_records import (
    DECISIONS,
    GENESIS,
    MAX_COMMENT,
    SignOffRecord,
    record_hash,
    signature_valid,
    signoffs,
)
from cuegap.compliance._verify import check_report
from cuegap.schema import Report, SignOff, ledger


def sign_off(
    engine: Engine,
    report: int | str | Path,
    *,
    reviewer: str,
    decision: str,
    comment: str | None = None,
    key: Path | str | None = None,
    now: datetime | None = None,
) -> SignOffRecord:
    """Append a sign-off to the chain after checking the report is unaltered.

    Parameters
    ----------
    key : path, optional
        The reviewer's Ed25519 private key (``cuegap keygen``): signs the record hash.

    Raises
    ------
    ComplianceError
        For an unknown decision, an empty or over-long reviewer or comment, an unknown
        report, a missing report file or one whose bytes no longer match the registered
        hash, or a report whose registry record or analysis no longer match the ledger.
        Nothing is written.
    """

    if decision not in DECISIONS:
        raise ComplianceError(f"unknown decision {decision!r}; use one of: {', '.join(DECISIONS)}")
    reviewer = check_reviewer(reviewer)
    if comment is not None and len(comment) > MAX_COMMENT:
        raise ComplianceError(
            f"--comment is {len(comment)} characters; at most {MAX_COMMENT} are allowed"
        )
    private = None
    if key is not None:
        private, bound = load_pem(key, private=True)
        if bound is not None and bound != reviewer:
            raise ComplianceError(
                f"{key}: this key belongs to {bound!r}, not {reviewer!r}; sign with your own "
                "key and name"
            )
    rep = find_report(engine, report)
    path = Path(rep.path)
    if not path.is_file():
        raise ComplianceError(f"report {rep.id}: file {path} is missing; nothing signed")
    actual = file_sha256(path)
    if actual != rep.sha256:
        raise ComplianceError(
            f"report {rep.id}: {path} was modified since it was registered (SHA-256 "
            f"{actual[:12]}… != registered {rep.sha256[:12]}…); nothing signed"
        )
    problems = check_report(engine, rep.id)
    if problems:
        raise ComplianceError(f"report {rep.id}: {problems[0]}; nothing signed")
    signed_at = (now or datetime.now(UTC)).astimezone(UTC).isoformat(timespec="seconds")
    pub_pem = kid = None
    if private is not None:
        from cryptography.hazmat.primitives import serialization

        pub = private.public_key()  # type: ignore[attr-defined]
        kid = key_id(raw_public(pub))
        pub_pem = pub.public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        ).decode()
    for _attempt in range(20):  # another signer may take the next seq: retry on conflict
        try:
            with engine.begin() as conn:
                ledger.lock_ledger(conn)
                last = conn.execute(
                    select(SignOff.seq, SignOff.record_hash).order_by(SignOff.seq.desc()).limit(1)
                ).first()
                seq, prev = (1, GENESIS) if last is None else (last.seq + 1, last.record_hash)
                top = ledger.head(conn)
                analysis_digest = conn.execute(
                    select(Report.analysis_digest).where(Report.id == rep.id)
                ).scalar()
                values: dict[str, object] = {
                    "seq": seq,
                    "report_id": rep.id,
                    "report_sha256": rep.sha256,
                    "reviewer": reviewer,
                    "decision": decision,
                    "comment": comment,
                    "signed_at": signed_at,
                    "prev_hash": prev,
                    "record_version": 2,
                    "analysis_digest": analysis_digest,
                    "ledger_head": top.entry_hash if top else None,
                    "key_id": kid,
                }
                values["record_hash"] = record_hash(**values)  # type: ignore[arg-type]
                values["public_key"] = pub_pem
                values["signature"] = (
                    base64.b64encode(
                        private.sign(str(values["record_hash"]).encode())  # type: ignore[attr-defined]
                    ).decode()
                    if private is not None
                    else None
                )
                conn.execute(insert(SignOff).values(**values))
                ledger.record(conn, "signoff", seq)
        except IntegrityError:
            continue
        return SignOffRecord(**values)  # type: ignore[arg-type]
    raise ComplianceError("could not append the sign-off: the chain kept changing; retry")


__all__ = [
    "DECISIONS",
    "GENESIS",
    "MAX_REVIEWER",
    "SignOffRecord",
    "TrustedKey",
    "generate_key",
    "load_trusted_keys",
    "record_hash",
    "sign_off",
    "signature_valid",
    "signoffs",
]
