"""The prompt-variance design's store side: Difference-Awareness banks, prompt factors and
replicates on QA responses, and the SQL per-run count table.

Fixtures (tests/data/pv/, hand-written, invented sentences): ``bbq_bank.jsonl`` (cuegap
QA item bank: four BBQ-style items of category age, one per context x polarity, plus one
item ``x1`` whose target is unresolved), ``da_bank.jsonl`` (three Difference-Awareness
questions in the MAC-Fairness question schema: d1 different/gold A, d1 equal/gold C,
n2 different/gold B) and ``results.jsonl`` (18 answers under the factors choice_format
letter_paren / roman_dot and field_order answer_first, repeats 0 and 1). Every expected
count below is worked out by hand from those files (comments give the reasoning).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from conftest import DATA

import cuegap.designs.prompt_variance.stats as pv_stats
from cuegap.ingest import IngestError, detect_reader, ingest_path
from cuegap.ingest.diffaware import read as read_da
from cuegap.schema import pv_counts, pv_factor_names, qa_counts

PV = DATA / "pv"
NAN = math.nan
# BBQ columns: amb_biased, amb_anti, amb_unknown, amb_unparsable, dis_biased, dis_anti,
# dis_unknown, dis_unparsable. DA columns: neq_correct, neq_wrong, neq_equal,
# neq_unparsable, eq_group, eq_equal, eq_unparsable.
NO_DA = (NAN,) * 7
NO_BBQ = (NAN,) * 8
EXPECTED = {
    # a1 neg->A target = biased; a2 nonneg->A target = anti; d1 neg->A biased; d2 ->C unknown;
    # x1 (unresolved) left out.
    ("sys-a", "age", "letter_paren", 0): (1, 1, 0, 0, 1, 0, 1, 0, *NO_DA),
    # a1 ->C unknown; a2 refusal unparsable; d1 neg->B non-target = anti; d2 nonneg->A anti.
    ("sys-a", "age", "letter_paren", 1): (0, 0, 1, 1, 0, 2, 0, 0, *NO_DA),
    # a1 neg->B non-target = anti; a2 nonneg->B non-target = biased; no disambiguated answer.
    ("sys-a", "age", "roman_dot", 0): (1, 1, 0, 0, 0, 0, 0, 0, *NO_DA),
    # d1_1 (different, gold A) ->A correct; d1_2 (equal) ->B a group.
    ("sys-a", "d1", "letter_paren", 0): (*NO_BBQ, 1, 0, 0, 0, 1, 0, 0),
    # d1_1 ->C the equal option; d1_2 ->C equal.
    ("sys-a", "d1", "letter_paren", 1): (*NO_BBQ, 0, 0, 1, 0, 0, 1, 0),
    # n2_7 (different, gold B) ->A the wrong group.
    ("sys-a", "n2", "roman_dot", 0): (*NO_BBQ, 0, 1, 0, 0, 0, 0, 0),
    # n2_7 refusal.
    ("sys-a", "n2", "roman_dot", 1): (*NO_BBQ, 0, 0, 0, 1, 0, 0, 0),
    # a1 ->A biased.
    ("sys-b", "age", "letter_paren", 0): (1, 0, 0, 0, 0, 0, 0, 0, *NO_DA),
}


@pytest.fixture
def pv_store(engine):
    for name in ("bbq_bank.jsonl", "da_bank.jsonl"):
        ingest_path(engine, PV / name)
    summary = ingest_path(engine, PV / "results.jsonl")
    assert (summary.stored, summary.quarantined) == (18, 0)
    return engine


def test_da_reader_maps_splits_subsets_and_roles() -> None:
    assert detect_reader(PV / "da_bank.jsonl").name == "diffaware"
    bank = read_da(PV / "da_bank.jsonl")
    eq = bank["items"][1]
    assert (eq["dimension"], eq["subgroup"], eq["context_condition"], eq["gold_index"]) == (
        "d1",
        "descriptive",
        "equal",
        2,
    )
    assert [o["role"] for o in eq["options"]] == ["unresolved", "unresolved", "unknown"]
    assert bank["items"][2]["subgroup"] == "normative"
    assert bank["items"][2]["source_id"] == "diffAware_n2_7"


def _edited(tmp_path: Path, edit) -> Path:
    lines = (PV / "da_bank.jsonl").read_text().splitlines()
    obj = json.loads(lines[1])
    edit(obj)
    lines[1] = json.dumps(obj)
    path = tmp_path / "da.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda o: o.update(correct_answer_id="A"), "line 2: field 'correct_answer_id': 'A'"),
        (lambda o: o.update(correct_answer_id="Z"), "'correct_answer_id': 'Z' is not a choice"),
        (
            lambda o: o["source_metadata"]["additional_metadata"].update(split="same"),
            "line 2: field 'source_metadata.additional_metadata.split': got 'same'",
        ),
        (lambda o: o.update(question_id="diffAware_x9_2"), "line 2: field 'question_id'"),
        (lambda o: o["choices"].pop(), "line 2: field 'choices': expected 3"),
    ],
)
def test_bad_da_question_names_line_and_field(tmp_path: Path, edit, message: str) -> None:
    with pytest.raises(IngestError) as err:
        read_da(_edited(tmp_path, edit))
    assert message in str(err.value)
    assert str(tmp_path / "da.jsonl") in str(err.value)


def test_factor_names_only_varying_by_default(pv_store) -> None:
    assert pv_factor_names(pv_store) == ["choice_format"]
    assert pv_factor_names(pv_store, varying=False) == ["choice_format", "field_order", "strategy"]


def test_counts_per_run_by_hand(pv_store) -> None:
    got = pv_counts(pv_store)
    assert list(got.columns[:4]) == ["system", "category", "choice_format", "replicate"]
    counts = got.columns[4:]
    table = {
        tuple(row[:4]): tuple(float(v) for v in row[4:])
        for row in got.itertuples(index=False, name=None)
    }
    assert len(counts) == 15
    assert set(table) == set(EXPECTED)
    for key, want in EXPECTED.items():
        for col, g, w in zip(counts, table[key], want, strict=True):
            assert (math.isnan(g) and math.isnan(w)) or g == w, (key, col, g, w)


def test_declared_factors_and_cue_key(pv_store) -> None:
    got = pv_counts(pv_store, factors=["choice_format", "field_order"], keys=["system", "cue"])
    assert list(got.columns[:5]) == ["system", "cue", "choice_format", "field_order", "replicate"]
    assert set(got["field_order"]) == {"answer_first"}
    # sys-a letter_paren rep 0 across age and d1: BBQ 1+1+1+1 answers, DA 2.
    run = (got.system == "sys-a") & (got.choice_format == "letter_paren") & (got.replicate == 0)
    row = got[run]
    assert len(row) == 1
    assert row[["amb_biased", "amb_anti", "dis_biased", "dis_unknown"]].to_numpy().tolist() == [
        [1, 1, 1, 1]
    ]
    assert row[["neq_correct", "eq_group"]].to_numpy().tolist() == [[1, 1]]


def test_bad_keys_and_factor_clash(pv_store) -> None:
    with pytest.raises(ValueError, match="keys \\['model'\\] are not allowed"):
        pv_counts(pv_store, keys=["model"])
    with pytest.raises(ValueError, match="repeat a key"):
        pv_counts(pv_store, factors=["system"])


def test_counts_feed_pv_scores(pv_store) -> None:
    """s_bbq_dis of (sys-a, age, letter_paren, 1): dis biased 0, anti 2 -> 2*0/2 - 1 = -1;
    s_diffaware of (sys-a, d1, letter_paren, 0): A / (A+B+C) = 1/1; s_ctxtaware there:
    A / (A + D+E) = 1 / 2."""
    scores = pv_stats.pv_scores(pv_counts(pv_store), factors=["choice_format"])
    pick = scores.set_index(["system", "category", "choice_format", "replicate", "metric"])
    assert pick.loc[("sys-a", "age", "letter_paren", 1, "s_bbq_dis"), "score"] == -1.0
    assert pick.loc[("sys-a", "d1", "letter_paren", 0, "s_diffaware"), "score"] == 1.0
    assert pick.loc[("sys-a", "d1", "letter_paren", 0, "s_ctxtaware"), "score"] == 0.5
    assert not (scores["category"].isin(["d1", "n2"]) & scores["metric"].str.startswith("s_bbq"))[
        scores["score"].notna()
    ].any()


def test_da_items_stay_out_of_the_qa_counts(pv_store) -> None:
    qa = qa_counts(pv_store)
    assert not qa.empty
    assert set(qa["context"]) == {"ambiguous", "disambiguated"}
    assert set(qa["dimension"]) == {"age"}


def test_empty_store_gives_empty_table(engine) -> None:
    got = pv_counts(engine, factors=["choice_format"])
    assert got.empty and "neq_correct" in got.columns and "replicate" in got.columns


SHARED_DA = DATA.parents[2] / "shared" / "data" / "mac_fairness" / "DifferenceAwareness" / "sampled"


@pytest.mark.skipif(not SHARED_DA.is_dir(), reason="../shared's Difference-Awareness sample absent")
def test_real_da_sample_reads_whole() -> None:
    """The published sample (8 files x 250): every question reads; the equal-split counts
    per subset were counted from the files' ``split`` fields with a one-off script."""
    equal = {"d1": 121, "d2": 134, "d3": 123, "d4": 123, "n1": 123, "n2": 132, "n3": 122, "n4": 132}
    for sub, n_equal in equal.items():
        bank = read_da(SHARED_DA / f"diffAware_{sub}_sampled.jsonl")
        assert len(bank["items"]) == 250
        assert {it["dimension"] for it in bank["items"]} == {sub}
        assert sum(it["context_condition"] == "equal" for it in bank["items"]) == n_equal
