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
import hashlib
import json
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from sqlalchemy import insert, select
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError

from cuegap._files import LinkRefused, create_new, remove_files
from cuegap.compliance._registry import ComplianceError, file_sha256, find_report
from cuegap.schema import Report, SignOff, ledger

DECISIONS = ("approve", "reject", "changes-requested")
GENESIS = ledger.GENESIS
MAX_REVIEWER = 200
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


def key_id(public_raw: bytes) -> str:
    """A public key's id: the first 32 hex digits of the SHA-256 of its raw bytes."""
    return hashlib.sha256(public_raw).hexdigest()[:32]


def generate_key(private_path: Path | str) -> tuple[Path, Path, str]:
    """Write a new Ed25519 key pair: ``PATH`` (private, mode 0600) and ``PATH.pub``.

    Returns
    -------
    tuple
        (private key path, public key path, key id).

    Raises
    ------
    ComplianceError
        When either file already exists (a key is never overwritten).
    """
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    priv_path = Path(private_path)
    pub_path = priv_path.with_name(priv_path.name + ".pub")
    key = Ed25519PrivateKey.generate()
    priv = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    pub = key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    written = []
    try:
        for path, data, mode in ((priv_path, priv, 0o600), (pub_path, pub, 0o644)):
            written.append(create_new(path, data, mode))
    except LinkRefused as exc:
        remove_files(written)
        raise ComplianceError(str(exc)) from None
    except FileExistsError as exc:
        for p in written:
            p.unlink()
        raise ComplianceError(
            f"{exc.filename}: already exists; keys are never overwritten"
        ) from None
    except OSError as exc:
        for p in written:
            p.unlink()
        raise ComplianceError(f"cannot write the key to {exc.filename}: {exc.strerror}") from None
    return priv_path, pub_path, key_id(_raw_public(key.public_key()))


def _raw_public(public_key: object) -> bytes:
    from cryptography.hazmat.primitives import serialization

    return public_key.public_bytes(  # type: ignore[attr-defined]
        serialization.Encoding.Raw, serialization.PublicFormat.Raw
    )


def _load_pem(path: Path | str, *, private: bool) -> object:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import (
        Ed25519PrivateKey,
        Ed25519PublicKey,
    )

    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ComplianceError(f"{path}: cannot read the key: {exc.strerror}") from None
    kind = "private" if private else "public"
    try:
        if private:
            key = serialization.load_pem_private_key(data, password=None)
        else:
            key = serialization.load_pem_public_key(data)
    except (ValueError, TypeError) as exc:
        raise ComplianceError(f"{path}: not a PEM {kind} key ({exc})") from None
    want = Ed25519PrivateKey if private else Ed25519PublicKey
    if not isinstance(key, want):
        raise ComplianceError(f"{path}: an Ed25519 {kind} key is required")
    return key


def load_trusted_keys(paths: list[Path]) -> dict[str, object]:
    """Public keys (``cuegap keygen``'s ``.pub`` files) by key id."""
    out = {}
    for p in paths:
        key = _load_pem(p, private=False)
        out[key_id(_raw_public(key))] = key
    return out


def signature_valid(rec: SignOffRecord, trusted: dict[str, object]) -> bool:
    """True when ``rec`` is signed by one of the ``trusted`` keys over its record hash."""
    from cryptography.exceptions import InvalidSignature

    key = trusted.get(rec.key_id or "")
    if key is None or not rec.signature:
        return False
    try:
        key.verify(base64.b64decode(rec.signature), rec.record_hash.encode())  # type: ignore[attr-defined]
    except (InvalidSignature, ValueError):
        return False
    return True


# --------------------------------------------------------------------------- sign-off


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
    from cuegap.compliance._verify import check_report

    if decision not in DECISIONS:
        raise ComplianceError(f"unknown decision {decision!r}; use one of: {', '.join(DECISIONS)}")
    reviewer = reviewer.strip()
    if not reviewer:
        raise ComplianceError("a reviewer name is required")
    if len(reviewer) > MAX_REVIEWER:
        raise ComplianceError(
            f"--reviewer is {len(reviewer)} characters; at most {MAX_REVIEWER} are allowed"
        )
    if comment is not None and len(comment) > MAX_COMMENT:
        raise ComplianceError(
            f"--comment is {len(comment)} characters; at most {MAX_COMMENT} are allowed"
        )
    private = _load_pem(key, private=True) if key is not None else None
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
        kid = key_id(_raw_public(pub))
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


def signoffs(engine: Engine, report_id: int | None = None) -> list[SignOffRecord]:
    """Sign-off records in chain order (all, or those of one report)."""
    cols = [getattr(SignOff, k) for k in SignOffRecord.__slots__]
    stmt = select(*cols).order_by(SignOff.seq)
    if report_id is not None:
        stmt = stmt.where(SignOff.report_id == report_id)
    with engine.connect() as conn:
        return [SignOffRecord(*r) for r in conn.execute(stmt)]
