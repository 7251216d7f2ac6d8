"""The persistent cache of exported JAX sampler programs.

Pure file handling (no JAX import): where the cache lives, the key of a program, and
reading and writing entries. An entry that is unreadable, truncated or written for another
key is ignored (the caller rebuilds and overwrites it); writes are atomic.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import tempfile
from importlib import metadata
from pathlib import Path

#: Bump when the layout of an entry or the exported program's calling convention changes.
CACHE_FORMAT = "cuegap-jax-nuts-1"
_MAGIC = b"CUEGAPJX"
_PACKAGES = ("cuegap", "jax", "jaxlib", "blackjax", "pymc", "pytensor", "numpy")


def cache_dir() -> Path:
    """The folder of cuegap's caches: ``CUEGAP_CACHE_DIR``, else the user's cache folder.

    Returns
    -------
    Path
        ``$CUEGAP_CACHE_DIR``; otherwise ``%LOCALAPPDATA%/cuegap/Cache`` on Windows,
        ``~/Library/Caches/cuegap`` on macOS, ``$XDG_CACHE_HOME/cuegap`` (default
        ``~/.cache/cuegap``) elsewhere. Not created here.
    """
    override = os.environ.get("CUEGAP_CACHE_DIR")
    if override:
        return Path(override).expanduser()
    if sys.platform == "win32":
        base = Path(os.environ.get("LOCALAPPDATA", Path.home() / "AppData" / "Local"))
        return base / "cuegap" / "Cache"
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Caches" / "cuegap"
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "cuegap"


def package_versions() -> dict[str, str]:
    """Versions of the packages an exported program depends on (and Python's)."""
    out = {"python": sys.version.split()[0]}
    for name in _PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "absent"
    return out


def program_key(structure: str, settings: dict) -> str:
    """The cache key: a SHA-256 over the model structure, settings and package versions.

    Parameters
    ----------
    structure : str
        A text that changes whenever the model's log-density graph does.
    settings : dict
        Whatever else the program bakes in (shapes, draws, tuning steps, chains, ...).

    Returns
    -------
    str
        64 hexadecimal digits.
    """
    doc = {
        "format": CACHE_FORMAT,
        "versions": package_versions(),
        "settings": settings,
        "structure": structure,
    }
    return hashlib.sha256(json.dumps(doc, sort_keys=True, default=str).encode()).hexdigest()


def entry_path(key: str) -> Path:
    """Where the entry of ``key`` is stored."""
    return cache_dir() / "jax-nuts" / f"{key}.bin"


def read_entry(key: str) -> bytes | None:
    """The stored program of ``key``, or None when absent, corrupt or written for another key."""
    path = entry_path(key)
    try:
        raw = path.read_bytes()
    except OSError:
        return None
    head = _MAGIC + key.encode()
    if not raw.startswith(head) or len(raw) < len(head) + 32:
        return None
    digest, body = raw[len(head) : len(head) + 32], raw[len(head) + 32 :]
    if hashlib.sha256(body).digest() != digest:
        return None
    return body


def write_entry(key: str, body: bytes) -> bool:
    """Store ``body`` under ``key`` atomically; False (and nothing written) on an OS error."""
    path = entry_path(key)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
        with os.fdopen(fd, "wb") as fh:
            fh.write(_MAGIC + key.encode() + hashlib.sha256(body).digest() + body)
        os.replace(tmp, path)
    except OSError:
        return False
    return True


__all__ = [
    "CACHE_FORMAT",
    "cache_dir",
    "entry_path",
    "package_versions",
    "program_key",
    "read_entry",
    "write_entry",
]
