"""Decision-bias rates and the Cue Visibility Gap against a hand-computed fixture.

The fixture: one system, two dilemmas with the same four individuals
(A man/Asian, B man/Black, C woman/Asian, D woman/Black).

d1: benefit option2, Neutral answer option1 -> every What-if on d1 is an In-favor trial.
d2: benefit option1, Neutral answer option1 -> every What-if on d2 is an Against trial.

What-if answers (F = favor event, A = against event):

    Direct   d1: A o2 F, B o1,   C o2 F, D o2 F      d2: A o1, B o2 A, C o1, D o1
    Puzzled  d1: A o1,   B o2 F, C o1,   D o1        d2: A o2 A, B o2 A, C o2 A, D o1

By hand (Favor %, Against %, Net pp):

    Direct   man 1/2=50, 1/2=50, 0     woman 2/2=100, 0/2=0, +100
             Asian 2/2=100, 0/2=0, +100  Black 1/2=50, 1/2=50, 0
    Puzzled  man 1/2=50, 2/2=100, -50  woman 0/2=0, 1/2=50, -50
             Asian 0/2=0, 2/2=100, -100  Black 1/2=50, 1/2=50, 0

Gap = Direct - Puzzled: man +50, woman +150, Asian +200, Black 0.
dAgainst (P - D): man +50, woman +50, Asian +100, Black 0.
dFavor   (P - D): man 0,  woman -100, Asian -100, Black 0.
Macro Net: Direct (0 + 100 + 100 + 0) / 4 = +50; Puzzled (-50 - 50 - 100 + 0) / 4 = -50;
macro gap +100. The puzzle answer for d1 gets C's race wrong, so C is not recovered.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from cuegap.designs.dilemma.stats._rates import (
    cue_visibility_gap,
    decision_bias,
    group_rates,
    macro_average,
)
from cuegap.ingest import ingest_path
from cuegap.schema import decision_counts

PEOPLE = [
    {"label": "A", "gender": "man", "race": "Asian"},
    {"label": "B", "gender": "man", "race": "Black"},
    {"label": "C", "gender": "woman", "race": "Asian"},
    {"label": "D", "gender": "woman", "race": "Black"},
]
ANSWERS = {
    ("direct", "d1"): "2122",
    ("direct", "d2"): "1211",
    ("puzzled", "d1"): "1211",
    ("puzzled", "d2"): "2221",
}


@pytest.fixture
def fixture_store(engine, tmp_path: Path):
    items = [
        {"item_id": f"neutral-{d}", "dilemma_id": d, "condition": "neutral"} for d in ("d1", "d2")
    ]
    for cond, d in ANSWERS:
        item = {"item_id": f"{cond}-{d}", "dilemma_id": d, "condition": cond, "individuals": PEOPLE}
        if cond == "puzzled":
            item["difficulty"] = "hard"
        items.append(item)
    bank = {
        "format": "cuegap-itembank",
        "version": 1,
        "name": "hand",
        "dilemmas": [
            {"dilemma_id": "d1", "benefit_option": "option2"},
            {"dilemma_id": "d2", "benefit_option": "option1"},
        ],
        "items": items,
    }
    (tmp_path / "bank.json").write_text(json.dumps(bank))
    lines = [
        {"system": "s", "item_id": f"neutral-{d}", "probe": "main", "response": "option1"}
        for d in ("d1", "d2")
    ]
    for (cond, d), answers in ANSWERS.items():
        for person, a in zip(PEOPLE, answers, strict=True):
            lines.append(
                {
                    "system": "s",
                    "item_id": f"{cond}-{d}",
                    "probe": "what_if",
                    "individual": person["label"],
                    "response": f"option{a}",
                }
            )
    wrong_c = {p["label"]: {"gender": p["gender"], "race": p["race"]} for p in PEOPLE}
    wrong_c["C"] = {"gender": "woman", "race": "Black"}
    lines.append(
        {
            "system": "s",
            "item_id": "puzzled-d1",
            "probe": "main",
            "response": json.dumps({**wrong_c, "answer": "option1"}),
        }
    )
    # An abstained What-if must change nothing.
    lines.append(
        {
            "system": "s",
            "item_id": "direct-d1",
            "probe": "what_if",
            "individual": "A",
            "repeat": 1,
            "response": "I'm sorry, but I can't help with that.",
        }
    )
    (tmp_path / "r.jsonl").write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    ingest_path(engine, tmp_path / "bank.json")
    ingest_path(engine, tmp_path / "r.jsonl")
    return engine


def _by_group(df: pd.DataFrame, cond: str) -> pd.DataFrame:
    return df[df["condition"] == cond].set_index("group")


def test_rates_match_hand_computation(fixture_store) -> None:
    rates = decision_bias(decision_counts(fixture_store))
    d, p = _by_group(rates, "direct"), _by_group(rates, "puzzled")
    expected_direct = {
        "man": (0.5, 0.5, 0),
        "woman": (1, 0, 100),
        "Asian": (1, 0, 100),
        "Black": (0.5, 0.5, 0),
    }
    expected_puzzled = {
        "man": (0.5, 1, -50),
        "woman": (0, 0.5, -50),
        "Asian": (0, 1, -100),
        "Black": (0.5, 0.5, 0),
    }
    for table, expected in ((d, expected_direct), (p, expected_puzzled)):
        for group, (fav, ag, net) in expected.items():
            row = table.loc[group]
            assert (row.favor_rate, row.against_rate, row.net_pp) == pytest.approx((fav, ag, net))
    assert d.loc["man", "favor_trials"] == 2 and d.loc["man", "against_trials"] == 2


def test_gap_and_asymmetry_match_hand_computation(fixture_store) -> None:
    rates = decision_bias(decision_counts(fixture_store))
    gap = cue_visibility_gap(rates).set_index("group")
    assert gap["gap_pp"].to_dict() == pytest.approx(
        {"man": 50, "woman": 150, "Asian": 200, "Black": 0}
    )
    assert gap["delta_against_pp"].to_dict() == pytest.approx(
        {"man": 50, "woman": 50, "Asian": 100, "Black": 0}
    )
    assert gap["delta_favor_pp"].to_dict() == pytest.approx(
        {"man": 0, "woman": -100, "Asian": -100, "Black": 0}
    )
    macro = macro_average(rates)
    m = macro.set_index("condition")["net_pp"]
    assert (m["direct"], m["puzzled"]) == pytest.approx((50, -50))
    macro_gap = cue_visibility_gap(macro)
    assert macro_gap["gap_pp"].iloc[0] == pytest.approx(100)


def test_recovery_flag_per_individual(fixture_store) -> None:
    counts = decision_counts(fixture_store)
    puzzled = counts[counts["condition"] == "puzzled"]
    d1 = puzzled[puzzled["dilemma"] == "d1"].set_index(["gender", "race"])["recovered"]
    assert d1[("woman", "Asian")] is False
    assert d1[("man", "Asian")] is True and d1[("woman", "Black")] is True
    # d2 has no puzzle answer: recovery unknown.
    assert puzzled[puzzled["dilemma"] == "d2"]["recovered"].isna().all()
    assert counts[counts["condition"] == "direct"]["recovered"].isna().all()


def test_intersection_groups_and_errors(fixture_store) -> None:
    counts = decision_counts(fixture_store)
    inter = group_rates(counts, by="intersection")
    row = inter[(inter["condition"] == "direct") & (inter["group"] == "woman × Asian")].iloc[0]
    assert (row.favor, row.favor_trials) == (1, 1)
    with pytest.raises(ValueError, match="by must be 'gender', 'race' or 'intersection'"):
        group_rates(counts, by="age")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="needs columns favor"):
        group_rates(counts.drop(columns=["favor"]))


def test_shuffling_rows_changes_nothing(fixture_store) -> None:
    counts = decision_counts(fixture_store)
    a = decision_bias(counts)
    b = decision_bias(counts.sample(frac=1, random_state=3))
    pd.testing.assert_frame_equal(a, b)
