"""The QA loader's quick check never lets through a record its full check would refuse.

``_fits`` is a sufficient condition for ``_check`` to find nothing, taken first for speed;
a record it does not pass is checked in full, so the reasons quarantine gives stay those of
``_check``. Property: for any record, ``_fits(rec)`` implies ``_check(rec) is None``. The
values drawn sit on every edge ``_check`` knows: NUL, lone surrogates, non-ASCII text,
limits and one past them, booleans for integers, negative and 32-bit-overflowing repeats,
empty or blank factor values.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from cuegap.ingest._qa_loader import _check, _fits
from cuegap.ingest.bbq_results import QARecord

_EDGE_TEXT = st.sampled_from(
    ["a", "", " ", "x" * 50, "x" * 51, "x" * 200, "x" * 201, "nul\x00", "caf\u00e9", "\udc80"]
)
_TEXT = st.one_of(_EDGE_TEXT, st.text(max_size=5))
_ANY = st.one_of(_TEXT, st.none(), st.integers(-2, 2), st.booleans(), st.floats(0, 1))
_INT = st.one_of(
    st.integers(-1, 3), st.sampled_from([2**31 - 1, 2**31]), st.booleans(), st.none(), _TEXT
)


_FIELDS = {
    "system": _ANY,
    "response": _ANY,
    "predicted_index": _INT,
    "predicted_label": _ANY,
    "gold": st.one_of(_INT, _ANY),
    "repeat": _INT,
    "sample_id": _ANY,
    "item_bank": _ANY,
    "factors": st.dictionaries(st.one_of(_TEXT, st.integers(0, 2)), _ANY, max_size=3),
}


@st.composite
def _records(draw: st.DrawFn) -> QARecord:
    """A plain record with one to three fields set to edge values."""
    rec = QARecord(1, "{}", "sys", "Answer: (b)", item_id="x", factors={"strategy": "cot"})
    for name in draw(st.lists(st.sampled_from(sorted(_FIELDS)), min_size=1, max_size=3)):
        setattr(rec, name, draw(_FIELDS[name]))
    return rec


@settings(max_examples=3000, deadline=None)
@given(_records())
def test_quick_check_passes_only_what_the_full_check_passes(rec: QARecord) -> None:
    assert not _fits(rec) or _check(rec) is None


def test_a_plain_record_takes_the_quick_path_and_an_edge_does_not() -> None:
    rec = QARecord(1, "{}", "sys", "Answer: (b)", item_id="x", factors={"strategy": "cot"})
    assert _fits(rec) and _check(rec) is None
    rec.repeat = 2**31  # one past the 32-bit column: refused by both
    assert not _fits(rec) and _check(rec) == ("repeat", "field 'repeat' is too large")
    rec.repeat, rec.predicted_index = 0, True  # a boolean is not an option index
    assert not _fits(rec) and _check(rec) is not None
    rec.predicted_index, rec.factors = None, {"strategy": " "}  # a blank factor
    assert not _fits(rec) and _check(rec) is not None
    rec.factors, rec.response = {}, "caf\u00e9"  # non-ASCII: full check, which accepts it
    assert not _fits(rec) and _check(rec) is None
