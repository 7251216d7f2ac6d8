"""A named lock held in the store itself, for scheduled re-analyses on several machines."""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta

from sqlalchemy import delete, insert, select, update
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError

from cuegap.schema import StoreLock


class LockHeld(RuntimeError):
    """The named lock is held by someone else."""


#: How long a lock survives its holder: renewed every third of it while held.
LOCK_TTL = timedelta(minutes=10)


@contextmanager
def store_lock(
    engine: Engine,
    name: str,
    *,
    ttl: timedelta = LOCK_TTL,
    holder: str | None = None,
) -> Iterator[str]:
    """Hold a named lock in the store for the duration of a ``with`` block.

    The lock is a row keyed by ``name``; inserting it is atomic on SQLite and PostgreSQL.
    While the block runs, a background thread renews the lock every ``ttl / 3``, so a
    live holder keeps it however long the work takes; a lock left unrenewed past its
    ``ttl`` (a crashed holder) is taken over.

    Raises
    ------
    LockHeld
        When another live holder has it.
    """
    me = holder or f"{socket.gethostname()}:{os.getpid()}"
    now = datetime.now(UTC)
    for _attempt in range(2):
        try:
            with engine.begin() as conn:
                conn.execute(
                    insert(StoreLock).values(
                        name=name, holder=me, acquired_at=now, expires_at=now + ttl
                    )
                )
            break
        except IntegrityError:
            with engine.begin() as conn:
                row = conn.execute(
                    select(StoreLock.holder, StoreLock.expires_at).where(StoreLock.name == name)
                ).first()
                if row is None:
                    continue
                expires = row.expires_at
                if expires.tzinfo is None:
                    expires = expires.replace(tzinfo=UTC)
                if expires > now:
                    raise LockHeld(
                        f"lock {name!r} is held by {row.holder} until "
                        f"{expires.isoformat(timespec='seconds')}"
                    ) from None
                conn.execute(
                    delete(StoreLock).where(StoreLock.name == name, StoreLock.holder == row.holder)
                )
    else:  # pragma: no cover - lost two races in a row
        raise LockHeld(f"lock {name!r} is contended; retry")
    stop = threading.Event()

    def renew() -> None:
        while not stop.wait(ttl.total_seconds() / 3):
            try:
                with engine.begin() as conn:
                    conn.execute(
                        update(StoreLock)
                        .where(StoreLock.name == name, StoreLock.holder == me)
                        .values(expires_at=datetime.now(UTC) + ttl)
                    )
            except Exception:  # a missed renewal only lets the lock age
                continue

    heartbeat = threading.Thread(target=renew, name=f"cuegap-lock-{name}", daemon=True)
    heartbeat.start()
    try:
        yield me
    finally:
        stop.set()
        heartbeat.join()
        with engine.begin() as conn:
            conn.execute(delete(StoreLock).where(StoreLock.name == name, StoreLock.holder == me))
