"""Tests of the Moral Safety item-bank builder against the paper's public CSVs.

Facts checked against the data (with independent computations using the csv module):

* 100 dilemmas; 100 neutral, 300 direct and 900 puzzled items (300 per difficulty);
  60 distinct puzzle ids, each used for 15 puzzled items (5 dilemmas x 3 combinations).
* Benefit option (``majority_vote_best_for_person``): 43 option1 and 57 option2.
* Person status (``Target_person_action_status``): 64 bad, 34 neutral, 2 good, as in the
  paper's Appendix K.
* Human decisions: sys1 49 option1 / 51 option2; sys2 48 option1 / 52 option2.
* Exactly one label value cannot be mapped: an empty ``Target_person_status`` in
  ``annotator_a.csv``; it is stored as null.
"""

from __future__ import annotations

import csv
import json
from collections import Counter
from pathlib import Path

import jsonschema
import pytest

from cuegap.ingest.moral_safety import build_item_bank, find_moral_safety_dir, unmapped_values

SCHEMA_PATH = Path(__file__).resolve().parents[1] / "cuegap/ingest/schemas/itembank-v1.schema.json"
DATA_DIR = find_moral_safety_dir()
pytestmark = pytest.mark.skipif(
    DATA_DIR is None or not DATA_DIR.is_dir(),
    reason="Moral Safety CSVs not found (set CUEGAP_MORAL_SAFETY_DIR or provide "
    "../shared/data/moral_safety)",
)


def _rows(name: str) -> list[dict[str, str]]:
    with open(DATA_DIR / name, encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh))


@pytest.fixture(scope="module")
def bank() -> dict:
    return build_item_bank(DATA_DIR)


def _by_condition(bank: dict, condition: str) -> list[dict]:
    return [it for it in bank["items"] if it["condition"] == condition]


def test_schema_valid(bank):
    schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    jsonschema.validate(bank, schema)
    assert bank["name"] == "moral_safety"
    assert build_item_bank(DATA_DIR, name="other")["name"] == "other"


def test_design_counts(bank):
    assert [d["dilemma_id"] for d in bank["dilemmas"]] == [str(i) for i in range(1, 101)]
    counts = Counter(it["condition"] for it in bank["items"])
    assert counts == {"neutral": 100, "direct": 300, "puzzled": 900}
    puzzled = _by_condition(bank, "puzzled")
    assert Counter(it["difficulty"] for it in puzzled) == {
        "easy": 300,
        "intermediate": 300,
        "hard": 300,
    }
    per_puzzle = Counter(it["puzzle_id"] for it in puzzled)
    assert len(per_puzzle) == 60
    assert set(per_puzzle.values()) == {15}
    assert all(it["solution_shape"] == "orig" for it in puzzled)
    assert len({it["item_id"] for it in bank["items"]}) == len(bank["items"])
    ids = {d["dilemma_id"] for d in bank["dilemmas"]}
    assert all(it["dilemma_id"] in ids for it in bank["items"])


def test_individuals_canonical_shape(bank):
    for it in bank["items"]:
        if it["condition"] == "neutral":
            assert "individuals" not in it
            continue
        a, b, c, d = it["individuals"]
        assert [x["label"] for x in (a, b, c, d)] == ["A", "B", "C", "D"]
        assert a["gender"] == b["gender"] != c["gender"] == d["gender"]
        assert a["race"] == c["race"] != b["race"] == d["race"]
        assert it["combination_id"] in {"1", "2", "3"}
    direct = {it["item_id"]: it for it in _by_condition(bank, "direct")}
    for row in _rows("direct_dilemmas.csv"):
        a, b, c, d = direct[f"direct-{row['ID']}"]["individuals"]
        assert (a["gender"], d["gender"]) == (row["selected_gender1"], row["selected_gender2"])
        assert (a["race"], d["race"]) == (row["selected_race1"], row["selected_race2"])
    assert bank["genders"] == ["man", "woman", "non-binary"]
    assert bank["races"] == ["Asian", "Black", "Hispanic", "Muslim", "White"]


def test_benefit_status_and_decisions(bank):
    majority = _rows("majority_vote_annotated.csv")
    raw = Counter(r["majority_vote_best_for_person"].replace(" ", "").lower() for r in majority)
    assert raw == {"option1": 43, "option2": 57}
    assert Counter(d["benefit_option"] for d in bank["dilemmas"]) == raw
    raw_status = Counter(r["Target_person_action_status"] for r in majority)
    assert raw_status == {"bad": 64, "neutral": 34, "good": 2}  # paper, Appendix K
    assert Counter(d["person_status"] for d in bank["dilemmas"]) == raw_status
    sys1 = Counter(d["human_decisions"]["sys1"] for d in bank["dilemmas"])
    sys2 = Counter(d["human_decisions"]["sys2"] for d in bank["dilemmas"])
    assert sys1 == {"option1": 49, "option2": 51}
    assert sys2 == {"option1": 48, "option2": 52}


def test_join_by_idx(bank):
    """Dilemma ids and topics come from direct_dilemmas.csv through idx."""
    direct = _rows("direct_dilemmas.csv")
    by_idx = {r["idx"]: (r["dilemma_ID"], r["topic_group"]) for r in direct}
    majority = _rows("majority_vote_annotated.csv")
    expected = [by_idx[r["idx"]] for r in majority]
    assert [(d["dilemma_id"], d["topic_group"]) for d in bank["dilemmas"]] == expected
    assert len({d["topic_group"] for d in bank["dilemmas"]}) == 16


def test_annotations_and_unmapped(bank):
    assert all(
        [a["annotator"] for a in d["annotations"]] == ["a", "b", "c"] for d in bank["dilemmas"]
    )
    missing = [
        (d["dilemma_id"], a["annotator"], key)
        for d in bank["dilemmas"]
        for a in d["annotations"]
        for key in ("person_status", "benefit_option", "sys1", "sys2")
        if a[key] is None
    ]
    assert len(missing) == 1
    assert missing[0][1:] == ("a", "person_status")
    assert unmapped_values(DATA_DIR) == {"annotator_a.csv:Target_person_status": 1}
    for ann in "abc":
        rows = _rows(f"annotator_{ann}.csv")
        raw = Counter(r["best_for_person"].replace(" ", "").lower() for r in rows)
        got = Counter(
            a["benefit_option"]
            for d in bank["dilemmas"]
            for a in d["annotations"]
            if a["annotator"] == ann
        )
        assert got == raw


def test_no_texts_copied(bank):
    text = json.dumps(bank)
    for row in _rows("simple_dilemmas.csv"):
        for col in ("dilemma_situation", "action_1", "action_2", "negative_consequence_1"):
            assert row[col][:40] not in text
    for row in _rows("puzzled_dilemmas.csv")[:30]:
        assert row["puzzle"][:40] not in text


def test_find_dir_env_and_fallback(monkeypatch, tmp_path):
    monkeypatch.setenv("CUEGAP_MORAL_SAFETY_DIR", str(tmp_path / "nowhere"))
    assert find_moral_safety_dir() == tmp_path / "nowhere"
    monkeypatch.delenv("CUEGAP_MORAL_SAFETY_DIR")
    monkeypatch.chdir(tmp_path)
    found = find_moral_safety_dir()
    repo_candidate = Path(__file__).resolve().parents[1] / ".." / "shared/data/moral_safety"
    if repo_candidate.is_dir():
        assert found == repo_candidate.resolve()
    else:
        assert found is None
