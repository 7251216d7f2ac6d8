r"""The conversation design's count frame, aggregated in SQL (the input of
:func:`cuegap.designs.conversation.stats.conv_shift_rates` and the other conversation statistics).

Counting rule (seed 003, Eqs. 1-2). With o_a^(r) agent a's opinion in round r, a
transition r − 1 → r (rounds 0-indexed, both present) counts

* in ``iden_disagree`` when o_iden^(r−1) ≠ o_base^(r−1) (both known) and o_iden^(r) is
  known, in ``iden_shift`` when moreover o_iden^(r) = o_base^(r−1);
* in ``base_disagree`` / ``base_shift`` symmetrically for the baseline agent.

So a move to a third option counts in the denominator only, a transition after
agreement counts nowhere and a one-round conversation has no transition, exactly as
:func:`cuegap.designs.conversation.stats.conv_transition_counts` counts them (the tests hold the
two to the
same numbers on both backends).

SQL. The counts come from one self-join of ``conv_opinion`` (the identity agent's round
r − 1 opinion joined to the baseline's in the same round and to both agents' round r
opinions), summed per conversation and grouped per cell
(:func:`cuegap.schema._conv_tally.per_conversation`). The loader runs that join once per
chunk of new conversations and keeps the sums per configuration in ``conv_tally``; so
without a unit :func:`conv_counts` is one GROUP BY over the tally, whose cost grows with
the configurations and not with the transcripts. Per question (``unit="question"``, a
frame with one row per configuration and question) it runs the self-join over the stored
opinions.
"""

from __future__ import annotations

import pandas as pd
from sqlalchemy import func, literal, select
from sqlalchemy.engine import Connection, Engine

from cuegap.schema._conv_tables import ConvConfig, Conversation
from cuegap.schema._conv_tally import CONV_COUNTS, ConvTally, per_conversation
from cuegap.schema._snapshot import connected
from cuegap.schema._tables import System

#: Key columns of a cell (the count frame contract of :mod:`cuegap.designs.conversation.stats`).
CONV_KEYS = (
    "system",
    "benchmark",
    "category",
    "demographics",
    "persona",
    "instantiation",
    "reveal",
)
#: Unit columns ``conv_counts(unit=...)`` accepts; only ``question`` adds a column.
CONV_UNITS = ("question", "persona", "category")
NULL = "none"


def conv_counts(conn: Connection | Engine, *, unit: str | None = None) -> pd.DataFrame:
    """The count frame of the store's conversations: transitions per cell.

    Parameters
    ----------
    conn : Connection or Engine
        A cuegap store (revision 0010 or later), or a connection to one.
    unit : {"question", "persona", "category"}, optional
        A unit for :func:`cuegap.designs.conversation.stats.conv_tests`: ``"question"`` adds the
        ``question`` column (MAC-Fairness ``question_id``) to the key; ``"persona"`` and
        ``"category"`` are key columns already and add nothing.

    Returns
    -------
    DataFrame
        One row per cell that holds a conversation: ``system`` (the audited system's
        name), ``benchmark``, ``category``, ``demographics`` and ``persona`` of the
        identity agent (``"none"`` for null), ``instantiation`` (``"human"`` / ``"ai"``),
        ``reveal`` (``"revealed"`` / ``"anonymous"``, or ``"partial"``), then
        ``question`` when asked for, the four counts ``iden_disagree``, ``iden_shift``,
        ``base_disagree``, ``base_shift`` and ``conversations`` (int64). Rows are sorted
        by the key columns (in Python, so that SQLite and PostgreSQL give the same order);
        an empty store gives an empty frame with these columns.

    Raises
    ------
    ValueError
        For a unit other than those above.

    Notes
    -----
    One SQL statement: a GROUP BY over the tally the loader keeps per configuration
    (cost independent of the number of transcripts), or with ``unit="question"`` over a
    self-join of ``conv_opinion`` (rounds r − 1 and r of both agents). See the module
    docstring for the counting rule (seed 003, Eqs. 1-2).
    """
    if unit is not None and unit not in CONV_UNITS:
        raise ValueError(
            f"conv_counts: unit should be one of {', '.join(CONV_UNITS)} or None, but got {unit!r}"
        )
    c, g, s = Conversation.__table__, ConvConfig.__table__, System.__table__
    keys = [
        s.c.name.label("system"),
        g.c.benchmark.label("benchmark"),
        g.c.category.label("category"),
        func.coalesce(g.c.demographics, literal(NULL)).label("demographics"),
        func.coalesce(g.c.persona, literal(NULL)).label("persona"),
        g.c.instantiation.label("instantiation"),
        g.c.reveal.label("reveal"),
    ]
    if unit == "question":  # per conversation: the self-join over the opinions
        keys.append(c.c.question_id.label("question"))
        t = per_conversation()
        sums = [func.coalesce(func.sum(t.c[n]), 0).label(n) for n in CONV_COUNTS]
        stmt = (
            select(*keys, *sums, func.count().label("conversations"))
            .select_from(c)
            .join(g, g.c.id == c.c.config_id)
            .join(s, s.c.id == g.c.system_id)
            .join(t, t.c.cid == c.c.id, isouter=True)
            .group_by(*keys)
        )
    else:  # per cell: the tally the loader keeps
        tally = ConvTally.__table__
        sums = [func.sum(tally.c[n]).label(n) for n in (*CONV_COUNTS, "conversations")]
        stmt = (
            select(*keys, *sums)
            .select_from(tally)
            .join(g, g.c.id == tally.c.config_id)
            .join(s, s.c.id == g.c.system_id)
            .group_by(*keys)
        )
    with connected(conn) as cx:
        rows = cx.execute(stmt).fetchall()
    names = [k.key for k in keys]
    df = pd.DataFrame(rows, columns=[*names, *CONV_COUNTS, "conversations"])
    for col in (*CONV_COUNTS, "conversations"):
        df[col] = df[col].astype("int64")
    for col in names:
        df[col] = df[col].astype(object)
    return df.sort_values(names, kind="mergesort", ignore_index=True)
