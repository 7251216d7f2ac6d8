"""Walking a folder of MAC-Fairness transcripts: in name order, one folder at a time.

Memory stays bounded by the largest folder's list of names: each folder is listed once
(``os.scandir``) and its names sorted, so the walk order (and each transcript's place in
it, its "line") is the same on every run over the same files. The order is that of
``os.walk`` (top-down, a folder's files before its subfolders, symbolic links to folders
not followed) with names sorted; paths stay strings, since building a ``Path`` per file
cost more than reading a small transcript.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from pathlib import Path

#: MAC-Fairness folders that hold no transcripts (snapshots, index, job summaries).
SKIP_DIRS = frozenset({"bookkeeping", "job_summary"})
_SUFFIXES = (".json", ".jsonl")


def _name(entry: os.DirEntry) -> str:
    return entry.name


def walk_entries(root: Path | str) -> Iterator[tuple[str, str, os.DirEntry]]:
    """``(path, relative posix path, entry)`` of the .json / .jsonl files under ``root``,
    folder by folder, in name order (unreadable folders are skipped, as by ``os.walk``)."""
    yield from _walk(os.fspath(root), "")


def _walk(top: str, rel: str) -> Iterator[tuple[str, str, os.DirEntry]]:
    try:
        with os.scandir(top) as it:
            entries = list(it)
    except OSError:
        return
    dirs, files = [], []
    for e in entries:
        try:
            is_dir = e.is_dir()
        except OSError:
            is_dir = False
        (dirs if is_dir else files).append(e)
    files.sort(key=_name)
    for e in files:
        name = e.name
        if name.lower().endswith(_SUFFIXES) and not name.startswith("."):
            yield e.path, rel + name, e
    dirs.sort(key=_name)
    for e in dirs:
        if e.name not in SKIP_DIRS and not e.is_symlink():
            yield from _walk(e.path, f"{rel}{e.name}/")


def walk(root: Path) -> Iterator[Path]:
    """The .json / .jsonl files under ``root``, folder by folder, in name order."""
    for path, _rel, _entry in walk_entries(root):
        yield Path(path)


def fingerprint(path: Path) -> tuple[str, int, int]:
    """(SHA-256 of the listing, bytes, files) of a folder: relative names and sizes, so an
    unchanged folder is recognised without reading its files twice."""
    h, size, n = hashlib.sha256(b"mac-fairness-conversation\n"), 0, 0
    for _path, rel, entry in walk_entries(path):
        try:
            st = entry.stat().st_size
        except OSError:  # e.g. a dangling link: listed, and quarantined when read
            st = -1
        h.update(f"{rel}\t{st}\n".encode("utf-8", "surrogatepass"))
        size, n = size + max(st, 0), n + 1
    return h.hexdigest(), size, n
