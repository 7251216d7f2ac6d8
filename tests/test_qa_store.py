"""The QA design's store side: BBQ banks and results in, the SQL count table out.

Fixtures (tests/data/qa/): ``bbq_small.jsonl`` (11 BBQ items: ids, categories, labels and
groups taken from the BBQ sample's metadata, sentences invented), ``mac_religion.jsonl``
(3 MAC-Fairness questions, invented sentences) and ``bbq_results.jsonl`` (28 lines:
21 answers to store, 1 exact repeat, 6 to quarantine). Every expected value below was
worked out by hand from those files.
"""

from __future__ import annotations

import math

import pytest
from conftest import DATA
from sqlalchemy import text

import cuegap.designs.qa.stats as qa_stats
from cuegap.compliance import verify
from cuegap.designs import designs_in_store, resolve_design
from cuegap.ingest import detect_reader, ingest_path
from cuegap.schema import QA_COUNT_COLUMNS, qa_counts

QA = DATA / "qa"
NAT = "Vietnamese/Thai/Indonesian/Burmese/Japanese/Korean/Chinese/Indian/Pakistani"
RXS = "Black/African American/Latino/Hispanic"
CTX = {"amb": "ambiguous", "dis": "disambiguated"}
POL = {"neg": "negative", "non": "nonneg"}


def _row(system, strategy, ctx, dim, sub, pol, gold, answer, template, n):
    """A count row; every BBQ cue is explicit."""
    return (system, strategy, "explicit", CTX[ctx], dim, sub, POL[pol], gold, answer, template, n)


T, NT, U, X = "target", "non_target", "unknown", "unparsable"
GI = "gender_identity"
# (system, strategy, context, dimension, subgroup, polarity, gold, answer, template, n)
EXPECTED = {
    _row("sys-a", "zero-shot", "amb", "age", "nonOld", "neg", U, U, "age-q25", 1),
    _row("sys-a", "zero-shot", "amb", "age", "nonOld", "neg", U, T, "age-q25", 2),
    _row("sys-a", "zero-shot", "amb", "age", "nonOld", "neg", U, X, "age-q25", 1),
    _row("sys-a", "zero-shot", "amb", "age", "old", "non", U, NT, "age-q12", 1),
    _row("sys-a", "zero-shot", "amb", "age", "old", "non", U, U, "age-q12", 2),
    _row("sys-a", "zero-shot", "dis", "age", "old", "neg", NT, NT, "age-q8", 1),
    _row("sys-a", "zero-shot", "dis", "age", "old", "neg", NT, T, "age-q8", 1),
    _row("sys-a", "zero-shot", "dis", "age", "old", "neg", NT, U, "age-q8", 1),
    _row("sys-a", "zero-shot", "dis", "age", "old", "non", NT, NT, "age-q20", 1),
    _row("sys-a", "cot", "amb", "age", "nonOld", "neg", U, U, "age-q25", 1),
    _row("sys-a", "cot", "amb", "age", "old", "non", U, U, "age-q12", 1),
    _row("sys-b", "zero-shot", "amb", GI, "F", "neg", U, T, "gender_identity-q50", 1),
    _row("sys-b", "zero-shot", "amb", GI, "F", "neg", U, U, "gender_identity-q50", 1),
    _row("sys-b", "zero-shot", "dis", "ses", "low SES", "neg", NT, NT, "ses-q23", 1),
    _row("sys-b", "zero-shot", "dis", "nationality", NAT, "neg", T, T, "nationality-q19", 1),
    _row("sys-b", "zero-shot", "dis", "race_x_ses", RXS, "neg", T, T, "race_x_ses-q7", 1),
    _row("sys-b", "zero-shot", "amb", "religion", "Christian", "non", U, U, "religion-q6", 1),
    _row("sys-b", "zero-shot", "dis", "religion", "Jewish", "non", T, T, "religion-q14", 1),
    # Issue 27: race_x_gender-8065 has no target (both people Latino; BBQ does not say
    # which gender the stereotype is about). Its answer (index 2, the gold) used to be left
    # out; it now counts, in accuracy only, as the item's gold person.
    _row(
        "sys-b",
        "zero-shot",
        "dis",
        "race_x_gender",
        "Hispanic/Latino",
        "neg",
        "untargeted",
        "untargeted",
        "race_x_gender-q24",
        1,
    ),
}


@pytest.fixture
def qa_store(engine):
    ingest_path(engine, QA / "bbq_small.jsonl")
    ingest_path(engine, QA / "mac_religion.jsonl")
    summary = ingest_path(engine, QA / "bbq_results.jsonl")
    return engine, summary


def test_formats_are_detected() -> None:
    assert detect_reader(QA / "bbq_small.jsonl").name == "bbq"
    assert detect_reader(QA / "mac_religion.jsonl").name == "bbq"
    assert detect_reader(QA / "bbq_results.jsonl").name == "bbq-results"


def _roles(engine, bank: str) -> dict[str, list[str]]:
    with engine.connect() as conn:
        rows = conn.execute(
            text(
                "SELECT i.item_key, o.role FROM qa_option o JOIN qa_item i ON i.id = o.item_id "
                "JOIN item_bank b ON b.id = i.bank_id WHERE b.name = :b "
                "ORDER BY i.item_key, o.option_index"
            ),
            {"b": bank},
        ).all()
    out: dict[str, list[str]] = {}
    for key, role in rows:
        out.setdefault(key, []).append(role)
    return out


def test_bbq_bank_roles(engine) -> None:
    s = ingest_path(engine, QA / "bbq_small.jsonl")
    assert (s.read, s.stored) == (11, 11)
    assert "1 items without a target (counted in accuracy, not in bias scores)" in (s.note or "")
    t, n, u, x = "target", "non_target", "unknown", "unresolved"
    assert _roles(engine, "bbq_small") == {
        "age-3396": [n, t, u],  # stereotyped nonOld: the student
        "age-994": [n, u, t],
        "age-573": [u, t, n],
        "age-2147": [n, u, t],
        "gender_identity-5640": [t, n, u],  # F
        "gender_identity-5323": [t, u, n],  # M
        "ses-604": [u, t, n],  # "low SES" = lowSES
        "ses-6625": [t, n, u],
        "nationality-2209": [u, n, t],  # by the option's nationality, not its region
        "race_x_gender-8065": [u, x, x],  # same race, genders differ: not resolvable
        "race_x_ses-3697": [t, n, u],  # same race: the low-SES option
    }
    again = ingest_path(engine, QA / "bbq_small.jsonl")
    assert (again.stored, again.duplicate) == (0, 11)
    with engine.connect() as conn:
        axes = conn.execute(
            text(
                "SELECT a.axis, a.value FROM qa_option_axis a "
                "JOIN qa_option o ON o.id = a.option_id JOIN qa_item i ON i.id = o.item_id "
                "WHERE i.item_key = 'age-573' "
                "ORDER BY o.option_index"
            )
        ).all()
    assert [tuple(r) for r in axes] == [("age", "old"), ("age", "nonOld")]


def test_mac_bank_keeps_question_ids_and_gold(engine) -> None:
    ingest_path(engine, QA / "mac_religion.jsonl")
    with engine.connect() as conn:
        rows = conn.execute(
            text(
                "SELECT item_key, source_id, gold_index, context_condition FROM qa_item ORDER BY id"
            )
        ).all()
    assert [tuple(r) for r in rows] == [
        ("religion-671", "bbq_religion_671", 0, "disambiguated"),
        ("religion-282", "bbq_religion_282", 1, "ambiguous"),
        ("religion-359", "bbq_religion_359", 0, "disambiguated"),
    ]
    assert _roles(engine, "mac_religion")["religion-359"] == ["non_target", "unknown", "target"]


def test_results_are_accounted_for_line_by_line(qa_store) -> None:
    engine, s = qa_store
    assert (s.read, s.stored, s.duplicate, s.quarantined) == (28, 21, 1, 6)
    with engine.connect() as conn:
        reasons = dict(
            conn.execute(text("SELECT line_no, reason FROM quarantine ORDER BY line_no")).all()
        )
        unparsable = conn.execute(
            text("SELECT raw_text, parse_reason FROM qa_response WHERE answer = 'unparsable'")
        ).all()
        factors = conn.execute(
            text(
                "SELECT name, value, COUNT(*) FROM qa_response_factor "
                "GROUP BY name, value ORDER BY name, value"
            )
        ).all()
    assert sorted(reasons) == [22, 23, 24, 25, 26, 28]
    assert "no item for BBQ example '99999'" in reasons[22]
    assert "disagrees with the item bank's gold" in reasons[23]
    assert "not valid JSON" in reasons[24]
    assert "no system" in reasons[25]
    assert "conflicts with line 7 of the same file" in reasons[26]
    assert "predicted_index 5 is not an option" in reasons[28]
    assert [tuple(r) for r in unparsable] == [("The weather is fine.", "names no option")]
    assert [tuple(r) for r in factors] == [
        ("choice_format", "letter_paren", 1),
        ("strategy", "cot", 2),
        ("strategy", "zero-shot", 19),
    ]
    again = ingest_path(engine, QA / "bbq_results.jsonl")
    assert (again.read, again.stored, again.duplicate, again.quarantined) == (28, 0, 22, 6)
    assert verify(engine).ok


def test_qa_counts_by_hand(qa_store) -> None:
    engine, _ = qa_store
    counts = qa_counts(engine)
    assert list(counts.columns) == list(QA_COUNT_COLUMNS)
    assert str(counts["n"].dtype) == "int64"
    assert set(counts.itertuples(index=False, name=None)) == EXPECTED
    assert len(counts) == len(EXPECTED)


def test_scores_from_the_store_by_hand(qa_store) -> None:
    engine, _ = qa_store
    scores = qa_stats.qa_scores(qa_counts(engine)).set_index(
        ["system", "strategy", "cue", "context", "dimension"]
    )
    amb = scores.loc[("sys-a", "zero-shot", "explicit", "ambiguous", "age")]
    # 7 answers, 1 unparsable; of 6 parsable 3 unknown; stereotyped: 2 targets to the
    # negative question + 1 non-target to the non-negative one; no anti-stereotyped.
    assert (amb["n"], amb["n_unparsable"]) == (7, 1)
    assert amb["acc_amb"] == pytest.approx(3 / 6)
    assert amb["s_amb_raw"] == pytest.approx(2 * 3 / 3 - 1)
    assert amb["s_amb"] == pytest.approx((3 - 0) / 6)
    dis = scores.loc[("sys-a", "zero-shot", "explicit", "disambiguated", "age")]
    # 4 parsable answers; 3 non-unknown, 2 of them correct; stereotyped: the target to the
    # negative question, the non-target to the non-negative one.
    assert dis["acc_dis"] == pytest.approx(2 / 3)
    assert dis["acc_dis_bbq"] == pytest.approx(2 / 4)
    assert dis["s_dis"] == pytest.approx(2 * 2 / 3 - 1)
    cot = scores.loc[("sys-a", "cot", "explicit", "ambiguous", "age")]
    assert (cot["acc_amb"], cot["s_amb"]) == (1.0, 0.0)
    assert math.isnan(cot["s_amb_raw"])
    gender = scores.loc[("sys-b", "zero-shot", "explicit", "ambiguous", "gender_identity")]
    assert (gender["acc_amb"], gender["s_amb_raw"], gender["s_amb"]) == (0.5, 1.0, 0.5)


def test_the_store_says_it_holds_qa(qa_store, tiny_bank) -> None:
    engine, _ = qa_store
    assert designs_in_store(engine) == ["qa"]
    assert resolve_design(engine, None) == "qa"
    ingest_path(engine, tiny_bank)
    ingest_path(engine, DATA / "tiny_responses.jsonl")
    assert designs_in_store(engine) == ["dilemma", "qa"]
    with pytest.raises(ValueError, match="several designs"):
        resolve_design(engine, None)
    assert resolve_design(engine, "qa") == "qa"


def test_results_before_their_bank_are_quarantined_then_resolved(engine) -> None:
    first = ingest_path(engine, QA / "implicit_results.jsonl")
    assert (first.read, first.stored, first.quarantined) == (13, 0, 13)
    assert "unknown QA item bank 'implicit-mini'" in first.problems[0][1]
    ingest_path(engine, QA / "implicit_bank.jsonl")
    second = ingest_path(engine, QA / "implicit_results.jsonl")
    assert (second.read, second.stored, second.quarantined) == (13, 13, 0)
    with engine.connect() as conn:
        open_ = conn.execute(
            text("SELECT COUNT(*) FROM quarantine WHERE resolved_at IS NULL")
        ).scalar()
    assert open_ == 0
    result = verify(engine)
    assert result.ok, result.problems
