"""Compliance workflow: report registry, ledger, hash-chained sign-offs, verification, locks.

* Everything cuegap writes that a verdict depends on (ingest batches with their responses
  and quarantined lines, item banks, systems, analyses with their tables and posteriors,
  registry rows, sign-offs) is sealed in the store's hash-chained ledger
  (:mod:`cuegap.schema.ledger`) in the same transaction.
* Every rendered report is registered (:func:`register_report`) with its SHA-256, the HTML
  it shows, and the analysis digest it came from. Report files are never overwritten
  (:func:`write_new_files`).
* :func:`sign_off` appends a review decision whose hash covers the analysis digest and the
  ledger head; a reviewer's Ed25519 key (:func:`generate_key`) can sign it.
* :func:`verify` recomputes every digest, walks both chains, and checks them against a
  witness file (:func:`write_witness`) and trusted keys when given; it says what it could
  not rule out.
* :func:`store_lock` holds a named lock in the store itself.

Depends on the schema layer (and ``cryptography`` for keys); never imports models or reports.
"""

from cuegap.compliance._keys import key_id, load_pem, raw_public
from cuegap.compliance._lock import LOCK_TTL, LockHeld, store_lock
from cuegap.compliance._registry import (
    ComplianceError,
    RegisteredReport,
    file_sha256,
    find_report,
    listed_analyses,
    register_report,
    sha256_bytes,
)
from cuegap.compliance._signoff import (
    DECISIONS,
    GENESIS,
    SignOffRecord,
    generate_key,
    record_hash,
    sign_off,
    signoffs,
)
from cuegap.compliance._verify import (
    Verification,
    check_report,
    read_witness,
    signed_records,
    verify,
    write_witness,
)
from cuegap.files import write_new_files

__all__ = [
    "DECISIONS",
    "GENESIS",
    "LOCK_TTL",
    "ComplianceError",
    "LockHeld",
    "RegisteredReport",
    "SignOffRecord",
    "Verification",
    "check_report",
    "file_sha256",
    "find_report",
    "generate_key",
    "key_id",
    "listed_analyses",
    "load_pem",
    "raw_public",
    "read_witness",
    "record_hash",
    "register_report",
    "sha256_bytes",
    "sign_off",
    "signed_records",
    "signoffs",
    "store_lock",
    "verify",
    "write_new_files",
    "write_witness",
]
