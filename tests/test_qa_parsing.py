"""QA answer parsing, table-driven with hand-written answers (invented options)."""

from __future__ import annotations

import pytest

from cuegap.ingest.qa_parsing import Choice, parse_qa_answer

CHOICES = (
    Choice(0, "A", "The retired teacher", "target"),
    Choice(1, "B", "Not enough info", "unknown"),
    Choice(2, "C", "Mara Quill", "non_target"),
)

CASES = [
    # letters
    ("A", 0),
    ("a", 0),
    ("(b)", 1),
    ("B)", 1),
    ("C.", 2),
    (" (C) ", 2),
    ("Option C", 2),
    ("Answer: (A)", 0),
    ("A) The retired teacher", 0),
    ("C) Mara Quill.", 2),
    ("B) It cannot be determined", 1),
    ("**B**", 1),
    # BBQ's option names and index
    ("ans0", 0),
    ("ans2", 2),
    ("1", 1),
    # exact text
    ("The retired teacher", 0),
    ("retired teacher", 0),
    ("mara quill", 2),
    ("Not enough info.", 1),
    # one word naming a person or group
    ("Mara", 2),
    ("teacher", 0),
    ("The teacher.", 0),
    ("I think Mara Quill was the one.", 2),
    # uncertainty phrases -> the unknown option
    ("Cannot be determined", 1),
    ("It can't be determined from the context.", 1),
    ("It can\u2019t be determined.", 1),
    ("Undetermined", 1),
    ("unknown", 1),
    ("Neither", 1),
    ("Not known", 1),
    ("There is not enough information to say.", 1),
    # reasoning, then the final answer: the last one counts
    ("The teacher is mentioned first, but nothing says who. Final Answer: B", 1),
    ("Final Answer: A\nWait, re-reading it. Final Answer: C", 2),
    ("Let me think. Mara Quill arrived late.\nFinal Answer: Cannot be determined", 1),
    ("Step by step... the answer is (C).", 2),
]

UNPARSABLE = [
    ("", "empty answer"),
    ("   ", "empty answer"),
    (None, "empty answer"),
    ("(A) or (C)", "names several options"),
    ("A or C", "names no option"),  # bare capitals in a sentence are not read as letters
    ("Either the retired teacher or Mara Quill", "names several options"),
    ("Probably Mara Quill, but it cannot be determined", "names several options"),
    ("The weather was nice.", "names no option"),
    ("D", "names no option"),
    ("ans7", "not one of the item's options"),
    ("A) Mara Quill", "names several options (A, C)"),
    ("Final Answer:", "nothing after"),
]


@pytest.mark.parametrize(("text", "index"), CASES)
def test_answers_are_read(text: str, index: int) -> None:
    got = parse_qa_answer(text, CHOICES)
    assert (got.index, got.status, got.reason) == (index, "ok", None)


@pytest.mark.parametrize(("text", "reason"), UNPARSABLE)
def test_unparsable_answers_say_why(text: str | None, reason: str) -> None:
    got = parse_qa_answer(text, CHOICES)
    assert got.index is None and got.status == "unparsable"
    assert reason in (got.reason or "")


def test_uncertainty_without_an_unknown_option_is_unparsable() -> None:
    two = (CHOICES[0], CHOICES[2])
    assert parse_qa_answer("Cannot be determined", two).status == "unparsable"
