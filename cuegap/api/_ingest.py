"""Ingesting through the notebook API: what an ingest will read, checked before any store is
touched (:func:`plan_ingest`), and what it could not store (:func:`ingest_failures`).

``cuegap ingest`` and :meth:`cuegap.Audit.ingest` both go through these, so that a typo in
a path, a format or a mapping leaves no empty store behind."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True, slots=True)
class IngestPlan:
    """What one ingest reads.

    Attributes
    ----------
    files : tuple of Path
        The files (or folders read as a whole), in the order they are stored: item banks
        of every path first, then responses.
    skipped : tuple of Path
        The files of the given folders that no reader recognises.
    format, mapping, system
        The forced reader, the runner metadata mapping and the system of records that name
        none, as given.
    """

    files: tuple[Path, ...]
    skipped: tuple[Path, ...] = ()
    format: str | None = None
    mapping: Path | None = None
    system: str | None = None


def plan_ingest(
    paths: Iterable[Path | str],
    *,
    format: str | None = None,
    mapping: Path | str | None = None,
    system: str | None = None,
) -> IngestPlan:
    """Check an ingest's arguments and list what it reads, without opening any store.

    Parameters
    ----------
    paths : iterable of path
        Files or folders (a folder gives the files a reader recognises).
    format : str, optional
        Force this reader (default: detected per file).
    mapping : path, optional
        A TOML file mapping a runner's sample metadata to cuegap fields.
    system : str, optional
        The audited system of result lines that name none.

    Raises
    ------
    ValueError
        When a path or the mapping file does not exist, a folder holds no file a reader
        recognises, the format is unknown, or a format takes no ``system``.
    """
    from cuegap.ingest import detect_reader, expand_path, get_reader, ingest_order, with_system

    if format is not None:
        get_reader(format)
    given = [Path(p) for p in paths]
    for path in given:
        if not path.exists():
            raise ValueError(f"{path}: no such file or directory")
    if mapping is not None and not Path(mapping).exists():
        raise ValueError(f"{mapping}: no such mapping file")
    expanded = [(path, *expand_path(path, format=format)) for path in given]
    for path, files, skipped in expanded:
        if not files:  # an empty folder, or only files no reader recognises
            what = f"a reader of format {format}" if format else "a reader"
            others = f" ({len(skipped)} other file(s) skipped)" if skipped else ""
            raise ValueError(f"{path}: no file {what} recognises in this folder{others}")
    if system is not None:  # refuse a system for a format that takes none, before any write
        for _path, files, _skipped in expanded:
            for f in files:
                with_system(get_reader(format) if format else detect_reader(f), system)
    return IngestPlan(
        files=tuple(ingest_order([f for _path, files, _skipped in expanded for f in files])),
        skipped=tuple(f for _path, _files, skipped in expanded for f in skipped),
        format=format,
        mapping=None if mapping is None else Path(mapping),
        system=system,
    )


def ingest_failures(summaries: Sequence[Any]) -> list[str]:
    """What an ingest could not store, one message per file: every record of the file
    quarantined (with the first reason, and what to check), or the file not read to its
    end. Empty when every file stored something and was read whole.

    Parameters
    ----------
    summaries : sequence of IngestSummary
        What :meth:`cuegap.Audit.ingest` returned.
    """
    from cuegap.format_names import FORMAT_NAMES
    from cuegap.ingest import get_reader

    messages = []
    for s in summaries:
        if not (s.read == s.quarantined > 0 or s.incomplete):
            continue
        why = s.problems[0][1] if s.problems else "see `cuegap status`"
        # --mapping is suggested only to readers that take one (runner formats)
        known = s.format in FORMAT_NAMES and get_reader(s.format).mapping
        messages.append(
            f"{s.path}: nothing stored, all {s.read:,} records were quarantined (first: "
            f"{why}); check --format" + (" and --mapping" if known else "")
            if s.read == s.quarantined
            else f"{s.path}: not read to its end: {s.incomplete}"
        )
    return messages
