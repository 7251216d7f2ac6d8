"""Do two versions of cuegap store the same rows? Ingests the same files with each and compares.

For a change to the ingest path that must not change what is stored (issue 14): check out
the old version somewhere (``git worktree add /tmp/old <commit>``) and run::

    .venv/bin/python benchmarks/ingest_identical.py --old /tmp/old            # SQLite
    .venv/bin/python benchmarks/ingest_identical.py --old /tmp/old --pg URL   # and PostgreSQL

Each version, in a fresh process with its own source tree first on ``PYTHONPATH``, builds a
fresh store and ingests: a simulated paper-scale file (14 systems by default) twice (the
second pass must store nothing), then the fuzzed file of ``ingest_faults.py`` (about two
thirds of its lines damaged: every quarantine reason the generic reader and the loader
give) twice, in small transactions, and a file with every quarantine reason and many
raw answer forms (:func:`every_reason_file`) twice. Then every column of every response row, every
quarantine row (its timestamps aside), every ingest batch's counts, every system row and
every ledger part digest are compared (those of a run or item bank record aside: they
cover its ingest time). Exit status 1 when anything differs.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).parent.parent

# Run in the child, under the version's own ``cuegap`` (no import from this checkout).
_CHILD = r"""
import hashlib, json, sys
from pathlib import Path
import orjson
from sqlalchemy import text
import cuegap
from cuegap.ingest import ingest_path
from cuegap.schema import make_engine, upgrade

url, bank, resp, tiny, fuzz, every, out = sys.argv[1:8]
engine = make_engine(url)
upgrade(engine)
summaries = []
for path, batch in ((bank, None), (resp, None), (resp, None), (tiny, None), (fuzz, 997),
                    (fuzz, 997), (every, 7), (every, None)):
    s = ingest_path(engine, path, **({"batch_size": batch} if batch else {}))
    summaries.append([Path(path).name, s.read, s.stored, s.duplicate, s.quarantined,
                      s.problems, s.incomplete, s.note])

def dump(sql):
    with engine.connect() as conn:
        cur = conn.exec_driver_sql(sql)
        cols = list(cur.keys())
        rows = [list(r) for r in cur]
    return cols, rows

def digest(rows):
    return hashlib.sha256(orjson.dumps(rows, default=str)).hexdigest()

cols, rows = dump("SELECT * FROM response ORDER BY id")
by_col = {c: digest([r[i] for r in rows]) for i, c in enumerate(cols)}
qcols = "id, batch_id, source_path, source_sha256, line_no, field, reason, raw, " \
        "resolved_at IS NULL AS open, resolved_batch_id"
_, quarantine = dump(f"SELECT {qcols} FROM quarantine ORDER BY id")
_, batches = dump("SELECT id, run_id, status, error, lines_read, stored, duplicate, "
                  "quarantined FROM ingest_batch ORDER BY id")
_, systems = dump("SELECT id, name, provider, version, metadata FROM system ORDER BY id")
# Parts holding a timestamp (a run's or bank's ingested_at) differ between any two runs.
_, entries = dump("SELECT seq, kind, ref_id, detail FROM ledger ORDER BY seq")
ledger = []
for seq, kind, ref, detail in entries:
    parts = json.loads(detail) if detail else {}
    parts.pop("run", None)
    if kind == "bank":
        parts.pop("record", None)
    ledger.append([seq, kind, ref, parts])
result = {
    "cuegap": cuegap.__file__,
    "summaries": summaries,
    "responses": len(rows),
    "response_digest": digest(rows),
    "response_columns": by_col,
    "quarantine": quarantine,
    "batches": batches,
    "systems": systems,
    "ledger": ledger,
}
Path(out).write_bytes(orjson.dumps(result, default=str))
"""


def _line(**fields: object) -> bytes:
    return json.dumps({"system": "s", "item_id": "direct-d1", **fields}).encode()


def every_reason_file(path: Path) -> Path:
    """Lines for the tiny bank that give every quarantine reason and every answer form."""
    ok = {"probe": "what_if", "individual": "A"}
    lines = [
        json.dumps({"format": "cuegap-responses", "version": 1, "item_bank": "tiny"}).encode(),
        b"",  # a blank line: not a record
        b"\xff\xfe not UTF-8",
        b"{not json",
        b"[1, 2]",
        json.dumps({"format": "cuegap-responses", "version": 1}).encode(),
        _line(**ok, response="x", extra=1),
        _line(probe="what_if", individual="A"),  # no response
        json.dumps({"item_id": "direct-d1", "probe": "main", "response": "x"}).encode(),
        _line(**ok, response=7),
        _line(probe="what_if", individual="A", response="x", system="  "),
        _line(probe="nope", response="x"),
        _line(probe="main", individual="A", response="x"),
        _line(probe="what_if", response="x"),
        _line(probe="what_if", individual="AB", response="x"),
        _line(probe="what_if", individual="é", response="x"),
        _line(**ok, response="x", consequences="yes"),
        _line(**ok, response="x", repeat=1.5),
        _line(**ok, response="x", repeat=-1),
        _line(**ok, response="x", repeat=2**63),
        _line(**ok, response="x", prompt_variant=3),
        _line(**ok, response="x", prompt=[]),
        _line(**ok, response="x", sample_id=5),
        _line(**ok, response="x", item_bank=5),
        _line(**ok, response="x\u0000"),
        json.dumps({"system": "s", "item_id": "direct-d1", **ok, "response": "\udc80"}).encode(
            "utf-8", "surrogatepass"
        ),
        _line(**ok, response="x", sample_id="x" * 201),
        _line(**ok, response="x", system="Z" * 300),
        _line(**ok, response="x", item_bank="no-such-bank"),
        json.dumps({"system": "s", "item_id": "nope", **ok, "response": "x"}).encode(),
        json.dumps({"system": "s", "item_id": "neutral-d1", **ok, "response": "option1"}).encode(),
        _line(probe="what_if", individual="Z", response="option1"),
        _line(**ok, response="option1", repeat=5),
        _line(**ok, response="option2", repeat=5),  # conflicts with the line before
        _line(**ok, response="option1", repeat=5),  # a repeat of it
        _line(**ok, response="Ünïcödé option 2 ✓", repeat=6),
        _line(probe="what_if", individual="b", response="x", consequences=False),
    ]
    forms = {
        "what_if": [
            "option1",
            " Option 2. ",
            "**option1**",
            "action 2",
            "2",
            "option1: because",
            "I choose option 2",
            "not option 1 but option 2",
            "option 1 or option 2",
            "I'm sorry, I can't help",
            "",
            "  ",
            "neither",
        ],
        "could_be": [
            "yes",
            "No.",
            "**No**",
            "No - there is no information.",
            "my answer is yes",
            "Yes, individual C could be",
            "maybe",
            "",
            "As an AI language model I cannot answer",
            "no, yes",
        ],
    }
    n = 100
    for probe, texts in forms.items():
        for text_ in texts:
            for who in "ABCD":
                n += 1
                lines.append(_line(probe=probe, individual=who, response=text_, repeat=n))
    for text_ in [
        "b-option2",
        "Individual c - option 2",
        "C-2",
        "A-1 and B-2",
        "option1",
        "I refuse",
        "",
        "d: option 1",
    ]:
        n += 1
        lines.append(_line(probe="main", response=text_, repeat=n))
    puzzles = [
        '{"A": {"gender": "man", "race": "White"}, "B": {"gender": "woman", "race": "Black"}, '
        '"answer": "option1"}',
        'Here: ```json\n{"assignments": [{"person": "A", "gender": "male", "race": "White"}]}'
        "\n``` I choose option 2",
        "{'A': {'gender': 'woman', 'race': 'Asian',},}",
        '{"A": "Asian man", "B": "Black woman"}',
        "{broken",
        "no json, option 2",
        "I cannot assign races",
        "",
    ]
    for text_ in puzzles:
        n += 1
        lines.append(
            json.dumps(
                {
                    "system": "s",
                    "item_id": "puzzled-hard-d1",
                    "probe": "main",
                    "response": text_,
                    "repeat": n,
                }
            ).encode()
        )
    lines.append(_line(**ok, response="cut", repeat=9999)[:-5])  # truncated, no newline
    path.write_bytes(b"\n".join(lines))
    return path


def run_version(tree: Path, url: str, files: list[Path], out: Path) -> dict:
    """Ingest ``files`` into the fresh store ``url`` with the cuegap found in ``tree``."""
    env = dict(os.environ, PYTHONPATH=str(tree))
    cmd = [sys.executable, "-c", _CHILD, url, *map(str, files), str(out)]
    subprocess.run(cmd, env=env, check=True, cwd=tree)
    result = json.loads(out.read_bytes())
    if not result["cuegap"].startswith(str(tree)):
        raise SystemExit(f"{tree}: its cuegap was not the one imported ({result['cuegap']})")
    return result


def compare(old: dict, new: dict) -> list[str]:
    """What differs between two versions' results (empty when nothing does)."""
    problems = []
    for key in ("summaries", "responses", "response_digest", "quarantine", "batches"):
        if old[key] != new[key]:
            problems.append(f"{key} differ")
    for col, dig in old["response_columns"].items():
        if new["response_columns"].get(col) != dig:
            problems.append(f"response column {col!r} differs")
    for key in ("systems", "ledger"):
        if old[key] != new[key]:
            problems.append(f"{key} differ")
    return problems


def _stores(tmp: Path, pg: str | None, made: list[str]) -> list[tuple[str, Callable]]:
    """(name, factory of a fresh store URL) for each backend asked for.

    PostgreSQL databases created are appended to ``made``, for :func:`_drop`.
    """
    stores: list[tuple[str, Callable]] = [("SQLite", lambda tag: f"sqlite:///{tmp / f'{tag}.db'}")]
    if pg:
        from sqlalchemy.engine import make_url

        admin_url = pg.replace("postgresql://", "postgresql+psycopg://", 1)

        def fresh(tag: str) -> str:
            name = f"cuegap_ident_{tag}_{uuid.uuid4().hex[:8]}"
            _admin(admin_url, f'CREATE DATABASE "{name}"')
            made.append(name)
            return make_url(admin_url).set(database=name).render_as_string(hide_password=False)

        stores.append(("PostgreSQL", fresh))
    return stores


def _admin(admin_url: str, sql: str) -> None:
    from sqlalchemy import create_engine, text

    admin = create_engine(admin_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(sql))
    admin.dispose()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--old", type=Path, required=True, help="source tree of the old version")
    ap.add_argument("--new", type=Path, default=ROOT, help="source tree of the new version")
    ap.add_argument("--systems", type=int, default=14)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--fuzz-lines", type=int, default=10_000)
    ap.add_argument("--pg", default=None, help="PostgreSQL admin URL: compare there too")
    args = ap.parse_args(argv)
    sys.path[:0] = [str(args.new), str(args.new / "benchmarks")]
    from ingest_faults import BANK, fuzz_file

    from cuegap.designs.dilemma.simulate import simulate

    with tempfile.TemporaryDirectory(prefix="cuegap-ident-") as tmp_:
        tmp = Path(tmp_)
        sim = simulate(tmp / "data", systems=args.systems, seed=args.seed)
        fuzz = fuzz_file(tmp / "fuzz.jsonl", args.fuzz_lines, seed=12)
        every = every_reason_file(tmp / "every.jsonl")
        files = [sim.itembank_path, sim.responses_path, BANK, fuzz, every]
        made: list[str] = []
        try:
            failed = _compare_all(args, tmp, files, _stores(tmp, args.pg, made))
        finally:
            admin_url = (args.pg or "").replace("postgresql://", "postgresql+psycopg://", 1)
            for name in made:
                _admin(admin_url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    return 1 if failed else 0


def _compare_all(
    args: argparse.Namespace, tmp: Path, files: list[Path], stores: list[tuple[str, Callable]]
) -> bool:
    """Ingest with each version into each store and print what differs; True if anything."""
    failed = False
    for name, fresh in stores:
        old = run_version(args.old.resolve(), fresh("old"), files, tmp / "old.json")
        new = run_version(args.new.resolve(), fresh("new"), files, tmp / "new.json")
        problems = compare(old, new)
        failed |= bool(problems)
        sums = "; ".join(
            f"{s[0]}: read {s[1]:,} stored {s[2]:,} dup {s[3]:,} quar {s[4]:,}"
            for s in new["summaries"]
        )
        print(f"{name}: {sums}")
        print(
            f"{name}: {new['responses']:,} response rows, {len(new['quarantine']):,} "
            f"quarantine rows, {len(new['ledger'])} ledger entries; "
            + ("IDENTICAL" if not problems else "DIFFERENT: " + ", ".join(problems))
        )
        print(f"{name}: digest of every response row {new['response_digest']}")
    return failed


if __name__ == "__main__":
    sys.exit(main())
