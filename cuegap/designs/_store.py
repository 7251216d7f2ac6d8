"""Which registered designs a store holds, and which one a command works on.

A command defaults to the only design present and asks for ``--design`` when there are
several. The presence checks shared by built-in designs live here too.
"""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy import exists, func, select
from sqlalchemy.engine import Connection, Engine

from cuegap.designs._registry import registered
from cuegap.schema import QAResponseFactor


def has_rows(table: type) -> Callable[[Connection], bool]:
    """A presence check: whether ``table`` has any row."""

    def present(conn: Connection) -> bool:
        return bool(conn.execute(select(exists().select_from(table))).scalar())

    return present


def varying_factor(conn: Connection) -> bool:
    """Whether QA answers carry a prompt factor (other than the prompting strategy) with
    two or more values: the runs a prompt-variance analysis compares."""
    f = QAResponseFactor.__table__
    stmt = (
        select(f.c.name)
        .where(f.c.name != "strategy")
        .group_by(f.c.name)
        .having(func.count(func.distinct(f.c.value)) > 1)
        .limit(1)
    )
    return conn.execute(stmt).first() is not None


def designs_in_store(engine: Engine) -> list[str]:
    """The designs a store holds responses of, in registry order.

    Parameters
    ----------
    engine : Engine
        An initialised store.

    Returns
    -------
    list of str
    """
    with engine.connect() as conn:
        return [name for name, d in registered().items() if d.present(conn)]


def resolve_design(engine: Engine, requested: str | None) -> str:
    """The design a command works on: ``requested``, or the only one the store holds.

    Parameters
    ----------
    engine : Engine
        An initialised store.
    requested : str or None
        The ``--design`` the user gave, if any.

    Returns
    -------
    str

    Raises
    ------
    ValueError
        When ``requested`` is not a known design or the store holds no data of it; when
        nothing was requested and the store holds no design, or several.
    """
    designs = registered()
    known = ", ".join(designs)
    if requested is not None and requested not in designs:
        raise ValueError(f"unknown design {requested!r}; known designs: {known}")
    present = designs_in_store(engine)
    if requested is not None:
        if requested not in present:
            held = ", ".join(present) or "none"
            raise ValueError(
                f"the store holds no responses of design {requested!r} (it holds: {held})"
            )
        return requested
    if not present:
        raise ValueError(
            f"the store holds no responses of any design ({known}): ingest an item bank "
            "and its responses first"
        )
    if len(present) > 1:
        raise ValueError(
            f"the store holds several designs ({', '.join(present)}): choose one with --design"
        )
    return present[0]
