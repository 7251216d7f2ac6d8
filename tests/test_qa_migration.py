"""Revision 0007 (QA tables, tidy demographic axes): upgrade, downgrade, and a store sealed
before it still verifies."""

from __future__ import annotations

import pytest
from alembic import command
from sqlalchemy import inspect, text

from cuegap.compliance import verify
from cuegap.ingest import ingest_path
from cuegap.schema import upgrade
from cuegap.schema._migrate import alembic_config

QA_TABLES = {
    "individual_axis",
    "qa_item",
    "qa_option",
    "qa_option_axis",
    "qa_response",
    "qa_response_factor",
}


def _downgrade(engine, revision: str) -> None:
    cfg = alembic_config(engine)
    with engine.connect() as conn:
        if conn.dialect.name == "sqlite":
            conn.exec_driver_sql("PRAGMA foreign_keys=OFF")
        cfg.attributes["connection"] = conn
        command.downgrade(cfg, revision)
        conn.commit()


def _axes(engine) -> set[tuple[str, str, str, str]]:
    with engine.connect() as conn:
        rows = conn.execute(
            text(
                "SELECT it.item_key, ind.label, a.axis, a.value FROM individual_axis a "
                "JOIN item_individual ind ON ind.id = a.individual_id "
                "JOIN item it ON it.id = ind.item_id"
            )
        ).all()
    return {tuple(r) for r in rows}


def test_axes_are_written_by_the_loader_and_by_the_upgrade(engine, tiny_bank) -> None:
    ingest_path(engine, tiny_bank)
    written = _axes(engine)
    # Hand-read from tests/data/tiny_bank.json: direct-d1's individual A is a man, Asian.
    assert ("direct-d1", "A", "gender", "man") in written
    assert ("direct-d1", "A", "race", "Asian") in written
    assert ("direct-d1", "D", "race", "Hispanic") in written
    with engine.connect() as conn:
        n_ind = conn.execute(text("SELECT COUNT(*) FROM item_individual")).scalar()
    assert len(written) == 2 * n_ind
    _downgrade(engine, "0006")
    assert not QA_TABLES & set(inspect(engine).get_table_names())
    upgrade(engine)
    assert set(inspect(engine).get_table_names()) >= QA_TABLES
    assert _axes(engine) == written  # the upgrade fills them from gender and race
    result = verify(engine)
    assert result.ok, result.problems


@pytest.mark.parametrize(
    "edit",
    [
        "UPDATE individual_axis SET value = 'woman' WHERE axis = 'gender' AND value = 'man'",
        "DELETE FROM individual_axis WHERE axis = 'race'",
        "INSERT INTO individual_axis (individual_id, axis, value) "
        "SELECT MIN(id), 'age', 'old' FROM item_individual",
    ],
    ids=["edit", "delete", "insert"],
)
def test_editing_axes_of_a_sealed_bank_is_caught(engine, tiny_bank, edit: str) -> None:
    ingest_path(engine, tiny_bank)
    assert verify(engine).ok
    with engine.begin() as conn:
        conn.execute(text(edit))
    problems = verify(engine).problems
    assert any("item bank 1" in p and "demographic axes" in p for p in problems), problems
