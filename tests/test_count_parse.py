"""The partition parser ``cuegap count`` runs, checked without Spark (pure Python).

``generic.read_lines`` must read a file's lines exactly as ``generic.read`` reads the file,
and ``parse_dilemma_lines`` must account for every record as the loader does: what it
counts plus what it quarantines is what ``cuegap ingest`` reads.
"""

from __future__ import annotations

from pathlib import Path

from conftest import DATA

from cuegap.ingest import dilemma_count_context, generic, ingest_path, parse_dilemma_lines

BAD = [
    '{"system": "s", "item_id": "x", "probe": "main", "response": "option1"}',
    "{not json",
    "[1, 2]",
    '{"system": "s", "probe": "main", "response": "option1"}',
    '{"system": "s", "item_id": "x", "probe": "nope", "response": "a"}',
    '\xff{"truncated": ',
]


def _files(tmp_path: Path) -> list[Path]:
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(b"\xef\xbb\xbf" + "\n".join(BAD).encode("utf-8", "surrogateescape"))
    blank_first = tmp_path / "blank_first.jsonl"
    blank_first.write_bytes(b"\n\n" + (DATA / "tiny_responses.jsonl").read_bytes())
    return [DATA / "tiny_responses.jsonl", bad, blank_first]


def test_read_lines_reads_as_read_does(tmp_path: Path) -> None:
    for path in _files(tmp_path):
        stream = generic.read(path)
        run, records = generic.read_lines(path.open("rb"), str(path))
        assert run == stream.run
        assert list(records) == list(stream.records), path.name


def test_parser_accounts_for_every_record_as_ingest_does(engine, tiny_bank, tmp_path) -> None:
    ingest_path(engine, tiny_bank)
    with engine.connect() as conn:
        context = dilemma_count_context(conn)
    for path in _files(tmp_path):
        rows = list(parse_dilemma_lines(path.read_bytes().splitlines(keepends=True), "f", context))
        assert rows[0][0] == "run"
        kinds = [r[0] for r in rows[1:]]
        s = ingest_path(engine, path)
        assert len(kinds) == s.read
        assert kinds.count("quarantine") <= s.quarantined  # conflicts are found later
        assert kinds.count("record") == s.stored + s.duplicate + (
            s.quarantined - kinds.count("quarantine")
        )
        quarantined = [(r[1], r[3]) for r in rows if r[0] == "quarantine"]
        assert [(line, reason) for line, reason in s.problems][: len(quarantined)] == quarantined
