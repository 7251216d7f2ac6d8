"""Regression tests for issue 12: ingest never drops, double-counts or crashes.

Each test runs on a real SQLite file and on the real PostgreSQL server (the ``engine``
fixture), and each failed before its fix.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sqlalchemy import func, select, update

from cuegap.compliance import verify
from cuegap.ingest import ingest_path
from cuegap.schema import Quarantine, Response, ledger, store_status
from cuegap.schema._provenance import provenance

HEADER = {"format": "cuegap-responses", "version": 1, "item_bank": "tiny"}


def _write(path: Path, lines: list[dict | str | bytes]) -> Path:
    out = bytearray()
    for line in lines:
        if isinstance(line, dict):
            line = json.dumps(line)
        out += (line if isinstance(line, bytes) else line.encode()) + b"\n"
    path.write_bytes(bytes(out))
    return path


def _resp(**kw) -> dict:
    base = {"system": "s1", "item_id": "direct-d1", "probe": "what_if", "individual": "A"}
    base["response"] = "option1"
    base.update(kw)
    return base


def _quarantine(engine) -> dict[int, tuple[str | None, str]]:
    with engine.connect() as conn:
        rows = conn.execute(select(Quarantine.line_no, Quarantine.field, Quarantine.reason))
        return {r.line_no: (r.field, r.reason) for r in rows}


def _balanced(s) -> None:
    assert s.read == s.stored + s.duplicate + s.quarantined, s


def test_repeats_across_transactions_are_counted_and_conflicts_quarantined(
    engine, tiny_bank, tmp_path
) -> None:
    """Defect 1: a repeated key in a later transaction was neither a duplicate nor
    quarantined, and a conflicting one was dropped. With 2 records per transaction, lines
    4 and 5 repeat lines 2 and 3 (one identical, one with another response)."""
    ingest_path(engine, tiny_bank)
    lines = [
        HEADER,
        _resp(repeat=0),
        _resp(repeat=1),
        _resp(repeat=0),  # the same as line 2: a duplicate
        _resp(repeat=1, response="option2"),  # conflicts with line 3
        _resp(repeat=2),
    ]
    s = ingest_path(engine, _write(tmp_path / "r.jsonl", lines), batch_size=2)
    _balanced(s)
    assert (s.read, s.stored, s.duplicate, s.quarantined) == (5, 3, 1, 1)
    field, reason = _quarantine(engine)[5]
    assert field == "response"
    assert "line 3 of the same file" in reason
    again = ingest_path(engine, tmp_path / "r.jsonl", batch_size=2)
    _balanced(again)
    assert (again.stored, again.duplicate, again.quarantined) == (0, 4, 1)


def test_out_of_range_repeat_is_quarantined_with_line_and_field(
    engine, tiny_bank, tmp_path
) -> None:
    """Defect 2: a repeat beyond the store's integer range crashed the whole ingest with an
    OverflowError; 2**31 also fits SQLite but not PostgreSQL, so both are refused."""
    ingest_path(engine, tiny_bank)
    lines = [HEADER, _resp(repeat=9223372036854775808), _resp(repeat=2**31), _resp(repeat=3)]
    s = ingest_path(engine, _write(tmp_path / "r.jsonl", lines))
    _balanced(s)
    assert (s.stored, s.quarantined) == (1, 2)
    q = _quarantine(engine)
    assert {q[2][0], q[3][0]} == {"repeat"}
    assert "9223372036854775808" in q[2][1]


def test_nul_and_overlong_fields_are_quarantined_alike_on_both_backends(
    engine, tiny_bank, tmp_path
) -> None:
    """Defect 5: on PostgreSQL a NUL in a response or a sample_id over 200 characters
    aborted the whole file; now both backends quarantine exactly those lines."""
    ingest_path(engine, tiny_bank)
    lines = [
        HEADER,
        _resp(repeat=0, response="option1\u0000"),
        _resp(repeat=1, sample_id="x" * 201),
        _resp(repeat=2, system="s\u0000"),
        _resp(repeat=3, sample_id="x" * 200),
        _resp(repeat=4, prompt="a prompt \ud800 with a lone surrogate"),
    ]
    s = ingest_path(engine, _write(tmp_path / "r.jsonl", lines))
    _balanced(s)
    assert (s.stored, s.quarantined) == (1, 4)
    q = _quarantine(engine)
    assert q[2][0] == "response" and "NUL" in q[2][1]
    assert q[3][0] == "sample_id" and "200" in q[3][1]
    assert q[4][0] == "system"
    with engine.connect() as conn:
        raws = conn.execute(select(Quarantine.raw).order_by(Quarantine.line_no)).scalars().all()
    assert all("\x00" not in r for r in raws)


def test_quarantine_is_resolved_when_its_line_is_stored_later(engine, tiny_bank, tmp_path) -> None:
    """Defect 4: responses ingested before their bank stayed counted as quarantined after
    the bank and the responses were ingested again and every line was stored."""
    path = _write(tmp_path / "r.jsonl", [HEADER, _resp(repeat=0), _resp(repeat=1)])
    first = ingest_path(engine, path)
    assert first.quarantined == 2
    assert store_status(engine).quarantined == 2
    ingest_path(engine, tiny_bank)
    second = ingest_path(engine, path)
    assert (second.stored, second.quarantined) == (2, 0)
    assert store_status(engine).quarantined == 0
    assert provenance(engine).quarantine.empty  # the report counts nothing unresolved
    with engine.connect() as conn:  # the history is kept
        kept = conn.execute(
            select(func.count(Quarantine.id)).where(Quarantine.resolved_at.is_not(None))
        ).scalar_one()
        stored = conn.execute(select(func.count(Response.id))).scalar_one()
    assert (kept, stored) == (2, 2)
    # The first pass's batch is re-sealed by the second (its lines were resolved): legitimate.
    assert verify(engine).ok, verify(engine).problems
    with engine.begin() as conn:  # reopening a resolved line by hand, and re-sealing it, is not
        conn.execute(update(Quarantine).values(resolved_at=None, resolved_batch_id=None))
        ledger.record(conn, "batch", first.batch_id)
    problems = verify(engine).problems
    assert any(f"ingest batch {first.batch_id} was re-sealed" in p for p in problems), problems


def test_a_line_quarantined_again_is_reopened(engine, tiny_bank, tmp_path) -> None:
    """A resolved quarantine row whose line is quarantined again (another reason) counts
    again: the unique (file, line) row is reopened, not silently kept resolved."""
    ingest_path(engine, tiny_bank)
    path = _write(tmp_path / "r.jsonl", [HEADER, _resp(item_id="nope")])
    assert ingest_path(engine, path).quarantined == 1
    assert store_status(engine).quarantined == 1
    assert ingest_path(engine, path).quarantined == 1
    assert store_status(engine).quarantined == 1
    assert verify(engine).ok, verify(engine).problems


RUNNERS = Path(__file__).parent / "data" / "runners"
JSON_FILES = [
    ("inspect_ai/cue_probes.json", b'"completion": "c-option2"'),
    ("promptfoo/results_v3.json", b'"output": "option1"'),
    ("helm/cue_probes/scenario_state.json", b'"text": "option1",'),  # a completion
]


def _copy_run(src: Path, dest: Path) -> Path:
    """A runner file copied with its sibling files (HELM's run_spec.json, ...)."""
    for sibling in src.parent.iterdir():
        if sibling.is_file():
            (dest / sibling.name).write_bytes(sibling.read_bytes())
    return dest / src.name


@pytest.mark.parametrize("bad", [b"\xff", b"\\udc80"], ids=["invalid-byte", "lone-surrogate"])
@pytest.mark.parametrize(("name", "needle"), JSON_FILES, ids=["inspect", "promptfoo", "helm"])
def test_bad_text_in_a_json_runner_file_quarantines_only_its_sample(
    engine, tiny_bank, tmp_path, name, needle, bad
) -> None:
    """Defect 9: one invalid byte dropped every sample after it (with a message saying
    the file ended there), and a lone surrogate escape failed an inspect .json with a
    UnicodeDecodeError. One rule for every reader now: the sample is quarantined, naming
    the field, and the samples after it are stored."""
    ingest_path(engine, tiny_bank)
    (tmp_path / "good").mkdir()
    (tmp_path / "bad").mkdir()
    good = _copy_run(RUNNERS / name, tmp_path / "good")
    base = ingest_path(engine, good)
    damaged = _copy_run(RUNNERS / name, tmp_path / "bad")
    data = damaged.read_bytes()
    assert needle in data
    cut = needle.rindex(b'"')  # inside the string, before its closing quote
    damaged.write_bytes(data.replace(needle, needle[:cut] + bad + needle[cut:], 1))
    s = ingest_path(engine, damaged)
    _balanced(s)
    assert s.read == base.read
    assert s.stored + s.duplicate == base.stored + base.duplicate - 1
    reasons = [r for r in _quarantine(engine).values() if "not valid UTF-8" in r[1]]
    assert reasons and reasons[0][0] == "response", reasons


def test_damaged_zstd_member_of_an_eval_log_is_quarantined_alone(
    engine, tiny_bank, tmp_path
) -> None:
    """Defect 3: a damaged zstd-compressed member gave a ZstdError traceback and stored
    nothing; docs/formats.md promises that member is quarantined and the rest stored."""
    import struct
    import zipfile

    ingest_path(engine, tiny_bank)
    data = bytearray((RUNNERS / "inspect_ai" / "cue_probes.eval").read_bytes())
    with zipfile.ZipFile(RUNNERS / "inspect_ai" / "cue_probes.eval") as zf:
        info = zf.getinfo("samples/direct-d1_epoch_1.json")
    assert info.compress_type == 93  # zstd
    name_len, extra_len = struct.unpack_from("<2H", data, info.header_offset + 26)
    start = info.header_offset + 30 + name_len + extra_len
    data[start : start + 4] = b"\0\0\0\0"  # the zstd frame's magic number
    bad = tmp_path / "damaged.eval"
    bad.write_bytes(bytes(data))
    s = ingest_path(engine, bad)
    _balanced(s)
    assert (s.read, s.stored) == (7, 5)
    reasons = [r for _, r in _quarantine(engine).values()]
    assert any("direct-d1_epoch_1.json" in r and "zstd" in r for r in reasons), reasons


def test_a_byte_order_mark_does_not_hide_the_header(engine, tiny_bank, tmp_path) -> None:
    """Defect 7: a UTF-8 BOM made the header line unrecognised; with --format generic the
    header was quarantined and the systems' provider, version and metadata were lost."""
    from cuegap.ingest import detect_reader
    from cuegap.schema import System

    ingest_path(engine, tiny_bank)
    header = {**HEADER, "systems": {"s1": {"provider": "acme", "version": "7b"}}}
    path = tmp_path / "bom.jsonl"
    _write(path, [header, _resp()])
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    assert detect_reader(path).name == "generic"
    s = ingest_path(engine, path, format="generic")
    assert (s.read, s.stored, s.quarantined) == (1, 1, 0)
    with engine.connect() as conn:
        system = conn.execute(select(System)).one()
    assert (system.provider, system.version) == ("acme", "7b")


def test_killed_store_creation_leaves_nothing_half_built(tmp_path) -> None:
    """Defect 6: a fresh SQLite store killed during creation was left half-built, after
    which init and ingest failed with "table item_bank already exists". A failure after
    some tables were created (as a kill would) now leaves an empty file that init
    creates. (PostgreSQL's DDL was already transactional.)"""
    from sqlalchemy import event, inspect

    from cuegap.schema import current_revision, make_engine, upgrade

    engine = make_engine(f"sqlite:///{tmp_path / 'store.db'}")

    def die(conn, cursor, statement, *args) -> None:
        if statement.lstrip().startswith("CREATE TABLE response"):
            raise KeyboardInterrupt  # as if killed after item_bank and others exist

    event.listen(engine, "before_cursor_execute", die)
    with pytest.raises(KeyboardInterrupt):
        upgrade(engine)
    event.remove(engine, "before_cursor_execute", die)
    engine.dispose()
    assert inspect(engine).get_table_names() == []
    assert upgrade(engine)[0] is None
    assert current_revision(engine) is not None


def test_killed_ingest_is_listed_by_status_and_init_restores_indexes(
    engine, tiny_bank, tmp_path, monkeypatch
) -> None:
    """Defect 10: a killed ingest stayed "running" and status did not say so; the store ran
    without its secondary indexes until the next ingest. Status lists it now, and init
    (upgrade) rebuilds the indexes."""
    from sqlalchemy import inspect, text, update

    from cuegap.schema import IngestBatch, upgrade

    ingest_path(engine, tiny_bank)
    path = _write(tmp_path / "r.jsonl", [HEADER, _resp()])
    ingest_path(engine, path)
    with engine.begin() as conn:  # what a kill -9 mid-load leaves behind
        conn.execute(update(IngestBatch).values(status="running", finished_at=None))
        if engine.dialect.name == "sqlite":
            conn.execute(text("DROP INDEX ix_response_agg"))
    unfinished = store_status(engine).unfinished
    assert len(unfinished) == 1 and unfinished["source_path"][0] == str(path.resolve())
    upgrade(engine)
    names = {ix["name"] for ix in inspect(engine).get_indexes("response")}
    assert "ix_response_agg" in names


def test_documented_inspect_system_mapping_keeps_the_provider(engine, tiny_bank, tmp_path) -> None:
    """Defect 8: the documented inspect mapping line (system from ``eval.model`` with a
    pattern) stored the system without its provider. The line is read from docs/formats.md."""
    from cuegap.schema import System

    doc = (Path(__file__).parent.parent / "docs" / "formats.md").read_text("utf-8")
    line = next(ln for ln in doc.splitlines() if ln.startswith('system = { path = "eval.model"'))
    mapping = tmp_path / "m.toml"
    mapping.write_text(f'runner = "inspect-ai"\n[fields]\n{line}\n')
    ingest_path(engine, tiny_bank)
    s = ingest_path(engine, RUNNERS / "inspect_ai" / "cue_probes.json", mapping=mapping)
    assert s.stored > 0
    with engine.connect() as conn:
        system = conn.execute(select(System)).one()
    assert (system.name, system.provider) == ("model", "mockllm")  # eval.model mockllm/model


def test_source_paths_are_stored_resolved(engine, tiny_bank, tmp_path, monkeypatch) -> None:
    """Defect 13: file paths were stored relative to the working directory, so the same
    file ingested from elsewhere looked like another file."""
    from cuegap.schema import IngestBatch, Run

    ingest_path(engine, tiny_bank)
    _write(tmp_path / "r.jsonl", [HEADER, _resp(item_id="nope")])
    monkeypatch.chdir(tmp_path)
    ingest_path(engine, Path("r.jsonl"))
    with engine.connect() as conn:
        paths = {
            conn.execute(select(Run.source_path)).scalar_one(),
            conn.execute(select(IngestBatch.source_path).order_by(IngestBatch.id.desc()))
            .scalars()
            .first(),
            conn.execute(select(Quarantine.source_path)).scalar_one(),
        }
    assert paths == {str(tmp_path.resolve() / "r.jsonl")}
