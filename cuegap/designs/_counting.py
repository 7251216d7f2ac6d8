"""What a design gives to count its raw files outside the store (``cuegap count``).

Depends on nothing in cuegap: a :class:`Counting` only names a tally table and holds the
functions an engine runs; :mod:`cuegap.ingest` provides the built-in designs' functions.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Counting:
    """A design's tally and its partition parser, for counting on a distributed engine.

    Attributes
    ----------
    tally : str
        The table the design's analyses count from (``response_tally`` for the dilemma
        design); the engine writes one row per distinct key with its count ``n``.
    keys : tuple of str
        The tally's key columns, in the order of the key tuples ``parse`` yields; the
        first is ``system_id``, which ``parse`` gives as the system's name.
    reader : str
        The reader (``cuegap formats``) whose line parser ``parse`` runs.
    context : callable
        ``context(conn)``: what every partition needs from the store (the item banks),
        built once on the driver and shipped to the workers; it must pickle.
    parse : callable
        ``parse(lines, name, context)``: the partition parser. A pure function of one
        file's raw lines (bytes, with their line endings) that yields, in file order,
        ``("run", RunInfo)`` once, then per record either
        ``("quarantine", line, field, reason, raw)`` or
        ``("record", natural_key, content_hash, line, tally_key, raw)``. It runs exactly
        the reader and answer parsing that ``cuegap ingest`` runs.
    conflict : callable, optional
        ``conflict(where)``: the reason a record is quarantined with when its natural key
        was counted before with other content (``where`` names that first line, in the
        words of the design's loader); None gives the dilemma loader's reason.
    conflict_field : str
        The field such a conflict is quarantined under, as the design's loader names it.
    notes : callable, optional
        ``notes(conn, batch_ids)``: what the design's analyses of the files just counted
        (their ingest batches) cannot see because the responses are not stored, one line
        each, for ``cuegap count`` to print; None when they see everything.
    """

    tally: str
    keys: tuple[str, ...]
    reader: str
    context: Callable[[Any], Any]
    parse: Callable[[Iterable[bytes], str, Any], Iterator[tuple[Any, ...]]]
    conflict: Callable[[str], str] | None = None
    conflict_field: str = "response"
    notes: Callable[[Any, list[int]], list[str]] | None = None
