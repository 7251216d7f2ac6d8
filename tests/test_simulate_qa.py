"""The QA simulator (``cuegap simulate --design qa``): a balanced bank and a truth file
whose figures follow the planting model (seed 001's Table 2 ranges, §5 reductions)."""

from __future__ import annotations

import json
from collections import Counter

import orjson
import pytest

from cuegap.designs.qa._simulate import STRATEGIES, simulate_qa
from cuegap.designs.qa._simulate_bank import qa_item_bank, stereotype_consistent_role


@pytest.fixture(scope="module")
def sim(tmp_path_factory):
    out = tmp_path_factory.mktemp("qasim")
    return simulate_qa(out, systems=3, templates_per_dimension=4, seed=7)


def test_bank_is_balanced_and_each_item_has_one_option_per_role():
    items = qa_item_bank(4, seed=1)
    assert len(items) == 6 * 4 * 16
    assert len({it["item_id"] for it in items}) == len(items)
    for it in items:
        assert sorted(o["role"] for o in it["options"]) == ["non_target", "target", "unknown"]
        gold = next(o["role"] for o in it["options"] if o["label"] == it["gold"])
        assert (gold == "unknown") == (it["context_condition"] == "ambiguous")
    # In disambiguated items of every cue and dimension, the gold answer is the
    # stereotype-consistent person in exactly half the items (so s_dis = 2β).
    tally = Counter()
    for it in items:
        if it["context_condition"] != "disambiguated":
            continue
        gold = next(o["role"] for o in it["options"] if o["label"] == it["gold"])
        key = (it["cue"], it["dimension"])
        tally[key] += 1 if gold == stereotype_consistent_role(it["polarity"]) else -1
    assert set(tally.values()) == {0}


def test_files_are_complete_and_seeded(sim, tmp_path):
    lines = sim.responses_path.read_bytes().splitlines()
    assert len(lines) == sim.n_responses == 3 * len(STRATEGIES) * sim.n_items
    rows = [orjson.loads(line) for line in lines[:50]]
    assert {"system", "item_id", "strategy", "model_output"} <= set(rows[0])
    again = simulate_qa(tmp_path, systems=3, templates_per_dimension=4, seed=7)
    assert again.responses_path.read_bytes() == sim.responses_path.read_bytes()
    other = simulate_qa(tmp_path / "o", systems=3, templates_per_dimension=4, seed=8)
    assert other.responses_path.read_bytes() != sim.responses_path.read_bytes()


def test_truth_follows_the_planting_model(sim):
    truth = json.loads(sim.truth_path.read_text())["systems"]
    assert [t["performative"] for t in truth.values()] == [True, True, False]
    for t in truth.values():
        cells = t["cells"]
        for c in cells:
            if c["context"] == "ambiguous":
                # Eq. 8: s_amb = (1 - acc_amb) * s_amb_raw, and |s_amb_raw| <= 1.
                assert c["s_amb"] == pytest.approx((1 - c["acc_amb"]) * c["s_amb_raw"])
                assert abs(c["s_amb_raw"]) <= 1
            else:
                assert 0 <= c["acc_dis"] <= 1 and abs(c["s_dis"]) <= 0.06 + 1e-12
        zero = {
            (c["cue"], c["dimension"]): c["s_amb"]
            for c in cells
            if c["strategy"] == "zero-shot" and c["context"] == "ambiguous"
        }
        for strategy, factor in STRATEGIES.items():
            for c in cells:
                if c["strategy"] == strategy and c["context"] == "ambiguous":
                    assert c["s_amb"] == pytest.approx(factor * zero[(c["cue"], c["dimension"])])
        if t["performative"]:
            # Table 2's zero-shot ranges: explicit bias 0.02-0.08, implicit 0.26-0.40,
            # shifted per dimension by N(0, 0.03).
            assert 0.1 < t["gap"]["s_amb"] < 0.45 and t["gap"]["acc_amb"] > 0.3
        else:
            assert t["gap"]["s_amb"] == 0 and t["gap"]["acc_amb"] == 0


def test_bad_scale_is_refused(tmp_path):
    with pytest.raises(ValueError, match="--scale"):
        simulate_qa(tmp_path, scale="huge")
