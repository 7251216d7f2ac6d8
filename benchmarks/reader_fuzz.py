"""Fuzz every registered reader with mutated copies of its genuine fixture (issue 30).

For each reader a real fixture (``tests/data``) is copied with its neighbours (results
file, config snapshots) and mutated with a fixed seed: lines of a JSONL file, members of an
inspect ``.eval`` zip or the records of a JSON document get values nested 1,000+ levels
deep, wrong types (NaN, 1.5, 2**63, lists, objects, null, empty strings), invalid UTF-8,
NUL bytes, lone surrogates, huge fields and cut lines; one variant damages the first three
lines. Each mutated file is ingested (format detected, not forced) and must hold:

* no exception but a one-line :class:`~cuegap.ingest.IngestError` (item banks, which are
  stored whole or refused) naming the file and no longer than ``MAX_MESSAGE``; a response
  file is never refused for a damaged record;
* ``read = stored + duplicate + quarantined``, and at least one record read per record in
  the file (no record silently lost);
* every quarantine row has a reason, at most ``MAX_REASON`` characters, that is no Python
  exception's text (``...Error``: an unexpected failure caught, not a reason given);
* the same file ingested again stores nothing new and quarantines the same lines.

    python benchmarks/reader_fuzz.py                   # 40 variants per reader, SQLite
    python benchmarks/reader_fuzz.py --pg URL          # ... and PostgreSQL
    python benchmarks/reader_fuzz.py --variants 4      # what the test suite runs
"""

from __future__ import annotations

import argparse
import json
import random
import re
import shutil
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from sqlalchemy import select  # noqa: E402

from cuegap.ingest import IngestError, ingest_path  # noqa: E402
from cuegap.schema import Quarantine, make_engine, upgrade  # noqa: E402

DATA = ROOT / "tests" / "data"
MAX_REASON = 1_000  # quarantine reasons are cut to 500 characters plus a short note
MAX_MESSAGE = 1_000
_PY_ERROR = re.compile(r"\b(?:[A-Z][a-z]+)+Error\b|Traceback|\bmaximum recursion\b")
DEEP = "\x00DEEP\x00"
UNITS = 40  # records per mutated response file (the fixture's repeated)
BANKS = {"itembank", "bbq", "diffaware", "cuegap-qa-itembank", "moral-safety"}


@dataclass(frozen=True)
class Case:
    """One reader's fixture: ``target`` (relative to ``tree``) is mutated."""

    reader: str
    tree: str
    target: str
    banks: tuple[str, ...] = ()
    unit: str = "line"  # line (JSONL), member (.eval zip), document (one JSON document), csv
    header: bool = False  # the first line is a header, left alone
    ingest: str = ""  # what is ingested, relative to ``tree`` (default: the target)
    mapping: str = ""  # a mapping file, relative to ``tree``

    @property
    def label(self) -> str:
        """The reader and the fixture (a reader may have several cases)."""
        return f"{self.reader}:{Path(self.target).name}"


def _moral_safety() -> list[Case]:
    """The seed paper's CSV folder, when this checkout has it (``shared/data``)."""
    from cuegap.ingest.moral_safety import find_moral_safety_dir

    found = find_moral_safety_dir()
    if found is None or not (found / "majority_vote_annotated.csv").is_file():
        return []
    return [Case("moral-safety", str(found), "direct_dilemmas.csv", unit="csv", ingest=".")]


CASES = [
    Case("itembank", ".", "tiny_bank.json", unit="document"),
    Case("generic", ".", "tiny_responses.jsonl", ("tiny_bank.json",), header=True),
    Case("mac-fairness-conversation", "conv/ws", "bulk/again.jsonl"),
    Case("mac-fairness-transcript", "mac", "bulk/transcripts.jsonl", ("pv/da_bank.jsonl",)),
    Case("inspect-bbq", "runners/inspect_bbq", "bbq_mini.eval", ("qa/bbq_mini.jsonl",), "member"),
    Case(
        "lm-eval-bbq",
        "runners/lm_eval_bbq/dummy",
        "samples_bbq_mini_2026-11-25T12-30-03.016619.jsonl",
        ("qa/bbq_mini.jsonl",),
    ),
    Case("inspect-ai", "runners/inspect_ai", "cue_probes.eval", ("tiny_bank.json",), "member"),
    Case(
        "lm-eval",
        "runners/lm_eval/dummy",
        "samples_cue_mc_2026-11-21T06-17-01.915938.jsonl",
        ("tiny_bank.json",),
    ),
    Case("promptfoo", "runners/promptfoo", "results_v3.json", ("tiny_bank.json",), "document"),
    Case("promptfoo", "runners/promptfoo", "results_v2.json", ("tiny_bank.json",), "document"),
    Case("inspect-ai", "runners/inspect_ai", "cue_probes.json", ("tiny_bank.json",), "document"),
    Case(
        "openai-batch",
        "runners/openai_batch",
        "batch_output.jsonl",
        ("tiny_bank.json",),
        mapping="mapping.toml",
    ),
    Case("helm", "runners/helm/cue_probes", "scenario_state.json", ("tiny_bank.json",), "document"),
    Case("bbq", "qa", "bbq_mini.jsonl"),
    Case("diffaware", "pv", "da_bank.jsonl"),
    Case("cuegap-qa-itembank", "qa", "implicit_bank.jsonl", header=True),
    Case("bbq-results", "qa", "bbq_results.jsonl", ("qa/bbq_small.jsonl", "qa/mac_religion.jsonl")),
    Case(
        "implicit-bbq",
        "../fixtures/bbq_family/ImplicitBBQ/data",
        "Gender_identity.jsonl",
        ("../fixtures/bbq_family/BBQ/data/Gender_identity.jsonl",),
    ),
    *_moral_safety(),
]


def _bad_value(rng: random.Random, huge: int) -> Any:
    return rng.choice(
        [DEEP, float("nan"), 1.5, 2**63, -1, 1e308, True, None, [], {}, [1, [2]], {"a": {}},
         "", "x" * huge, "a\x00b", "\ud800", 0]
    )  # fmt: skip


def _mutate_obj(rng: random.Random, obj: Any, huge: int) -> Any:
    """``obj`` with one value, at a random path, replaced by a bad one."""
    if not isinstance(obj, dict | list) or not obj:
        return _bad_value(rng, huge)
    node = obj
    while True:
        keys = list(node) if isinstance(node, dict) else list(range(len(node)))
        k = rng.choice(keys)
        child = node[k]
        if isinstance(child, dict | list) and child and rng.random() < 0.5:
            node = child
            continue
        node[k] = _bad_value(rng, huge)
        return obj


def _dump(obj: Any, rng: random.Random) -> bytes:
    text = json.dumps(obj)  # NaN as the bare token, lone surrogates as \ud800 escapes
    depth = rng.choice([300, 1_000, 5_000])
    return text.replace(json.dumps(DEEP), "[" * depth + "]" * depth).encode()


def _damage_bytes(rng: random.Random, raw: bytes) -> bytes:
    kind = rng.randrange(4)
    pos = rng.randrange(max(1, len(raw)))
    if kind == 0:
        return raw[: max(1, pos)]  # cut (never to nothing: a blank line is no record)
    if kind == 1:
        return raw[:pos] + bytes([rng.randrange(128, 256)]) + raw[pos:]  # invalid UTF-8
    if kind == 2:
        return raw[:pos] + b"\x00" + raw[pos:]
    return b"\xff\xfe" + raw


def mutate_unit(rng: random.Random, raw: bytes, huge: int) -> bytes:
    """One record's bytes, damaged: a bad value at a random path or bad bytes."""
    if rng.random() < 0.25:
        return _damage_bytes(rng, raw)
    try:
        obj = json.loads(raw)
    except ValueError:
        return _damage_bytes(rng, raw)
    return _dump(_mutate_obj(rng, obj, huge), rng)


def _lines(src: Path, dst: Path, rng: random.Random, case: Case, huge: int, head: bool) -> int:
    lines = [ln for ln in src.read_bytes().splitlines() if ln.strip()]
    keep = lines[:1] if case.header else []
    body = lines[len(keep) :]
    if case.reader in BANKS:  # a bank is stored whole or refused: one damaged entry
        out = list(body)
        k = rng.randrange(len(out))
        out[k] = mutate_unit(rng, out[k], huge)
    else:  # many damaged records per file, the good ones repeated (duplicates)
        body = body * max(1, -(-UNITS // len(body)))
        out = [mutate_unit(rng, ln, huge) if rng.random() < 0.6 else ln for ln in body]
    if head and case.reader not in BANKS:  # a damaged start: the first three lines are not JSON
        out[: min(3, len(out) - 1)] = [b"\x80\x81 garbage {", b'{"cut": ', b"\xff" * 20][
            : min(3, len(out) - 1)
        ]
    dst.write_bytes(b"\n".join(keep + [ln.replace(b"\n", b" ") for ln in out]) + b"\n")
    return len(body)


def _members(src: Path, dst: Path, rng: random.Random, huge: int) -> int:
    from cuegap.ingest._inspect_zip import _member_bytes

    n = 0
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w", zipfile.ZIP_DEFLATED) as zout:
        for info in zin.infolist():
            data = _member_bytes(zin, info)
            if info.filename.startswith("samples/"):
                n += 1
                if rng.random() < 0.6:
                    data = mutate_unit(rng, data, huge)
            zout.writestr(info.filename, data)
    return n


def _document(src: Path, dst: Path, rng: random.Random, huge: int) -> int:
    obj = json.loads(src.read_bytes())
    for _ in range(rng.randrange(1, 4)):
        obj = _mutate_obj(rng, obj, huge)
    dst.write_bytes(_dump(obj, rng))
    return 0  # records per document are not counted


def _csv(src: Path, dst: Path, rng: random.Random, huge: int) -> int:
    """One cell of one row replaced by a bad one, or the row's bytes damaged."""
    import csv
    import io

    rows = list(csv.reader(io.StringIO(src.read_text("utf-8"), newline="")))
    k = rng.randrange(1, len(rows))
    if rows[k]:
        cell = rng.randrange(len(rows[k]))
        rows[k][cell] = rng.choice(["", "x" * huge, "a\x00b", "NaN", "-1", "\ud800", "1.5"])
    if rng.random() < 0.3:
        rows[k] = rows[k][: rng.randrange(len(rows[k]) + 1)] + ["extra"] * rng.randrange(2)
    out = io.StringIO(newline="")
    csv.writer(out).writerows(rows)
    raw = out.getvalue().encode("utf-8", "surrogatepass")
    if rng.random() < 0.25:
        raw = _damage_bytes(rng, raw)
    dst.write_bytes(raw)
    return 0


def make_variant(case: Case, work: Path, seed: int, huge: int) -> tuple[Path, int]:
    """Copy the case's tree under ``work`` and mutate its target; (path, records in it)."""
    rng = random.Random(seed)
    tree = work / "tree"
    shutil.rmtree(tree, ignore_errors=True)
    shutil.copytree(DATA / case.tree, tree)
    src = DATA / case.tree / case.target
    dst = tree / case.target
    if case.unit == "member":
        n = _members(src, dst, rng, huge)
    elif case.unit == "document":
        n = _document(src, dst, rng, huge)
    elif case.unit == "csv":
        n = _csv(src, dst, rng, huge)
    else:
        n = _lines(src, dst, rng, case, huge, head=seed % 4 == 1)
    return (tree / case.ingest if case.ingest else dst), n


def _rows(engine: Any, path: Path) -> list[tuple[Any, ...]]:
    with engine.connect() as conn:
        q = select(Quarantine.line_no, Quarantine.field, Quarantine.reason).where(
            Quarantine.source_path == str(path.resolve())
        )
        return [tuple(r) for r in conn.execute(q)]


def _where(exc: BaseException | None) -> str:
    """`` (at file:line)`` of the innermost cuegap frame of an exception's traceback."""
    import traceback

    if exc is None:
        return ""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if "/cuegap/" in f.filename]
    return f" (at {Path(frames[-1].filename).name}:{frames[-1].lineno})" if frames else ""


def check_variant(engine: Any, case: Case, path: Path, n: int) -> list[str]:
    """Ingest ``path`` twice; the findings (empty when every rule holds)."""
    bad: list[str] = []
    bank_reader = case.reader in BANKS
    mapping = path.parent / case.mapping if case.mapping else None
    try:
        s = ingest_path(engine, path, batch_size=7, mapping=mapping)
    except IngestError as exc:
        msg = str(exc)
        if "already in the store with different content" in msg:
            return bad  # an earlier variant of the bank was stored: a sound refusal
        named = path.name in msg or case.target in msg
        if "\n" in msg or len(msg) > MAX_MESSAGE or not named:
            bad.append(f"refusal not one bounded line naming the file: {msg[:200]!r}")
        elif case.unit == "line" and not re.search(r"\bline \d", msg):
            bad.append(f"refusal names no line: {msg[:200]!r}")
        if _PY_ERROR.search(msg):
            bad.append(f"refusal shows an internal error: {msg[:200]!r}")
        if not bank_reader and case.unit != "document":
            bad.append(f"whole file refused: {msg[:200]!r}{_where(exc.__cause__)}")
        return bad
    except ValueError as exc:  # no reader recognises it
        if case.unit == "document" and len(str(exc)) <= MAX_MESSAGE:
            return []  # a document whose header was damaged
        return [f"not recognised: {str(exc)[:200]}"]
    except BaseException as exc:
        return [f"{type(exc).__name__} escaped: {str(exc)[:200]}{_where(exc)}"]
    if s.read != s.stored + s.duplicate + s.quarantined:
        bad.append(f"unbalanced: {s.read} != {s.stored}+{s.duplicate}+{s.quarantined}")
    if s.read < n and not bank_reader:
        bad.append(f"records lost: {n} in the file, {s.read} read")
    for line, field, reason in _rows(engine, path):
        if not reason or len(reason) > MAX_REASON:
            bad.append(f"line {line}: reason empty or {len(reason or '')} chars long")
        elif field is None and "unexpected type or size" in reason:
            bad.append(f"line {line}: caught by the last guard, no field named: {reason[:160]!r}")
        elif _PY_ERROR.search(reason):
            bad.append(f"line {line}: internal error as reason: {reason[:160]!r}")
    if bank_reader:
        return bad
    try:
        again = ingest_path(engine, path, batch_size=7, mapping=mapping)
    except BaseException as exc:
        return [*bad, f"second ingest: {type(exc).__name__}: {str(exc)[:200]}"]
    if again.stored or (again.read, again.quarantined) != (s.read, s.quarantined):
        bad.append(f"second ingest differs: {s} then {again}")
    return bad


def run(
    url_for: Callable[[str], str],
    variants: int,
    seed: int,
    huge: int,
    cases: list[Case] | None = None,
) -> dict[str, Any]:
    """Every case (or ``cases``), ``variants`` mutated files each: {case label: (files,
    findings list)}."""
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for case in CASES if cases is None else cases:
            findings: list[str] = []
            engine = make_engine(url_for(case.label))
            upgrade(engine)
            for bank in case.banks:
                ingest_path(engine, DATA / bank)
            for v in range(variants):
                work = Path(tmp) / f"{case.label}-{v}"
                path, n = make_variant(case, work, seed * 1_000 + v, huge)
                findings += [f"variant {v}: {f}" for f in check_variant(engine, case, path, n)]
            engine.dispose()
            out[case.label] = (variants, findings)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--variants", type=int, default=40)
    ap.add_argument("--seed", type=int, default=30)
    ap.add_argument("--huge", type=int, default=1_000_000, help="a huge field's characters")
    ap.add_argument("--show", type=int, default=5, help="findings printed per reader")
    ap.add_argument("--pg", default="", help="a PostgreSQL server URL (an empty database)")
    ap.add_argument("--readers", nargs="*", help="only these readers' cases (default all)")
    ap.add_argument("--no-sqlite", action="store_true", help="PostgreSQL only (with --pg)")
    args = ap.parse_args()
    cases = [c for c in CASES if not args.readers or c.reader in args.readers]
    with tempfile.TemporaryDirectory() as tmp:
        backends: dict[str, Callable[[str], str]] = {}
        if not (args.pg and args.no_sqlite):
            backends["SQLite"] = lambda name: f"sqlite:///{tmp}/{name}.db"
        if args.pg:
            backends["PostgreSQL"] = _pg_urls(args.pg)
        total = 0
        for backend, url_for in backends.items():
            t0 = time.perf_counter()
            result = run(url_for, args.variants, args.seed, args.huge, cases)
            for reader, (files, findings) in result.items():
                total += len(findings)
                print(f"{backend} {reader}: {files} files, {len(findings)} findings")
                for f in findings[: args.show]:
                    print(f"    {f}")
            print(f"{backend}: {time.perf_counter() - t0:.1f} s")
    print(f"findings: {total}")
    sys.exit(1 if total else 0)


def _pg_urls(server: str) -> Callable[[str], str]:
    """A fresh database per reader on the server at ``server``."""
    import uuid

    from sqlalchemy import create_engine, text

    admin = create_engine(server, isolation_level="AUTOCOMMIT")

    def url_for(reader: str) -> str:
        name = f"cuegap_fuzz_{uuid.uuid4().hex[:10]}"
        with admin.connect() as conn:
            conn.execute(text(f'CREATE DATABASE "{name}"'))
        return server.rsplit("/", 1)[0] + f"/{name}"

    return url_for


if __name__ == "__main__":
    main()
