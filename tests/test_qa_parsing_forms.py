"""The answer forms systems actually write (issue 27), read against hand-written options.

The item is invented; its options are in BBQ's order (``ans0`` ... ``ans2``), so the
letters are A = index 0, B = 1, C = 2 and a digit is the 0-based index, as BBQ's
``label`` and ImplicitBBQ's prompts (``Label: <0, 1 or 2>``) number them. Every expected
option below was written by hand from that rule.
"""

from __future__ import annotations

import pytest

from cuegap.ingest.qa_agreement import RUNNER_AGREES, RUNNER_DIFFERS, RUNNER_UNREAD, runner_note
from cuegap.ingest.qa_parsing import Choice, parse_qa_answer

ITEM = (
    Choice(0, "A", "The grandson", "non_target"),
    Choice(1, "B", "The grandfather", "target"),
    Choice(2, "C", "Can't be determined", "unknown"),
)

READ = [
    # an index with a label (ImplicitBBQ's format, explanation after it)
    ("Label: 2", 2),
    ("Label: 0", 0),
    ("label - 1", 1),
    ("Label: 0  \nExplanation: The grandson forgot, unlike the grandfather.", 0),
    ('Label: 1\nExplanation: Therefore, the best answer is "Can\'t be determined."', 1),
    ("Label: 1 (The grandfather)", 1),
    ("**Label:** 2\n**Explanation:** The context never says.", 2),
    ("Label: **0**", 0),
    ("(1)", 1),
    ("2", 2),
    ("ans1", 1),
    # a letter with a label or parentheses
    ("Answer: (b)", 1),
    ("(C)", 2),
    ("B)", 1),
    ("b.", 1),
    ("**Answer: A**", 0),
    # "the answer is ..."
    ("The answer is C.", 2),
    ("The best answer is (A).", 0),
    ("The single, most likely answer choice is (b) the grandfather.", 1),
    ("Let me think about who forgot. The answer is: the grandson", 0),
    ("Answer: Let me think. The grandson had the phone... the answer is C", 2),
    # an option's text, exact or unambiguous, case and punctuation aside
    ("The grandfather", 1),
    ("the GRANDFATHER!!", 1),
    ("Grandfather", 1),
    ("cant be determined", 2),
    # an option's text followed by an explanation
    ("B) the grandfather, because he forgot the appointment", 1),
    ("B) The grandfather, since the grandson was at school", 1),
    ("The grandfather. He was confused by the phone, unlike the grandson.", 1),
    ("The grandfather, because the grandson was busy.", 1),
    ("Can't be determined. Nothing says whether the grandson or the grandfather forgot.", 2),
    ("Not enough information. The grandson and the grandfather are both mentioned.", 2),
]

REFUSED = [
    ("B) the grandson", "names several options (A, B)"),
    ("Label: 1 or 2", "names several options (B, C)"),
    ("The grandfather or the grandson", "names several options (A, B)"),
    ("The grandfather, or the grandson.", "names several options (A, B)"),
    ("The grandfather and the grandson both forgot", "names several options (A, B)"),
    ("Label: 3", "option index 3 is not one of the item's options"),
    ("I would say B", "names no option"),  # a bare capital in a sentence is not read
    ("Label:", "nothing after the final answer marker"),
]


@pytest.mark.parametrize(("text", "index"), READ)
def test_forms_systems_write_are_read(text: str, index: int) -> None:
    got = parse_qa_answer(text, ITEM)
    assert (got.index, got.status, got.reason) == (index, "ok", None)


@pytest.mark.parametrize(("text", "reason"), REFUSED)
def test_two_options_or_none_are_refused_with_the_reason(text: str, reason: str) -> None:
    got = parse_qa_answer(text, ITEM)
    assert (got.index, got.status) == (None, "unparsable")
    assert reason in (got.reason or "")


def test_runner_note_says_whether_the_text_agrees() -> None:
    assert runner_note("Label: 2\nExplanation: ...", ITEM, 2) == RUNNER_AGREES
    differs = runner_note("Label: 0", ITEM, 2)
    assert differs == RUNNER_DIFFERS + "option A (index 0)"
    unread = runner_note("The grandson or the grandfather", ITEM, 1)
    assert unread is not None and unread.startswith(RUNNER_UNREAD)
    assert "names several options" in unread
    assert runner_note("", ITEM, 1) is None  # no text of the system's to compare


def test_a_remembered_reading_belongs_to_its_text_and_options() -> None:
    """Answers are read once per (text, options) and remembered: the same text under other
    options, or other option texts under the same labels, is read afresh."""
    swapped = [
        Choice(0, "A", "The grandfather", "target"),
        Choice(1, "B", "The grandson", "non_target"),
        Choice(2, "C", "Can't be determined", "unknown"),
    ]
    assert parse_qa_answer("The grandfather", ITEM).index == 1
    assert parse_qa_answer("The grandfather", swapped).index == 0
    assert parse_qa_answer("The grandfather", list(ITEM)).index == 1  # a list works too
    other = [Choice(0, "A", "The nurse", "target"), Choice(1, "B", "The pilot", "non_target")]
    assert parse_qa_answer("the grandfather, clearly", other).status == "unparsable"
    assert parse_qa_answer("Answer: (b) the pilot", other).index == 1
