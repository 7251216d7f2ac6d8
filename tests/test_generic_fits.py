"""The generic reader's store verdict (``fits``) agrees with the store check, line for line.

For a line whose bytes are ASCII without a ``\\u`` escape, the reader decides from the
lengths alone that a record fits the store, and the loader skips
``cuegap.ingest._validate.check``. Lines are drawn near every rule of that check (NUL and
lone-surrogate escapes, raw and escaped non-ASCII text, every length limit, the largest
repeat) and written both with and without ASCII escaping: wherever the reader says a record
fits, the full field-by-field check must accept it, and a plain line the check accepts
must be taken by the fast path.
"""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cuegap.ingest import generic
from cuegap.ingest._records import ResponseRecord
from cuegap.ingest._validate import _REPEAT_MAX, _check_each, check

_TEXT = st.sampled_from(
    ["s", "sys-1", "\x00", "\udc80", "é", "✓", "a\\u0041", "Z" * 300]
    + ["x" * n for n in (1, 20, 21, 50, 51, 100, 101, 200, 201)]
)
_OPT = st.one_of(st.none(), _TEXT)


@st.composite
def lines(draw: st.DrawFn) -> tuple[dict, bool]:
    probe = draw(st.sampled_from(["main", "could_be", "what_if"]))
    obj = {
        "system": draw(_TEXT),
        "item_id": draw(_TEXT),
        "probe": probe,
        "response": draw(st.one_of(_TEXT, st.just("option1"))),
    }
    if probe != "main":
        obj["individual"] = draw(st.sampled_from(["A", "b", "é"]))
    for key in ("prompt_variant", "prompt", "sample_id", "item_bank"):
        value = draw(_OPT)
        if value is not None:
            obj[key] = value
    repeat = draw(st.sampled_from([None, 0, 3, _REPEAT_MAX, _REPEAT_MAX + 1]))
    if repeat is not None:
        obj["repeat"] = repeat
    return obj, draw(st.booleans())


def _read(path: Path, line: bytes) -> list:
    path.write_bytes(line + b"\n")
    return list(generic.read(path).records)


@settings(
    max_examples=600, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(lines())
def test_fits_agrees_with_the_store_check(tmp_path: Path, drawn: tuple[dict, bool]) -> None:
    obj, ascii_ = drawn
    line = json.dumps(obj, ensure_ascii=ascii_).encode("utf-8", "surrogatepass")
    (rec,) = _read(tmp_path / "one.jsonl", line)
    if not isinstance(rec, ResponseRecord):
        return  # rejected by the reader: never reaches the store check
    full = _check_each(rec)
    if rec.fits:
        assert full is None, (line, full)
    assert check(rec) == full
    plain = line.isascii() and b"\\u" not in line
    if plain and full is None:
        assert rec.fits, line


def test_common_line_takes_the_fast_path(tmp_path: Path) -> None:
    line = b'{"system":"s","item_id":"i","probe":"what_if","individual":"a","response":"x"}'
    (rec,) = _read(tmp_path / "one.jsonl", line)
    assert rec.fits and rec.individual == "A"
    for bad in (b'"x\\u0000"', b'"\\u00e9"', '"é"'.encode()):
        (rec,) = _read(tmp_path / "one.jsonl", line.replace(b'"x"', bad))
        assert isinstance(rec, ResponseRecord) and not rec.fits  # the full check decides
        assert (check(rec) is None) == (bad != b'"x\\u0000"')
