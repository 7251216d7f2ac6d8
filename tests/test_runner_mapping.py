"""Mapping files, the runner readers' streaming, and the mapping examples of docs/formats.md."""

from __future__ import annotations

import json
import re
import tracemalloc
import zipfile
from pathlib import Path

import pytest

from cuegap.ingest import inspect_log
from cuegap.ingest._records import Rejected, ResponseRecord
from cuegap.ingest.mapping import load_mapping, parse_mapping
from cuegap.ingest.registry import READERS
from tests.conftest import DATA

ROOT = Path(__file__).parent.parent
INSPECT = DATA / "runners" / "inspect_ai"


def _apply(doc: dict, view: dict, defaults: dict | None = None):
    return parse_mapping(doc).over(defaults or {}).apply(view, sample="sample 's1'")


BASE = {"system": "m.system", "item_id": "m.item", "probe": "m.probe", "individual": "m.who"}


# ------------------------------------------------------------------------- mapping rules


def test_paths_constants_fallbacks_and_defaults() -> None:
    doc = {
        "fields": {"item_bank": {"value": "tiny"}, "item_id": ["m.missing", "m.empty", "m.item"]}
    }
    out = _apply(
        doc, {"m": {"system": "s", "item": "direct-d1", "empty": "", "probe": "main"}}, BASE
    )
    assert out == {
        "system": "s",
        "item_bank": "tiny",
        "item_id": "direct-d1",
        "probe": "main",
        "individual": None,
        "consequences": True,
        "prompt_variant": "v0",
        "repeat": 0,
    }


def test_patterns_maps_and_extract_tables() -> None:
    doc = {
        "fields": {
            "probe": {"path": "m.kind", "map": {"whatif": "what_if"}},
            "individual": {"path": "m.tag", "pattern": "person-([a-d])"},
            "repeat": {"path": "m.tag", "pattern": r"r(?P<repeat>\d+)"},
            "prompt_variant": "key.variant",
            "consequences": "key.cons",
        },
        "extract": {"key": {"path": "m.id", "pattern": r"^(?P<variant>v\d)-(?P<cons>yes|no)$"}},
    }
    view = {
        "m": {"system": "s", "item": "i", "kind": "whatif", "tag": "person-b/r3", "id": "v2-no"}
    }
    out = _apply(doc, view, BASE)
    assert (out["probe"], out["individual"], out["repeat"]) == ("what_if", "B", 3)
    assert (out["prompt_variant"], out["consequences"]) == ("v2", False)
    view["m"]["id"] = "nope"
    doc["fields"]["item_id"] = "key.variant"
    field, reason = _apply(doc, view, BASE)
    assert field == "item_id"
    assert reason == (
        "sample 's1': missing mapped field 'item_id' (looked at key.variant; m.id 'nope' does "
        "not match the [extract.key] pattern)"
    )


@pytest.mark.parametrize(
    ("values", "field", "message"),
    [
        ({"probe": "whatif"}, "probe", "'whatif' is not one of main, could_be, what_if"),
        ({"probe": "main", "who": "A"}, "individual", "must be absent for the main probe"),
        ({"probe": "what_if"}, "individual", "(a letter A-Z) is required for what_if"),
        ({"probe": "what_if", "who": "AB"}, "individual", "expected a letter A-Z, got 'AB'"),
        ({"probe": "main", "system": ["x"]}, "system", "expected text, got list"),
        (
            {"probe": "main", "item": None},
            "item_id",
            "missing mapped field 'item_id' (looked at m.item)",
        ),
    ],
)
def test_bad_values_name_the_sample_and_field(values: dict, field: str, message: str) -> None:
    view = {"m": {"system": "s", "item": "i", **values}}
    got_field, reason = _apply({}, view, BASE)
    assert got_field == field and reason.startswith("sample 's1': ") and message in reason


@pytest.mark.parametrize(
    ("raw", "expected"),
    [("no", False), ("TRUE", True), (0, False), (True, True), ("maybe", None)],
)
def test_consequences_accepts_booleans_in_several_spellings(raw, expected) -> None:
    out = _apply(
        {"fields": {"consequences": "m.c"}},
        {"m": {"system": "s", "item": "i", "probe": "main", "c": raw}},
        BASE,
    )
    if expected is None:
        assert out[0] == "consequences" and "expected true or false, got 'maybe'" in out[1]
    else:
        assert out["consequences"] is expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("version = 2\n", "unknown mapping version 2"),
        ('colour = "red"\n', "unknown key 'colour'"),
        ('[fields]\ncondition = "m.c"\n', "unknown field 'condition'; mappable fields"),
        (
            '[fields]\nprobe = { path = "a", value = "b" }\n',
            "give exactly one of 'path' or 'value'",
        ),
        ('[fields]\nprobe = { path = "a", pattern = "(" }\n', "bad 'pattern'"),
        ('[fields]\nprobe = { path = "a", regex = "x" }\n', "unknown key 'regex'"),
        ('[extract.k]\npath = "a"\npattern = "x+"\n', "the pattern needs named groups"),
        ("fields = [", "not a valid TOML mapping"),
    ],
)
def test_bad_mapping_files_name_the_file(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(ValueError, match=re.escape(message)) as err:
        load_mapping(path)
    assert str(path) in str(err.value)


# -------------------------------------------------------------------------------- docs


def _formats_section() -> str:
    doc = (ROOT / "docs" / "formats.md").read_text("utf-8")
    start = doc.index("## Ingesting runner outputs")
    return doc[start : doc.index("\n## ", start + 5)]


def test_docs_have_a_worked_example_per_runner_and_its_mappings_parse() -> None:
    section = _formats_section()
    runners = [r.name for r in READERS.values() if r.mapping]
    for name in runners:
        assert f"### {name}" in section, f"no example for {name} in docs/formats.md"
        assert f"--format {name}" in section or name in section
    blocks = re.findall(r"```toml\n(.*?)```", section, re.S)
    assert len(blocks) >= len(runners)
    import tomllib

    for block in blocks:
        mapping = parse_mapping(tomllib.loads(block))
        assert mapping.runner in runners


# ---------------------------------------------------------------------------- streaming


def _sample(i: int, pad: int) -> dict:
    return {
        "id": f"s{i}",
        "epoch": 1,
        "input": f"prompt {i}",
        "target": "option1",
        "metadata": {"item_id": "neutral-d1", "probe": "main", "repeat": i},
        "output": {"model": "m", "choices": [], "completion": "option1"},
        "events": [{"event": "model", "pad": "x" * pad}],
    }


def _header(n: int) -> dict:
    return {
        "version": 2,
        "status": "success",
        "eval": {
            "task": "t",
            "model": "mockllm/model",
            "created": "2026-01-01T00:00:00+00:00",
            "dataset": {"samples": n, "sample_ids": [f"s{i}" for i in range(n)]},
            "config": {"epochs": 1},
            "packages": {"inspect_ai": "0"},
        },
        "plan": {"config": {}},
    }


def _big_eval(path: Path, n: int, pad: int) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("header.json", json.dumps(_header(n)))
        for i in range(n):
            z.writestr(f"samples/s{i}_epoch_1.json", json.dumps(_sample(i, pad)))
    return path


def _big_json(path: Path, n: int, pad: int) -> Path:
    with path.open("w") as fh:
        head = json.dumps(_header(n))
        fh.write(head[:-1] + ', "samples": [')
        for i in range(n):
            fh.write(("," if i else "") + json.dumps(_sample(i, pad)))
        fh.write("]}")
    return path


def _peak_reading(path: Path) -> tuple[int, int]:
    tracemalloc.start()
    try:
        n = sum(1 for r in inspect_log.read(path).records if isinstance(r, ResponseRecord))
        return n, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize(("make", "suffix"), [(_big_eval, ".eval"), (_big_json, ".json")])
def test_inspect_logs_are_read_sample_by_sample(tmp_path: Path, make, suffix, monkeypatch) -> None:
    """Four times the samples (20 KB each: 4 MB vs 16 MB in all) must not raise the peak
    much: the reader holds one sample at a time."""
    monkeypatch.setenv("CUEGAP_INSPECT_NATIVE", "0")
    n_small, peak_small = _peak_reading(make(tmp_path / f"small{suffix}", 200, 20_000))
    n_large, peak_large = _peak_reading(make(tmp_path / f"large{suffix}", 800, 20_000))
    assert (n_small, n_large) == (200, 800)
    assert peak_large < 1.5 * peak_small + 1_000_000, (peak_small, peak_large)
    assert peak_large < 4_000_000


def _records(path: Path) -> list[tuple]:
    out = []
    for r in inspect_log.read(path).records:
        if isinstance(r, Rejected):
            out.append((r.line, r.field, r.reason))
        else:
            out.append(
                (
                    r.line,
                    r.system,
                    r.item_id,
                    r.probe,
                    r.individual,
                    r.response,
                    r.prompt,
                    r.runner_result,
                )
            )
    return out


@pytest.mark.parametrize("name", ["cue_probes.eval", "cue_probes_deflate.eval", "cue_probes.json"])
def test_inspect_native_validation_and_ours_agree(name: str, monkeypatch) -> None:
    """When inspect-ai is installed, its own EvalSample model validates (and migrates) each
    sample; the records must equal those of cuegap's own reading."""
    pytest.importorskip("inspect_ai", reason="inspect-ai is not a cuegap dependency")
    monkeypatch.setenv("CUEGAP_INSPECT_NATIVE", "0")
    ours = _records(INSPECT / name)
    monkeypatch.setenv("CUEGAP_INSPECT_NATIVE", "1")
    native = inspect_log._native()
    assert native is not None
    with zipfile.ZipFile(INSPECT / "cue_probes_deflate.eval") as z:
        sample = json.loads(z.read("samples/direct-d1_epoch_1.json"))
    native.EvalSample.model_validate(sample)  # the fixture is valid for inspect-ai itself
    assert _records(INSPECT / name) == ours


def test_native_reader_can_be_turned_off(monkeypatch) -> None:
    monkeypatch.setenv("CUEGAP_INSPECT_NATIVE", "0")
    assert inspect_log._native() is None


def test_attachment_references_are_resolved() -> None:
    """inspect-ai may store long texts once, as ``attachment://HASH`` plus an attachment."""
    sample = {
        "id": 1,
        "epoch": 1,
        "input": "attachment://a1",
        "output": {"completion": "attachment://b2", "choices": []},
        "attachments": {"a1": "a long prompt", "b2": "option2"},
        "events": [{"input": "attachment://a1"}],
    }
    out = inspect_log._normalise(sample, None)
    assert out["input"] == "a long prompt" and out["output"]["completion"] == "option2"
    assert "events" not in out and "attachments" not in out
