"""The real BBQ sample of ../shared (MAC-Fairness, 11 categories x 200): every item stored
with sane roles, and a system that always answers the gold option scores perfectly.
Skipped where ../shared is absent."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sqlalchemy import text

import cuegap.designs.qa.stats as qa_stats
from cuegap.ingest import expand_path, ingest_path
from cuegap.schema import qa_counts

BBQ = Path(__file__).resolve().parents[2] / "shared" / "data" / "mac_fairness" / "BBQ" / "sampled"
pytestmark = pytest.mark.skipif(not BBQ.is_dir(), reason="../shared BBQ sample is absent")


def test_every_bbq_item_is_stored_with_sane_roles(engine, tmp_path: Path) -> None:
    files, skipped = expand_path(BBQ)
    assert len(files) == 11 and not skipped
    for path in files:
        s = ingest_path(engine, path)
        assert (s.format, s.read, s.stored) == ("bbq", 200, 200), s
    with engine.connect() as conn:
        per_item = conn.execute(
            text(
                "SELECT i.dimension, i.context_condition, g.role AS gold, "
                "SUM(CASE WHEN o.role = 'unknown' THEN 1 ELSE 0 END), "
                "SUM(CASE WHEN o.role = 'target' THEN 1 ELSE 0 END), "
                "SUM(CASE WHEN o.role = 'non_target' THEN 1 ELSE 0 END), "
                "SUM(CASE WHEN o.role = 'unresolved' THEN 1 ELSE 0 END) "
                "FROM qa_item i JOIN qa_option o ON o.item_id = i.id "
                "JOIN qa_option g ON g.item_id = i.id AND g.option_index = i.gold_index "
                "GROUP BY i.id, i.dimension, i.context_condition, g.role"
            )
        ).all()
    assert len(per_item) == 2200
    dims = {r[0] for r in per_item}
    assert len(dims) == 11 and "race_x_gender" in dims
    for dim, ctx, gold, unknown, target, non_target, unresolved in per_item:
        assert unknown == 1, dim
        assert (target, non_target, unresolved) in ((1, 1, 0), (0, 0, 2)), dim
        assert (gold == "unknown") == (ctx == "ambiguous")
    unresolved = [r[0] for r in per_item if r[6]]
    # Only Race_x_gender items whose two people share the race are left unresolved.
    assert set(unresolved) == {"race_x_gender"} and len(unresolved) == 70

    results = tmp_path / "gold.jsonl"
    with engine.connect() as conn:
        rows = conn.execute(text("SELECT source_id, gold_index FROM qa_item")).all()
    results.write_text(
        "".join(
            json.dumps({"system": "oracle", "question_id": q, "predicted_index": g}) + "\n"
            for q, g in rows
        )
    )
    s = ingest_path(engine, results)
    assert (s.read, s.stored, s.quarantined) == (2200, 2200, 0)
    scores = qa_stats.qa_scores(qa_counts(engine))
    # Issue 27: the 70 Race_x_gender items without a target count in accuracy (they used to
    # be left out of every count, so n summed to 2,130) and in no bias score.
    assert scores["n"].sum() == 2200
    assert scores["n_untargeted"].sum() == 70
    assert set(scores.loc[scores["n_untargeted"] > 0, "dimension"]) == {"race_x_gender"}
    amb = scores[scores["context"] == "ambiguous"]
    dis = scores[scores["context"] == "disambiguated"]
    assert (amb["acc_amb"] == 1).all() and (amb["s_amb"] == 0).all()
    assert (dis["acc_dis"] == 1).all() and (dis["acc_dis_bbq"] == 1).all()
