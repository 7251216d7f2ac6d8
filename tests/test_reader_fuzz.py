"""Issue 30 item 5: every reader keeps every line, on mutated copies of its real fixture.

The bounded run of ``benchmarks/reader_fuzz.py`` (its module docstring lists the rules):
3 mutated files per registered reader with a fixture, on SQLite and on PostgreSQL when
``CUEGAP_TEST_PG_URL`` is set. The long version is ``python benchmarks/reader_fuzz.py``.
Plus the cases the outside probe reported, one by one.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import sys
from pathlib import Path

import pytest
from sqlalchemy import select

from cuegap.ingest import READERS, IngestError, ingest_path
from cuegap.ingest._guard import MAX_DEPTH, clip, depth_problem
from cuegap.schema import Quarantine
from tests.conftest import DATA, PG_URL, pg_database

_spec = importlib.util.spec_from_file_location(
    "reader_fuzz", Path(__file__).parent.parent / "benchmarks" / "reader_fuzz.py"
)
fuzz = importlib.util.module_from_spec(_spec)
sys.modules["reader_fuzz"] = fuzz
_spec.loader.exec_module(fuzz)  # type: ignore[union-attr]

LM = DATA / "runners" / "lm_eval_bbq" / "dummy"
LM_SAMPLES = "samples_bbq_mini_2026-11-25T12-30-03.016619.jsonl"


def test_every_reader_has_a_fuzz_case() -> None:
    # moral-safety's CSV folder is in shared/data, not in every checkout
    has_csvs = any(c.reader == "moral-safety" for c in fuzz.CASES)
    assert {c.reader for c in fuzz.CASES} == set(READERS) - (
        set() if has_csvs else {"moral-safety"}
    )
    labels = {c.label for c in fuzz.CASES}  # and each format variant of a reader
    assert {"inspect-ai:cue_probes.json", "promptfoo:results_v2.json"} <= labels


def _findings(url_for) -> list[str]:
    result = fuzz.run(url_for, variants=3, seed=30, huge=200_000)
    return [f"{r}: {f}" for r, (_n, found) in result.items() for f in found]


def test_mutated_fixtures_of_every_reader_are_kept_line_by_line_on_sqlite(tmp_path) -> None:
    assert _findings(lambda name: f"sqlite:///{tmp_path}/{name}.db") == []


def test_mutated_fixtures_of_every_reader_are_kept_line_by_line_on_postgresql() -> None:
    if not PG_URL:
        pytest.skip("no PostgreSQL server: set CUEGAP_TEST_PG_URL")
    with pg_database() as url:
        assert _findings(lambda _name, url=url: url) == []


def test_harness_damages_what_the_probe_damaged() -> None:
    """The mutations include deep nesting, NaN, 1.5, 2**63, wrong containers and null."""
    import random

    rng = random.Random(1)
    seen = {json.dumps(fuzz._bad_value(rng, 10)) for _ in range(400)}
    assert {"NaN", "1.5", str(2**63), "[]", "{}", "null", json.dumps(fuzz.DEEP)} <= seen


# ------------------------------------------------------------- the probe's cases, one each


def _lm_copy(tmp_path: Path, edit) -> Path:
    shutil.copytree(LM, tmp_path / "lm")
    path = tmp_path / "lm" / LM_SAMPLES
    lines = path.read_text().splitlines()
    first = json.loads(lines[0])
    edit(first)
    path.write_text("\n".join([json.dumps(first), *lines[1:]]) + "\n")
    return path


def _reasons(engine) -> list[tuple[int, str | None, str]]:
    with engine.connect() as conn:
        q = select(Quarantine.line_no, Quarantine.field, Quarantine.reason)
        return [tuple(r) for r in conn.execute(q)]


@pytest.mark.parametrize(
    ("field", "value"),
    [("answer_info", 1.5), ("answer_info", float("nan")), ("label", 1.5), ("label", [1])],
)
def test_lm_eval_bbq_wrong_type_quarantines_the_line_naming_the_field(
    engine, tmp_path, field, value
) -> None:
    ingest_path(engine, DATA / "qa" / "bbq_mini.jsonl")
    path = _lm_copy(tmp_path, lambda s: s["doc"].__setitem__(field, value))
    s = ingest_path(engine, path)
    assert s.read == s.stored + s.quarantined and s.quarantined == 2  # 1: an unbanked item
    [(line, fld, reason)] = [r for r in _reasons(engine) if r[0] == 1]
    assert (line, fld) == (1, field) and field in reason


def test_deep_nesting_is_a_quarantine_reason_not_a_recursion_error(engine, tmp_path) -> None:
    ingest_path(engine, DATA / "qa" / "bbq_mini.jsonl")
    deep = "[" * 300 + "]" * 300  # within orjson's 1,024 levels: refused by the guard
    path = _lm_copy(tmp_path, lambda s: s.__setitem__("filter", "DEEP"))
    path.write_text(path.read_text().replace('"DEEP"', deep, 1))
    s = ingest_path(engine, path)
    assert s.quarantined == 2 and s.read == s.stored + 2  # and the unbanked item
    [(line, fld, reason)] = [r for r in _reasons(engine) if r[0] == 1]
    assert (line, fld) == (1, "filter") and f"deeper than {MAX_DEPTH} levels" in reason


def test_damaged_first_lines_do_not_hide_the_format(engine, tmp_path) -> None:
    for name in ("bbq_small.jsonl", "mac_religion.jsonl"):
        ingest_path(engine, DATA / "qa" / name)
    lines = (DATA / "qa" / "bbq_results.jsonl").read_bytes().splitlines()
    path = tmp_path / "bbq_results.jsonl"
    path.write_bytes(b"\n".join([b"\xff\xfe{", b'{"cut": ', b"\x80" * 9, *lines[3:]]) + b"\n")
    s = ingest_path(engine, path)
    assert s.format == "bbq-results" and s.read == len(lines)
    assert s.read == s.stored + s.duplicate + s.quarantined


def test_bbq_results_refuses_a_number_or_empty_strategy(engine, tmp_path) -> None:
    for name in ("bbq_small.jsonl", "mac_religion.jsonl"):
        ingest_path(engine, DATA / "qa" / name)
    lines = (DATA / "qa" / "bbq_results.jsonl").read_text().splitlines()
    first, second = json.loads(lines[0]), json.loads(lines[1])
    first["strategy"], second["strategy"] = 1e308, ""
    path = tmp_path / "bbq_results.jsonl"
    path.write_text("\n".join([json.dumps(first), json.dumps(second), *lines[2:]]) + "\n")
    ingest_path(engine, path)
    got = {line: (fld, reason) for line, fld, reason in _reasons(engine)}
    assert got[1][0] == got[2][0] == "strategy"


def test_huge_field_reason_is_cut_to_one_bounded_line(engine, tmp_path) -> None:
    ingest_path(engine, DATA / "qa" / "bbq_small.jsonl")
    path = tmp_path / "r.jsonl"
    big = {"system": "s", "example_id": 1, "category": "x" * 10_000_000, "model_output": "A"}
    path.write_text(json.dumps(big) + "\n")
    s = ingest_path(engine, path)
    assert s.quarantined == 1
    [(_line, _fld, reason)] = _reasons(engine)
    assert len(reason) < 600 and reason.endswith("characters in all)")


def test_forced_foreign_format_is_refused_in_one_line_and_writes_nothing(engine) -> None:
    with pytest.raises(IngestError, match="does not look like format") as err:
        ingest_path(engine, DATA / "qa" / "bbq_results.jsonl", format="mac-fairness-conversation")
    assert "\n" not in str(err.value) and len(str(err.value)) < 600
    assert _reasons(engine) == []


def test_clip_and_depth_helpers() -> None:
    assert clip("a\nb") == "a b" and clip("x" * 10, 4) == "xxxx… (10 characters in all)"
    deep: list = []
    node = deep
    for _ in range(MAX_DEPTH + 5):
        node.append([])
        node = node[0]
    assert depth_problem({"ok": 1, "f": deep}) == (
        "f",
        f"field 'f' is nested deeper than {MAX_DEPTH} levels",
    )
    assert depth_problem({"ok": [[1]]}) is None


# ------------------------------------ mac-fairness-conversation: the probe's three cases

CONV = DATA / "conv" / "ws"


def _conv_copy(tmp_path: Path, edit) -> Path:
    """The bulk JSONL with its transcript twice: the first edited, the second intact."""
    shutil.copytree(CONV, tmp_path / "ws")
    path = tmp_path / "ws" / "bulk" / "again.jsonl"
    line = path.read_text().splitlines()[0]
    first, second = json.loads(line), json.loads(line)
    second["transcript_id"] += "-2"
    edit(first)
    path.write_text(json.dumps(first) + "\n" + json.dumps(second) + "\n")
    return path


def _msg(t: dict) -> dict:
    return t["conversation_rounds"][0]["messages"][0]


@pytest.mark.parametrize(
    ("edit", "field"),
    [
        (lambda t: _msg(t).__setitem__("message_metadata", 1), "message_metadata"),
        (lambda t: _msg(t)["message_metadata"].__setitem__("retry_count", 2**63), "retry_count"),
        (lambda t: t["conversation_rounds"][0].__setitem__("messages", 1), "messages"),
    ],
    ids=["message_metadata-1", "retry_count-2**63", "messages-1"],
)
def test_conversation_wrong_type_quarantines_that_transcript_naming_the_field(
    engine, tmp_path, edit, field
) -> None:
    s = ingest_path(engine, _conv_copy(tmp_path, edit))
    assert (s.format, s.read, s.stored, s.quarantined) == ("mac-fairness-conversation", 2, 1, 1)
    [(line, fld, reason)] = _reasons(engine)
    assert line == 1 and field in f"{fld} {reason}" and "Error" not in reason


# ------------------------------------------------ the CLI's lines for a huge field


def test_cli_error_and_problem_lines_for_a_huge_field_are_one_bounded_line(tmp_path) -> None:
    from typer.testing import CliRunner

    from cuegap.cli import app

    db = f"sqlite:///{tmp_path}/s.db"
    doc = json.loads((DATA / "runners" / "promptfoo" / "results_v3.json").read_text())
    doc["results"]["version"] = "x" * 2_000_000  # refused, quoting the version
    refused = tmp_path / "results.json"
    refused.write_text(json.dumps(doc))
    quarantined = tmp_path / "r.jsonl"  # stored but for a huge category, quoted in its reason
    big = {"system": "s", "example_id": 1, "category": "y" * 2_000_000, "model_output": "A"}
    quarantined.write_text(json.dumps(big) + "\n")
    cli = CliRunner()
    env = {"COLUMNS": "200"}
    assert cli.invoke(app, ["--db", db, "init"], env=env).exit_code == 0
    cli.invoke(app, ["--db", db, "ingest", str(DATA / "qa" / "bbq_small.jsonl")], env=env)
    for path, marks in ((refused, "x" * 100), (quarantined, "y" * 100)):
        out = cli.invoke(app, ["--db", db, "ingest", str(path)], env=env)
        text = out.output + (out.stderr if out.stderr_bytes is not None else "")
        assert out.exception is None or isinstance(out.exception, SystemExit), out.exception
        assert marks in text  # the field is quoted ...
        # ... clipped: a line holds the file's path (tmp_path's length varies) and at most
        # 500 characters of the reason with its note of the full length
        bound = 700 + 2 * len(str(tmp_path))
        assert len(text) < 3_000 + 2 * bound and max(map(len, text.splitlines())) < bound
