"""The ledger digest of a pass's responses, computed as they are written.

Sealing a pass in the ledger hashes every response it stored (see
:func:`cuegap.schema._ledger._bulk_digest`): SHA-256 over the rows in id order, fed in
chunks of 10,000 rows as orjson arrays of the columns ``RESPONSE_COLUMNS``. Reading a
large pass back only to hash it costs about a sixth of the ingest, so the loader hashes
the rows as it writes them instead: the same bytes, provided it knows each row's id and
the value the store gives back for each column.

It knows both when:

- on PostgreSQL, the insert returns the ids and keys of the rows it stored;
- on SQLite, every row of a batch was stored and the largest id is then the previous
  largest plus their number: ids only grow, so they are that range, in insert order.

Otherwise (a batch partly stored, say), or for a value whose read-back form is not certain
(a runner's result on PostgreSQL, which the driver returns parsed), the digest gives up
and the ledger reads the rows back as before. ``tests/test_ingest_digest.py`` compares the
two digests on files with every kind of line.

Depends only on orjson and the response columns; no database access.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from typing import Any

import orjson

from cuegap.ingest._sql import _NULLABLE_TEXT, _RESPONSE_COLS
from cuegap.schema import DIGEST_CHUNK, RESPONSE_COLUMNS

CHUNK = DIGEST_CHUNK  # rows per hashed array, as the read-back digest fetches them
_JSON_COLS = ("assignment", "runner_result")
# Where each stored column (after ``id``) sits in an insert tuple.
_ORDER = tuple(_RESPONSE_COLS.index(c) for c in RESPONSE_COLUMNS[1:])
_NULL_MARKED = frozenset(
    i for i, c in enumerate(RESPONSE_COLUMNS[1:], start=1) if c in _NULLABLE_TEXT
)
_BOOL_MARKED = RESPONSE_COLUMNS.index("puzzle_correct")
_JSON_AT = frozenset(RESPONSE_COLUMNS.index(c) for c in _JSON_COLS)
_RUNNER_AT = _RESPONSE_COLS.index("runner_result")


class ResponseDigest:
    """A running digest of the responses one pass stores, in the ledger's form.

    Parameters
    ----------
    dialect : str
        ``"sqlite"`` or ``"postgresql"``: how NULLs were bound and how values read back.
    """

    def __init__(self, dialect: str) -> None:
        self.sqlite = dialect == "sqlite"
        self.valid = True
        self._hash = hashlib.sha256()
        self._pending: list[tuple[Any, ...]] = []

    def give_up(self) -> None:
        """Stop: the ledger reads this pass's responses back instead."""
        self.valid = False
        self._pending = []

    def add(self, ids: Sequence[int] | None, rows: Iterable[tuple[Any, ...]] = ()) -> None:
        """Add rows stored by one committed transaction.

        Parameters
        ----------
        ids : sequence of int or None
            The rows' ids, in increasing order; None when they are not known (the digest
            gives up).
        rows : iterable of tuple
            Insert tuples in ``_RESPONSE_COLS`` order, encoded with the dialect's codec.
        """
        if not self.valid:
            return
        if ids is None:
            self.give_up()
            return
        rows = list(rows)
        if not rows:
            return
        cols = list(zip(*rows, strict=True))  # column-wise: a few C loops, not one per value
        if not self.sqlite and any(v is not None for v in cols[_RUNNER_AT]):
            self.give_up()
            return
        out: list[Sequence[Any]] = [ids]
        for at, i in enumerate(_ORDER, start=1):
            col: Sequence[Any] = cols[i]
            if self.sqlite:  # NULLIF(?, 0) and NULLIF(?, ''): the markers read back as NULL
                if at in _NULL_MARKED:
                    col = [None if v.__class__ is int else v for v in col]
                elif at == _BOOL_MARKED:
                    col = [None if v == "" else v for v in col]
            elif at in _JSON_AT:  # psycopg returns json columns parsed; orjson wrote them
                col = [None if v is None else orjson.loads(v) for v in col]
            out.append(col)
        pending = self._pending
        pending.extend(zip(*out, strict=True))
        while len(pending) >= CHUNK:
            self._hash.update(orjson.dumps(pending[:CHUNK]))
            del pending[:CHUNK]

    def hexdigest(self) -> str | None:
        """The digest of every row added, or None when it gave up."""
        if not self.valid:
            return None
        h = self._hash.copy()
        if self._pending:
            h.update(orjson.dumps(self._pending))
        return h.hexdigest()
