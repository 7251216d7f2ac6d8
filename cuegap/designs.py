"""The registry of study designs: which designs cuegap knows and which a store holds.

A *study design* (DESIGN.md, "Study designs") says what an item is, how a response
becomes an outcome, which counts the store aggregates and which statistics, verdict rule
and report sections apply. This module only names the designs and tells which of them a
store holds data of, so that a command can default to the only design present and ask for
``--design`` when there are several.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from sqlalchemy import exists, func, select
from sqlalchemy.engine import Connection, Engine

from cuegap.schema import Conversation, QAResponse, QAResponseFactor, Response


@dataclass(frozen=True, slots=True)
class Design:
    """A registered study design.

    Attributes
    ----------
    name : str
        What ``--design`` takes (``dilemma``, ``qa``, ``prompt-variance``, ``conversation``).
    title, description : str
        For listings and messages.
    present : callable
        ``present(conn) -> bool``: whether the store holds responses of this design.
    """

    name: str
    title: str
    description: str
    present: Callable[[Connection], bool]


def _has_rows(table: type) -> Callable[[Connection], bool]:
    def present(conn: Connection) -> bool:
        return bool(conn.execute(select(exists().select_from(table))).scalar())

    return present


def _varying_factor(conn: Connection) -> bool:
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


DESIGNS: dict[str, Design] = {
    d.name: d
    for d in (
        Design(
            "dilemma",
            "Moral dilemmas (seed 000)",
            "Neutral / Direct / Puzzled dilemmas; Favor / Against relative to the neutral "
            "decision; the cue visibility gap",
            _has_rows(Response),
        ),
        Design(
            "qa",
            "BBQ-style question answering (seed 001)",
            "Context, question and options with roles (target / non-target / unknown); "
            "accuracy and bias scores, explicit vs implicit cues",
            _has_rows(QAResponse),
        ),
        Design(
            "prompt-variance",
            "Prompt-construction variance (seed 003, Section 3)",
            "QA answers under prompt-construction factors (choice format, field order, ...) "
            "and replicates; share of variance due to formatting, sign flips, rank "
            "discordance, format-sensitive gaps",
            _varying_factor,
        ),
        Design(
            "conversation",
            "Multi-agent conversations (seed 003, Sections 4-5)",
            "Two-agent conversations (an identity agent and a baseline) over rounds; shift "
            "rates toward the peer's previous opinion and their demographic, reveal and "
            "instantiation contrasts",
            _has_rows(Conversation),
        ),
    )
}


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
        return [name for name, d in DESIGNS.items() if d.present(conn)]


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
    known = ", ".join(DESIGNS)
    if requested is not None and requested not in DESIGNS:
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
