"""The reader registry: one module per runner format, picked by name or detected.

A reader module provides ``detect(path) -> bool`` and ``read(path)``. Response readers
return a :class:`~cuegap.ingest._records.ResponseStream`; item-bank readers return a
validated item-bank dict. Later runners (inspect-ai, lm-eval, ...) register here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from cuegap.ingest import generic, itembank


@dataclass(frozen=True, slots=True)
class Reader:
    """A registered input format."""

    name: str
    kind: Literal["responses", "item_bank"]
    description: str
    detect: Callable[[Path], bool]
    read: Callable[[Path], Any]


def _moral_safety_detect(path: Path) -> bool:
    return path.is_dir() and (path / "majority_vote_annotated.csv").is_file()


def _moral_safety_bank(path: Path) -> dict[str, Any]:
    from cuegap.ingest.moral_safety import build_item_bank

    return build_item_bank(path)


READERS: dict[str, Reader] = {
    r.name: r
    for r in (
        Reader(
            itembank.NAME,
            "item_bank",
            "cuegap item-bank JSON (format: cuegap-itembank)",
            itembank.detect,
            itembank.read,
        ),
        Reader(
            "moral-safety",
            "item_bank",
            "the seed paper's public CSV directory (majority_vote_annotated.csv, ...)",
            _moral_safety_detect,
            lambda p: itembank.validate(_moral_safety_bank(p), source=str(p)),
        ),
        Reader(
            generic.NAME,
            "responses",
            "cuegap responses JSONL (format: cuegap-responses)",
            generic.detect,
            generic.read,
        ),
    )
}


def known_formats() -> str:
    """Comma-separated names of the registered formats, for messages."""
    return ", ".join(READERS)


def get_reader(name: str) -> Reader:
    """Look up a reader by name.

    Raises
    ------
    ValueError
        When no reader has that name; the message lists the known ones.
    """
    try:
        return READERS[name]
    except KeyError:
        raise ValueError(f"unknown format {name!r}; known formats: {known_formats()}") from None


def detect_reader(path: Path) -> Reader:
    """Find the reader that recognises ``path``.

    Raises
    ------
    FileNotFoundError
        When the path does not exist.
    ValueError
        When no reader recognises it; the message lists the known formats.
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such file or directory")
    for reader in READERS.values():
        if reader.detect(path):
            return reader
    raise ValueError(
        f"No reader recognises {str(path)!r}; known formats: {known_formats()}. "
        "Use --format NAME to force one."
    )
