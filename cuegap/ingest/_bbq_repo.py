"""BBQ-family repositories as cloned: which files ``cuegap ingest FOLDER`` reads.

A folder with a ``data/`` folder of JSONL files named after BBQ's categories is read as
such a repository (BBQ itself, or an ImplicitBBQ-style one):

* ``data/*.jsonl`` are its item banks (BBQ items, or ImplicitBBQ items that join to them);
* JSONL and JSON files in its other folders, at any depth, that a response reader claims
  are its results (ImplicitBBQ's ``bbq_evaluation/``, ``bbq_implicit_evaluation/``). Which
  cue a result answers is decided by its context, not by the folder it lies in
  (:mod:`cuegap.ingest._qa_loader`);
* files outside ``data/`` that only an item-bank reader claims (BBQ's own
  ``results/UnifiedQA/*.jsonl``: its items with a model's predictions) and files no reader
  claims are skipped and listed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from cuegap.ingest._bbq_names import category_from_name


def is_bbq_repository(path: Path) -> bool:
    """True for a folder whose ``data/`` holds JSONL files named after BBQ categories."""
    data = Path(path) / "data"
    if not Path(path).is_dir() or not data.is_dir():
        return False
    return any(
        f.is_file() and f.suffix.lower() == ".jsonl" and category_from_name(f.name)
        for f in data.iterdir()
    )


def _files(root: Path) -> Iterable[Path]:
    for f in sorted(root.rglob("*")):
        rel = f.relative_to(root).parts
        if any(p.startswith(".") for p in rel) or not f.is_file():
            continue
        if f.suffix.lower() in (".jsonl", ".json"):
            yield f


def expand_repository(
    path: Path, claim: Callable[[Path], Any], *, format: str | None = None
) -> tuple[list[Path], list[Path]]:
    """The item banks (``data/``, in name order), then the result files, and the skipped.

    Parameters
    ----------
    path : Path
        The repository's folder.
    claim : callable
        A file's reader (with ``name`` and ``kind``), or None when no reader claims it.
    format : str, optional
        A forced format: only files of that format are taken.
    """
    root = Path(path)
    banks: list[Path] = []
    responses: list[Path] = []
    skipped: list[Path] = []
    for f in _files(root):
        reader = claim(f)
        in_data = f.parent == root / "data"
        wanted = reader is not None and (format is None or reader.name == format)
        if wanted and reader.kind == "item_bank" and in_data:
            banks.append(f)
        elif wanted and reader.kind == "responses":
            responses.append(f)
        else:
            skipped.append(f)
    return banks + responses, skipped
