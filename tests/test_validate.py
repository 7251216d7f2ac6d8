"""The store check's fast path (``_fits``) gives exactly the answers of the full check.

``check`` accepts most records through ``_fits`` and asks ``_check_each`` (field by field,
with the reason) only for the rest; a record that ``_fits`` accepts must be one that
``_check_each`` accepts too, whatever its values.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from cuegap.ingest._records import ResponseRecord
from cuegap.ingest._validate import _REPEAT_MAX, INVALID_MARK, _check_each, _fits, check

# Strings near every rule: ASCII, NUL, the invalid-bytes mark, a lone surrogate, other
# Unicode, and lengths around each column's limit (1, 20, 50, 100, 200).
_EDGE = st.sampled_from(
    ["", "a", "A", "option1", "\x00", f"x{INVALID_MARK}", "\udc80", "é", "✓", "Z" * 300]
    + ["x" * n for n in (1, 2, 20, 21, 50, 51, 100, 101, 200, 201)]
)
_TEXT = st.one_of(_EDGE, st.text(max_size=30), st.text(alphabet="ab\x00é", max_size=5))
_VALUE = st.one_of(_TEXT, st.none(), st.integers(-2, 2), st.booleans(), st.just([]))
_REPEAT = st.one_of(
    st.integers(-1, 3), st.sampled_from([_REPEAT_MAX, _REPEAT_MAX + 1, 2**63]), st.booleans()
)
_REPEAT = st.one_of(_REPEAT, st.floats(0, 2), st.just("3"), st.none())
_RUNNER = st.one_of(st.none(), st.just({"a": 1}), st.just({"a": "\x00"}), st.just({1: {2}}))


@st.composite
def records(draw: st.DrawFn) -> ResponseRecord:
    return ResponseRecord(
        line=1,
        raw="{}",
        system=draw(_VALUE),
        item_id=draw(_VALUE),
        probe=draw(_VALUE),
        response=draw(_VALUE),
        individual=draw(_VALUE),
        consequences=True,
        prompt_variant=draw(_VALUE),
        repeat=draw(_REPEAT),
        prompt=draw(_VALUE),
        sample_id=draw(_VALUE),
        item_bank=draw(_VALUE),
        runner_result=draw(_RUNNER),
    )


@settings(max_examples=3000, deadline=None)
@given(records())
def test_fast_path_accepts_only_what_the_full_check_accepts(rec: ResponseRecord) -> None:
    full = _check_each(rec)
    if _fits(rec):
        assert full is None
    assert check(rec) == full


def test_fast_path_takes_the_common_record() -> None:
    rec = ResponseRecord(1, "{}", "sys", "direct-1", "what_if", "option1", "A", sample_id="s1")
    assert _fits(rec) and check(rec) is None


def test_every_limit_is_the_full_checks() -> None:
    """One character over any limit leaves the fast path and gets the full check's reason."""
    for field, limit in (("system", 200), ("item_id", 100), ("sample_id", 200)):
        base = {"line": 1, "raw": "{}", "system": "s", "item_id": "i", "probe": "main"}
        ok = ResponseRecord(**{**base, "response": "r", field: "x" * limit})
        over = ResponseRecord(**{**base, "response": "r", field: "x" * (limit + 1)})
        assert _fits(ok) and check(ok) is None
        assert not _fits(over)
        assert check(over) == (
            field,
            f"field {field!r}: {limit + 1:,} characters, longer than the {limit} the store holds",
        )
