"""Reviewers' Ed25519 keys, each bound to the name of the reviewer it was issued for.

``cuegap keygen KEY --reviewer NAME`` writes ``KEY`` (private, mode 0600) and ``KEY.pub``.
Both are PEM files that start with one explanatory line before the PEM block
(RFC 7468, section 2), which any PEM reader skips::

    cuegap-reviewer: "Ada Lovelace"
    -----BEGIN PUBLIC KEY-----
    ...

The line binds the key to a name: ``cuegap signoff --key`` refuses to sign under another
name, and ``cuegap verify --trust KEY.pub`` fails a sign-off whose reviewer is not the name
its signing key is bound to. A key file without the line (from an older cuegap) is bound on
the command line instead: ``--trust "NAME=KEY.pub"``.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cuegap.compliance._registry import ComplianceError
from cuegap.files import LinkRefused, create_new, remove_files

_BINDING = re.compile(rb"cuegap-reviewer: (\"(?:[^\"\\\r\n]|\\.)*\")\r?\n")
MAX_REVIEWER = 200


def key_id(public_raw: bytes) -> str:
    """A public key's id: the first 32 hex digits of the SHA-256 of its raw bytes."""
    return hashlib.sha256(public_raw).hexdigest()[:32]


def check_reviewer(reviewer: str) -> str:
    """The reviewer name stripped, or ComplianceError when it is empty or too long (it is
    untrusted text: reports and terminals escape it, and a key file keeps it JSON-quoted)."""
    name = reviewer.strip()
    if not name:
        raise ComplianceError("a reviewer name is required")
    if len(name) > MAX_REVIEWER:
        raise ComplianceError(
            f"--reviewer is {len(name)} characters; at most {MAX_REVIEWER} are allowed"
        )
    return name


def _binding_line(reviewer: str) -> bytes:
    # JSON with every non-ASCII character and every "-" escaped: the line stays one line
    # and can never hold a PEM boundary ("-----BEGIN ...").
    quoted = json.dumps(reviewer, ensure_ascii=True).replace("-", "\\u002d")
    return b"cuegap-reviewer: " + quoted.encode() + b"\n"


def bound_reviewer(data: bytes) -> str | None:
    """The reviewer a key file's explanatory line binds it to (None: no such line)."""
    match = _BINDING.match(data)  # the first line, before the PEM block
    if match is None:
        return None
    try:
        name = json.loads(match.group(1))
    except ValueError:
        return None
    return name if isinstance(name, str) else None


def generate_key(private_path: Path | str, *, reviewer: str) -> tuple[Path, Path, str]:
    """Write a new Ed25519 key pair bound to ``reviewer``: ``PATH`` and ``PATH.pub``.

    Parameters
    ----------
    private_path : path
        The private key file to create (mode 0600); the public key goes to ``PATH.pub``.
    reviewer : str
        The name the reviewer signs with (``cuegap signoff --reviewer``).

    Returns
    -------
    tuple
        (private key path, public key path, key id).

    Raises
    ------
    ComplianceError
        When either file already exists (a key is never overwritten), or the name is
        empty, too long or has control characters.
    """
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    line = _binding_line(check_reviewer(reviewer))
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
    written: list[Path] = []
    try:
        for path, data, mode in ((priv_path, line + priv, 0o600), (pub_path, line + pub, 0o644)):
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
    return priv_path, pub_path, key_id(raw_public(key.public_key()))


def raw_public(public_key: Any) -> bytes:
    """The 32 raw bytes of an Ed25519 public key."""
    from cryptography.hazmat.primitives import serialization

    return public_key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def load_pem(path: Path | str, *, private: bool) -> tuple[Any, str | None]:
    """An Ed25519 key from a PEM file, and the reviewer it is bound to (or None)."""
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
    return key, bound_reviewer(data)


@dataclass(frozen=True, slots=True)
class TrustedKey:
    """A reviewer's public key and the name it is bound to."""

    key: Any
    reviewer: str
    path: str


def _split_spec(spec: Path | str) -> tuple[str | None, Path]:
    text = str(spec)
    if Path(text).exists() or "=" not in text:
        return None, Path(text)
    name, _, path = text.partition("=")
    return check_reviewer(name), Path(path)


def load_trusted_keys(specs: list[Path] | list[str] | list[Path | str]) -> dict[str, TrustedKey]:
    """Trusted public keys by key id, each bound to its reviewer.

    Parameters
    ----------
    specs : list
        ``KEY.pub`` (bound by its ``cuegap-reviewer`` line) or ``NAME=KEY.pub`` (for a key
        file without one).

    Raises
    ------
    ComplianceError
        For a key bound to no name, a ``NAME=`` that contradicts the file's own binding,
        or one key given for two names.
    """
    out: dict[str, TrustedKey] = {}
    for spec in specs:
        given, path = _split_spec(spec)
        key, bound = load_pem(path, private=False)
        if given is not None and bound is not None and given != bound:
            raise ComplianceError(
                f"{path}: the key is bound to {bound!r}, not {given!r} as --trust says"
            )
        name = given or bound
        if name is None:
            raise ComplianceError(
                f"{path}: the key names no reviewer (written by an older cuegap keygen); "
                f'bind it to its reviewer with --trust "NAME={path}"'
            )
        kid = key_id(raw_public(key))
        if kid in out and out[kid].reviewer != name:
            raise ComplianceError(
                f"{path}: the same key is given for {out[kid].reviewer!r} and {name!r}"
            )
        out[kid] = TrustedKey(key, name, str(path))
    return out


def signing_key(rec_key_id: str | None, signature: str | None, record_hash: str,
                trusted: dict[str, TrustedKey]) -> TrustedKey | None:  # fmt: skip
    """The trusted key whose signature over ``record_hash`` is valid (None: none is)."""
    from cryptography.exceptions import InvalidSignature

    found = trusted.get(rec_key_id or "")
    if found is None or not signature:
        return None
    try:
        found.key.verify(base64.b64decode(signature), record_hash.encode())
    except (InvalidSignature, ValueError):
        return None
    return found
