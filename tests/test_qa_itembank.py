"""cuegap's own QA item-bank format (ImplicitBBQ style) and the explicit-implicit gap from
the store, against values worked out by hand from tests/data/qa/implicit_*.jsonl."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import DATA

import cuegap.designs.qa.stats as qa_stats
from cuegap.ingest import IngestError, detect_reader, ingest_path
from cuegap.ingest.qa_itembank import read
from cuegap.schema import qa_counts

QA = DATA / "qa"


def test_reader_is_detected_and_reads_the_bank() -> None:
    assert detect_reader(QA / "implicit_bank.jsonl").name == "cuegap-qa-itembank"
    bank = read(QA / "implicit_bank.jsonl")
    assert bank["name"] == "implicit-mini" and len(bank["items"]) == 5
    implicit = bank["items"][1]
    assert (implicit["cue"], implicit["gold_index"], implicit["template_id"]) == (
        "implicit",
        2,
        "caste-t1",
    )
    assert implicit["cue_texts"] == {"target": "Rao", "non_target": "Sharma"}
    assert implicit["options"][0]["axes"] == {"caste": "Dalit"}


def _bank(tmp_path: Path, edit) -> Path:
    lines = (QA / "implicit_bank.jsonl").read_text().splitlines()
    item = json.loads(lines[2])
    edit(item)
    lines[2] = json.dumps(item)
    path = tmp_path / "bank.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda it: it.update(cue="hinted"), "line 3: cue: 'hinted' is not one of"),
        (lambda it: it.pop("question"), "line 3: (top level): 'question' is a required"),
        (lambda it: it.update(gold="D"), "line 3: field 'gold': 'D' is not one of"),
        (lambda it: it["options"][0].update(role="victim"), "line 3: options[0].role"),
    ],
)
def test_invalid_items_name_line_and_field(tmp_path: Path, edit, message: str) -> None:
    with pytest.raises(IngestError) as err:
        read(_bank(tmp_path, edit))
    assert message in str(err.value)


def test_ambiguous_item_needs_the_unknown_gold(engine, tmp_path: Path) -> None:
    path = _bank(tmp_path, lambda it: it.update(gold="A"))  # an ambiguous item
    with pytest.raises(IngestError, match="ambiguous item's gold option must be the unknown"):
        ingest_path(engine, path)


def test_cue_gap_from_the_store_by_hand(engine) -> None:
    ingest_path(engine, QA / "implicit_bank.jsonl")
    s = ingest_path(engine, QA / "implicit_results.jsonl")
    assert (s.read, s.stored, s.duplicate, s.quarantined) == (13, 13, 0, 0)
    scores = qa_stats.qa_scores(qa_counts(engine))
    gap = qa_stats.qa_cue_gap(scores).set_index(["context", "metric"])
    # Ambiguous: explicit C,C,C,A -> acc 3/4, s_amb (1-0)/4; implicit A,A,A,C -> acc 1/4,
    # s_amb 3/4. Accuracy gap explicit - implicit, bias gap implicit - explicit: both +1/2.
    assert gap.loc[("ambiguous", "acc_amb"), "gap"] == pytest.approx(0.75 - 0.25)
    assert gap.loc[("ambiguous", "s_amb"), "gap"] == pytest.approx(0.75 - 0.25)
    assert gap.loc[("ambiguous", "s_amb_raw"), "gap"] == pytest.approx(1.0 - 1.0)
    # Disambiguated (gold B, non-target): explicit B,B -> acc 1, s_dis -1 (both
    # anti-stereotyped); implicit A,B -> acc 1/2, s_dis 0.
    assert gap.loc[("disambiguated", "acc_dis"), "gap"] == pytest.approx(1 - 0.5)
    assert gap.loc[("disambiguated", "s_dis"), "gap"] == pytest.approx(0 - (-1))
    controls = qa_stats.qa_controls(qa_stats.qa_system_scores(scores))
    none = controls[controls["cue"] == "control_none"]
    assert none["acc_amb"].tolist() == [1.0]
