"""Evidence that others can check without cuegap: a JSON bundle and an in-toto attestation.

:func:`write_evidence` (``cuegap export --evidence OUT``) writes the evidence bundle
(:func:`evidence_bundle`: verdict records, policies, analysis content digests, data
fingerprints, report digests, sign-offs and the ledger head; its JSON Schema is
:func:`evidence_schema`, shipped in the package) and an in-toto Statement v1 about the
report files in a DSSE envelope, signed with a reviewer's Ed25519 key when one is given.
``docs/evidence.md`` shows how an outside reviewer checks a report against it.

Depends on the schema, audit, designs and compliance layers; never imports reports.
"""

from cuegap.evidence._attest import (
    BUNDLE_NAME,
    ENVELOPE_NAME,
    PAYLOAD_TYPE,
    PREDICATE_TYPE,
    STATEMENT_TYPE,
    EvidenceFiles,
    envelope,
    pae,
    statement,
    write_evidence,
)
from cuegap.evidence._bundle import BUNDLE_VERSION, evidence_bundle, evidence_schema

__all__ = [
    "BUNDLE_NAME",
    "BUNDLE_VERSION",
    "ENVELOPE_NAME",
    "PAYLOAD_TYPE",
    "PREDICATE_TYPE",
    "STATEMENT_TYPE",
    "EvidenceFiles",
    "envelope",
    "evidence_bundle",
    "evidence_schema",
    "pae",
    "statement",
    "write_evidence",
]
