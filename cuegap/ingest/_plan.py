"""What one ``cuegap ingest`` of several paths does, before anything is written: the order
of the files (item banks, then banks that join to them, then responses) and the system
given for records that name none.
"""

from __future__ import annotations

import dataclasses
import functools
from pathlib import Path

from cuegap.ingest.registry import READERS, Reader, _claim


def with_system(reader: Reader, system: str | None) -> Reader:
    """``reader`` with its ``read`` given the system of records that name none.

    Item banks are returned unchanged, so one command can ingest banks and results.

    Raises
    ------
    ValueError
        When ``system`` is given for a response format whose records always name theirs.
    """
    if system is None or reader.kind == "item_bank":
        return reader
    if not system.strip():
        raise ValueError("--system: expected the audited system's name, got an empty string")
    if not reader.system:
        takes = ", ".join(r.name for r in READERS.values() if r.system)
        raise ValueError(
            f"--system applies to formats whose records may name no system ({takes}), "
            f"not to format {reader.name!r}"
        )
    return dataclasses.replace(reader, read=functools.partial(reader.read, system=system))


def ingest_order(files: list[Path]) -> list[Path]:
    """``files`` (of every path given to one ingest) in the order they are stored: item
    banks, then banks that join to stored banks (ImplicitBBQ to BBQ), then responses; the
    given order within each group.
    """

    def rank(f: Path) -> int:
        reader = _claim(f)
        if reader is None or reader.kind == "responses":
            return 2
        return 1 if reader.joins else 0

    return sorted(files, key=rank)
