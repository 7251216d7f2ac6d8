"""Tidy demographic axes of the dilemma design's individuals (``individual_axis``)."""

from __future__ import annotations

from sqlalchemy import insert, select
from sqlalchemy.engine import Connection

from cuegap.schema import IndividualAxis, Item, ItemIndividual

# The axes every dilemma individual carries, as columns of ``item_individual``.
DILEMMA_AXES = ("gender", "race")


def write_individual_axes(conn: Connection, bank_id: int) -> int:
    """Write the (individual, axis, value) rows of a bank's individuals.

    Parameters
    ----------
    conn : Connection
        In the transaction that wrote the bank.
    bank_id : int

    Returns
    -------
    int
        Rows written.
    """
    ind = ItemIndividual.__table__
    rows = conn.execute(
        select(ind.c.id, ind.c.gender, ind.c.race)
        .join(Item, Item.id == ind.c.item_id)
        .where(Item.bank_id == bank_id)
        .order_by(ind.c.id)
    ).all()
    values = [
        {"individual_id": r.id, "axis": axis, "value": getattr(r, axis)}
        for axis in DILEMMA_AXES
        for r in rows
    ]
    if values:
        conn.execute(insert(IndividualAxis), values)
    return len(values)
