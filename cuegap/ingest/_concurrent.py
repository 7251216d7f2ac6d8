"""How concurrent ingests share one store without deadlocks or lost work.

Several people may ingest into one PostgreSQL store at once, with overlapping files in
different orders. Two transactions that insert the same response keys in different
orders each wait for the other's uncommitted row: PostgreSQL detects the cycle and
aborts one of them (``deadlock detected``). Three rules prevent that, and one recovers
from whatever is left:

* every batch inserts its responses in ``response_key`` order (``ORDER BY`` in the
  ``INSERT ... SELECT`` from the staging table, see ``_write_responses``), so any two
  batches take their key locks in the same order and cannot wait on each other in a cycle;
* a system is created or updated in a short transaction of its own, committed before the
  batch goes on (``_ResponseLoader._system``): a batch holds no lock on a ``system`` row
  while it inserts;
* quarantine rows are written in (file SHA-256, line) order (:func:`in_key_order`);
* a batch that fails anyway with a deadlock or a serialisation failure is rolled back and
  retried with a jittered, growing back-off (:func:`retry_batch`), its counts restored
  first so that ``read == stored + duplicate + quarantined`` still holds.

SQLite serialises writers with its database lock (and a busy timeout), so the first
three rules cost it nothing and the retry never triggers there.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterable
from typing import Any

from sqlalchemy import exists, select
from sqlalchemy.engine import Connection
from sqlalchemy.exc import DBAPIError

from cuegap.schema import IngestBatch

#: SQLSTATEs after which the whole transaction may simply be run again.
RETRYABLE_SQLSTATES = frozenset({"40P01", "40001"})  # deadlock_detected, serialization_failure
ATTEMPTS = 6  # tries of one batch before its error is reported
BACKOFF_S = 0.05  # first back-off; doubles each retry, with full jitter


def retryable(exc: BaseException) -> bool:
    """True for a database error after which the transaction can be retried as a whole.

    Parameters
    ----------
    exc : BaseException
        An exception raised while writing a batch.

    Returns
    -------
    bool
        True for PostgreSQL's ``deadlock_detected`` (40P01) and ``serialization_failure``
        (40001); False for anything else, which is reported as it is.
    """
    if not isinstance(exc, DBAPIError):
        return False
    return getattr(exc.orig, "sqlstate", None) in RETRYABLE_SQLSTATES


def retry_batch(
    write: Callable[[], None],
    summary: Any,
    *,
    attempts: int = ATTEMPTS,
    backoff_s: float = BACKOFF_S,
    sleep: Callable[[float], None] = time.sleep,
) -> int:
    """Run one batch's transaction, retrying it after a deadlock or serialisation failure.

    Parameters
    ----------
    write : callable
        Writes the batch in one transaction (``engine.begin()``), updating ``summary``.
    summary : IngestSummary
        The counts ``write`` updates; restored to their values before the failed attempt
        so that a retried batch is counted once.
    attempts : int
        Tries before the error is raised.
    backoff_s : float
        Upper bound of the first back-off in seconds; doubled after each failure. The
        sleep is drawn uniformly below the bound ("full jitter"), so retrying ingesters
        do not collide again in step.
    sleep : callable
        ``time.sleep``; replaceable for tests.

    Returns
    -------
    int
        How many retries the batch needed (0 when the first attempt committed).

    Raises
    ------
    Exception
        The last error when every attempt failed, or at once any error that is not
        :func:`retryable`.
    """
    if attempts < 1:
        raise ValueError(f"attempts must be at least 1, but got {attempts}")
    for attempt in range(attempts):
        saved = dict(vars(summary))
        saved["problems"] = list(summary.problems)
        try:
            write()
            return attempt
        except DBAPIError as exc:
            if attempt == attempts - 1 or not retryable(exc):
                raise
            vars(summary).update(saved)
            sleep(random.uniform(0, backoff_s * 2**attempt))
    raise AssertionError("unreachable")  # pragma: no cover


def in_key_order(rows: Iterable[dict[str, Any]], *keys: str) -> list[dict[str, Any]]:
    """Rows sorted by ``keys``, so that concurrent batches lock them in one order."""
    return sorted(rows, key=lambda row: tuple(row[k] for k in keys))


def nothing_new_note(conn: Connection, sha256: str, batch_id: int) -> str:
    """Why a pass stored nothing: the file itself was ingested before, or others hold it all.

    Parameters
    ----------
    conn : Connection
        A connection to the store.
    sha256 : str
        SHA-256 of the file just ingested.
    batch_id : int
        This pass's ``ingest_batch`` id.

    Returns
    -------
    str
        The note printed under the pass's counts.
    """
    before = conn.execute(
        select(
            exists().where(
                IngestBatch.source_sha256 == sha256,
                IngestBatch.status == "completed",
                IngestBatch.id != batch_id,
            )
        )
    ).scalar()
    if before:
        return "file already ingested: nothing new stored"
    return (
        "nothing new stored: every record was already stored by another file or run "
        "(this file itself had not been ingested before)"
    )
