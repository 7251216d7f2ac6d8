"""An in-toto attestation of a store's reports, in a DSSE envelope, and writing the evidence.

The attestation is an in-toto Statement v1 whose subjects are the registered report files
(name and ``{"sha256": ...}`` digest) and whose predicate (:data:`PREDICATE_TYPE`) holds
the verdict records and the policies of the analyses of record, with the evidence bundle's
own SHA-256. It travels in a DSSE envelope (payload type :data:`PAYLOAD_TYPE`), signed
over the pre-authentication encoding (:func:`pae`) with the reviewer's Ed25519 key when
one is given (``cuegap keygen``). Anyone can check it with a DSSE library and the
reviewer's public key: ``docs/evidence.md``.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections import Counter
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from sqlalchemy.engine import Engine

from cuegap.compliance import ComplianceError, key_id, load_pem, raw_public, write_new_files
from cuegap.evidence._bundle import evidence_bundle

STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
PAYLOAD_TYPE = "application/vnd.in-toto+json"
#: What cuegap's predicate is: the verdicts of record of a fairness audit, and their policies.
PREDICATE_TYPE = "urn:cuegap:predicate:audit-verdicts:v1"
BUNDLE_NAME = "cuegap-evidence.json"
ENVELOPE_NAME = "cuegap-evidence.intoto.jsonl"
# what the predicate keeps of the bundle's analyses and reports
_ANALYSIS_KEYS = ("id", "kind", "design", "status", "data_fingerprint", "content_digest",
                  "policy", "current", "shown_by_reports")  # fmt: skip
_REPORT_KEYS = ("id", "version", "format", "sha256", "analysis_id", "shown_analysis_id")


def pae(payload_type: str, payload: bytes) -> bytes:
    """DSSE v1 pre-authentication encoding: what a signature covers.

    ``"DSSEv1" SP LEN(type) SP type SP LEN(body) SP body``, with ``LEN`` the decimal byte
    length (the payload type counted in UTF-8 bytes).
    """
    kind = payload_type.encode("utf-8")
    return b"DSSEv1 %d %b %d %b" % (len(kind), kind, len(payload), payload)


def _canonical(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def statement(bundle: dict[str, Any], bundle_sha256: str,
              signer: dict[str, str] | None = None) -> dict[str, Any]:  # fmt: skip
    """The in-toto Statement v1 of an evidence bundle.

    Parameters
    ----------
    bundle : dict
        An evidence bundle (:func:`cuegap.evidence.evidence_bundle`).
    bundle_sha256 : str
        The SHA-256 of the bundle file as written.
    signer : dict, optional
        ``reviewer`` and ``key_id`` of the key that signs the envelope.

    Raises
    ------
    ComplianceError
        When the store has no registered report (a statement needs a subject).
    """
    reports = bundle["reports"]
    if not reports:
        raise ComplianceError(
            "no registered report to attest: run cuegap report first (the attestation's "
            "subjects are the report files)"
        )
    names = Counter(r["file_name"] for r in reports)
    subjects = [
        {"name": r["file_name"] if names[r["file_name"]] == 1 else r["path"],
         "digest": {"sha256": r["sha256"]}}
        for r in reports
    ]  # fmt: skip
    of_record = {r["analysis_id"] for r in bundle["verdict_records"]}
    predicate = {
        "evidence_bundle": {"name": BUNDLE_NAME, "digest": {"sha256": bundle_sha256}},
        "generated_at": bundle["generated_at"],
        "cuegap_version": bundle["cuegap_version"],
        "ledger_head": bundle["ledger"]["head"],
        "analyses": [
            {k: a[k] for k in _ANALYSIS_KEYS} for a in bundle["analyses"] if a["id"] in of_record
        ],
        "verdict_records": bundle["verdict_records"],
        "reports": [{k: r[k] for k in _REPORT_KEYS} for r in reports],
        "signer": signer,
    }
    return {
        "_type": STATEMENT_TYPE,
        "subject": subjects,
        "predicateType": PREDICATE_TYPE,
        "predicate": predicate,
    }


def envelope(payload: bytes, private_key: Any | None = None) -> dict[str, Any]:
    """A DSSE envelope of an in-toto payload, signed with ``private_key`` (Ed25519) over
    :func:`pae` when given; with no signature otherwise."""
    signatures = []
    if private_key is not None:
        sig = private_key.sign(pae(PAYLOAD_TYPE, payload))
        signatures.append(
            {"keyid": key_id(raw_public(private_key.public_key())),
             "sig": base64.b64encode(sig).decode()}
        )  # fmt: skip
    return {
        "payloadType": PAYLOAD_TYPE,
        "payload": base64.b64encode(payload).decode(),
        "signatures": signatures,
    }


@dataclass(frozen=True, slots=True)
class EvidenceFiles:
    """What :func:`write_evidence` wrote."""

    bundle: Path
    envelope: Path
    signed: bool
    reports: int
    unmatched: tuple[str, ...]  # "report N: FILE is missing / was modified"


def write_evidence(
    engine: Engine,
    out_dir: Path | str,
    *,
    key: Path | str | None = None,
    now: datetime | None = None,
) -> EvidenceFiles:
    """Write the evidence bundle and its in-toto attestation into ``out_dir``.

    Parameters
    ----------
    engine : Engine
        An initialised store with at least one registered report.
    out_dir : path
        The folder to write ``cuegap-evidence.json`` and ``cuegap-evidence.intoto.jsonl``
        to; existing files are never replaced (a new name gets ``-2``, ...).
    key : path, optional
        The reviewer's Ed25519 private key (``cuegap keygen``) that signs the envelope.
    now : datetime, optional
        The bundle's ``generated_at`` (default: now).

    Returns
    -------
    EvidenceFiles

    Raises
    ------
    ComplianceError
        When the store has no registered report, or the key cannot be read.
    """
    private = signer = None
    if key is not None:  # a bad key is named before the store is read
        private, bound = load_pem(key, private=True)
        kid = key_id(raw_public(private.public_key()))
        signer = {"reviewer": bound, "key_id": kid}
    bundle = evidence_bundle(engine, now=now)
    data = (json.dumps(bundle, indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode()
    stmt = statement(bundle, hashlib.sha256(data).hexdigest(), signer)
    line = json.dumps(envelope(_canonical(stmt), private), sort_keys=True) + "\n"
    written = write_new_files(out_dir, {BUNDLE_NAME: data, ENVELOPE_NAME: line.encode()})
    unmatched = tuple(
        f"report {r['id']}: {r['path']} " + ("is missing" if r["file"] == "missing"
                                             else "was modified since it was registered")
        for r in bundle["reports"]
        if r["file"] != "matches"
    )  # fmt: skip
    return EvidenceFiles(written[BUNDLE_NAME], written[ENVELOPE_NAME], private is not None,
                         len(bundle["reports"]), unmatched)  # fmt: skip
