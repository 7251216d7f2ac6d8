"""Walking a folder of MAC-Fairness transcripts: in name order, one folder at a time.

Memory stays bounded by the largest folder's list of names: ``os.walk`` lists one folder
at a time and the names are sorted per folder, so the walk order (and each transcript's
place in it, its "line") is the same on every run over the same files.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from pathlib import Path

#: MAC-Fairness folders that hold no transcripts (snapshots, index, job summaries).
SKIP_DIRS = frozenset({"bookkeeping", "job_summary"})


def walk(root: Path) -> Iterator[Path]:
    """The .json / .jsonl files under ``root``, folder by folder, in name order."""
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS)
        for name in sorted(files):
            if name.lower().endswith((".json", ".jsonl")) and not name.startswith("."):
                yield Path(folder) / name


def fingerprint(path: Path) -> tuple[str, int, int]:
    """(SHA-256 of the listing, bytes, files) of a folder: relative names and sizes, so an
    unchanged folder is recognised without reading its files twice."""
    h, size, n = hashlib.sha256(b"mac-fairness-conversation\n"), 0, 0
    for f in walk(path):
        st = f.stat().st_size
        h.update(f"{f.relative_to(path).as_posix()}\t{st}\n".encode("utf-8", "surrogatepass"))
        size, n = size + st, n + 1
    return h.hexdigest(), size, n
