"""BBQ's own ``target_loc`` (``additional_metadata.csv``) sets an item's target (issue 27).

The CSV is written here in the published layout: the columns of nyu-mll/BBQ's
``supplemental/additional_metadata.csv`` as its README lists them and as
``analysis_scripts/BBQ_results_metadata.R`` writes them (``category, question_index,
example_id, target_loc, label_type, Known_stereotyped_race, Known_stereotyped_var2,
Relevant_social_values, corr_ans_aligns_var2, corr_ans_aligns_race, full_cond,
Known_stereotyped_groups``; R writes a missing value as ``NA``). The items are the BBQ
fixture's six Gender_identity items (``tests/fixtures/bbq_family/BBQ``): options 0 the
woman (or girl), 1 unknown, 2 the man (or woman); stereotyped group F.

cuegap's derivation makes option 0 the target of examples 0 to 3 and gives examples 4 and
5 (a girl and a woman) no target. The CSV here differs on three items: example 0
(target_loc 2), example 3 (target_loc 2) and example 4 (target_loc 0).

Answers (one system, option indices, by hand):

* ambiguous: example 0 (negative) 0, 0, 2, 1; example 2 (non-negative) 0, 2; example 4
  (negative) 0, 2.
  - derived: st = 2 (ex 0: the woman) + 1 (ex 2: the man, the non-target) = 3,
    anti = 1 + 1 = 2; example 4 has no target, so the parsable answers outside it are
    8 - 2 = 6: S_amb = (3 - 2) / 6 = 1/6.
  - target_loc: st = 1 (ex 0: the man) + 1 (ex 2) + 1 (ex 4: the girl) = 3,
    anti = 2 + 1 + 1 = 4, all 8 answers targeted: S_amb = (3 - 4) / 8 = -1/8.
* disambiguated: example 1 (negative, gold the man) 2, 0, 0; example 3 (non-negative, gold
  the woman) 0, 0, 2; example 5 (no target either way) 0.
  - derived: st = 2 (ex 1: the woman) + 1 (ex 3: the man) = 3, anti = 1 + 2 = 3:
    S_dis = 2 * 3 / 6 - 1 = 0.
  - target_loc: st = 2 + 2 (ex 3: the woman, now the non-target) = 4, anti = 1 + 1 = 2:
    S_dis = 2 * 4 / 6 - 1 = 1/3.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from sqlalchemy import text

from cuegap.designs.qa._analysis import QASettings, analyze_qa
from cuegap.designs.qa._report import build_qa_report
from cuegap.designs.qa.stats import qa_scores
from cuegap.ingest import IngestError, ingest_path
from cuegap.reports import render_html
from cuegap.schema import make_engine, qa_counts, upgrade

FIX = Path(__file__).parent / "fixtures" / "bbq_family"
HEADER = (
    "category,question_index,example_id,target_loc,label_type,Known_stereotyped_race,"
    "Known_stereotyped_var2,Relevant_social_values,corr_ans_aligns_var2,corr_ans_aligns_race,"
    "full_cond,Known_stereotyped_groups"
)
TARGET_LOC = {0: "2", 1: "0", 2: "0", 3: "2", 4: "0", 5: "NA"}
ANSWERS = {0: [0, 0, 2, 1], 2: [0, 2], 4: [0, 2], 1: [2, 0, 0], 3: [0, 0, 2], 5: [0]}


def _repo(tmp_path: Path, *, csv: bool, where: str = "supplemental") -> Path:
    repo = tmp_path / "BBQ"
    (repo / "data").mkdir(parents=True)
    shutil.copy(FIX / "BBQ" / "data" / "Gender_identity.jsonl", repo / "data")
    if csv:
        rows = [
            f'"Gender_identity","{1 + ex // 4}",{ex},{loc},"label",NA,NA,"fixture",NA,NA,NA,"F"'
            for ex, loc in TARGET_LOC.items()
        ]
        (repo / where).mkdir(exist_ok=True)
        (repo / where / "additional_metadata.csv").write_text(
            HEADER + "\n" + "\n".join(rows) + "\n", encoding="utf-8"
        )
    return repo


def _results(tmp_path: Path) -> Path:
    path = tmp_path / "results.jsonl"
    lines = [
        {"system": "s", "category": "Gender_identity", "example_id": ex,
         "predicted_index": i, "repeat": k}
        for ex, picks in ANSWERS.items()
        for k, i in enumerate(picks)
    ]  # fmt: skip
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    return path


def _scores(engine) -> dict[str, float]:
    s = qa_scores(qa_counts(engine)).set_index(["cue", "context"])
    return {
        "s_amb": float(s.loc[("explicit", "ambiguous"), "s_amb"]),
        "s_dis": float(s.loc[("explicit", "disambiguated"), "s_dis"]),
    }


def test_without_the_file_the_derivation_stands(tmp_path: Path) -> None:
    eng = make_engine(f"sqlite:///{tmp_path / 'base.db'}")
    upgrade(eng)
    bank = ingest_path(eng, _repo(tmp_path, csv=False) / "data" / "Gender_identity.jsonl")
    assert "target_loc" not in (bank.note or "")
    ingest_path(eng, _results(tmp_path))
    assert _scores(eng) == pytest.approx({"s_amb": 1 / 6, "s_dis": 0.0})


def test_target_loc_sets_the_target_and_differences_are_shown(engine, tmp_path: Path) -> None:
    repo = _repo(tmp_path, csv=True)
    bank = ingest_path(engine, repo / "data" / "Gender_identity.jsonl")
    assert "target_loc from additional_metadata.csv for 6 items, 3 of them differing" in (
        bank.note or ""
    )
    s = ingest_path(engine, _results(tmp_path))
    assert (s.read, s.stored) == (15, 15)
    assert _scores(engine) == pytest.approx({"s_amb": -1 / 8, "s_dis": 1 / 3})
    # The implicit item takes its BBQ original's target (example 0: option 2, the man).
    ingest_path(engine, FIX / "ImplicitBBQ" / "data" / "Gender_identity.jsonl")
    with engine.connect() as conn:
        roles = (
            conn.execute(
                text(
                    "SELECT o.role FROM qa_option o JOIN qa_item i ON i.id = o.item_id "
                    "WHERE i.item_key = 'gender_identity-0' AND i.cue = 'implicit' "
                    "ORDER BY o.option_index"
                )
            )
            .scalars()
            .all()
        )
    assert roles == ["non_target", "unknown", "target"]

    result = analyze_qa(engine, QASettings(n_boot=20, seed=1))
    table = result.tables["qa_target_loc"]
    got = {(r.cue, r.status): (r.items, r.answers) for r in table.itertuples()}
    # explicit: examples 0, 3 and 4, with 4 + 3 + 2 answers; implicit: the same three
    # (the ImplicitBBQ fixture joins examples 0 to 4), not answered here
    assert got == {("explicit", "differs"): (3, 9), ("implicit", "differs"): (3, 0)}
    html = render_html(build_qa_report(engine)).html
    section = html.split('id="qa-target-loc"', 1)[1].split("</table>", 1)[0]
    assert "target_loc used" in section and '<td class="num">9</td>' in section


def test_older_clones_keep_the_file_in_analysis_scripts(engine, tmp_path: Path) -> None:
    repo = _repo(tmp_path, csv=True, where="analysis_scripts")
    bank = ingest_path(engine, repo / "data" / "Gender_identity.jsonl")
    assert "3 of them differing" in (bank.note or "")


def test_an_unreadable_target_loc_names_file_line_and_field(engine, tmp_path: Path) -> None:
    repo = _repo(tmp_path, csv=True)
    csv = repo / "supplemental" / "additional_metadata.csv"
    csv.write_text(csv.read_text().replace(",3,2,", ",3,left,"), encoding="utf-8")
    with pytest.raises(IngestError) as err:
        ingest_path(engine, repo / "data" / "Gender_identity.jsonl")
    message = str(err.value)
    assert "additional_metadata.csv: line 5: field 'target_loc': 'left'" in message
    assert "\n" not in message
