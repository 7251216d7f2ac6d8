"""Do two versions of cuegap export the same result tables? Analyses the same data with each.

For a restructuring that must change no number (issue 26): check out the old version
somewhere (``git worktree add /tmp/old <commit>``) and run::

    .venv/bin/python benchmarks/exports_identical.py --old /tmp/old
    .venv/bin/python benchmarks/exports_identical.py --old /tmp/old --scale paper  # long

Each version, in fresh processes with its own source tree first on ``PYTHONPATH``,
simulates every design's dataset with the same seed (the new version's simulator writes
the files, so both analyse identical inputs), ingests it into a fresh SQLite store, runs
``cuegap analyze --design D`` and exports every stored result table to CSV. The CSVs are
compared byte for byte. Tables only the new version writes (``verdict_records``) are
listed, not compared; a ``verdicts`` table whose only differences are in ``reason`` is
reported as such (reason wording may change, numbers may not). Exit status 1 when any
number differs.

``--fixtures`` also ingests real files from the tests' fixtures (the BBQ/ImplicitBBQ
folders, the prompt-variance files, a MAC-Fairness workspace; the dilemma design's runner
fixtures are too small for its analysis) into both versions and compares their exports the same way.

Measured on 2026-11-27 against 0110381 (before issue 26's interface), two systems per
design, small scale: every table of the four designs identical, the QA verdicts' reason
wording changed (it now states only what the rule tested), and the new tables
``verdict_records`` (all designs) and the prompt-variance ``verdicts``.
"""

from __future__ import annotations

import argparse
import csv
import io
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).parent.parent
DESIGNS = ("dilemma", "qa", "prompt-variance", "conversation")
NEW_ONLY = {"verdict_records"}  # and the prompt-variance design's verdicts (new in issue 26)
NEW_IN = {("prompt-variance", "verdicts")}
#: ``--fixtures``: real files in the tests' fixtures, as ``cuegap ingest`` takes them.
FIXTURES = (
    ("qa", ["tests/fixtures/bbq_family/BBQ", "tests/fixtures/bbq_family/ImplicitBBQ",
            "--system", "gpt-4o-fixture"]),
    ("prompt-variance", ["tests/data/pv/bbq_bank.jsonl", "tests/data/pv/da_bank.jsonl",
                         "tests/data/pv/results.jsonl"]),
    ("conversation", ["tests/data/conv/ws"]),
)  # fmt: skip


def _cuegap(tree: Path, *args: str) -> str:
    env = {**os.environ, "PYTHONPATH": str(tree), "COLUMNS": "200"}
    # cwd=tree: ``python -m`` puts the working directory first on sys.path
    out = subprocess.run([sys.executable, "-m", "cuegap.cli", *args], env=env, text=True,
                         capture_output=True, check=False, cwd=tree)  # fmt: skip
    if out.returncode != 0:
        raise SystemExit(f"{tree}: cuegap {' '.join(args)} failed:\n{out.stdout}{out.stderr}")
    return out.stdout


def _tables(tree: Path, db: str) -> list[str]:
    code = (
        "from cuegap.schema import make_engine;from sqlalchemy import text;"
        f"e=make_engine({db!r});"
        "c=e.connect();print('\\n'.join(f'{a}:{n}' for a,n in c.execute(text("
        "'SELECT analysis_id, name FROM analysis_table ORDER BY analysis_id, name'))))"
    )
    env = {**os.environ, "PYTHONPATH": str(tree)}
    out = subprocess.run([sys.executable, "-c", code], env=env, text=True, capture_output=True,
                         check=True, cwd=tree)  # fmt: skip
    return [line for line in out.stdout.splitlines() if line]


def _version(tree: Path) -> str:
    code = "import cuegap; print(cuegap.__file__)"
    env = {**os.environ, "PYTHONPATH": str(tree)}
    out = subprocess.run([sys.executable, "-c", code], env=env, text=True, capture_output=True,
                         check=True, cwd=tree)  # fmt: skip
    found = Path(out.stdout.strip()).parent.parent
    if found.resolve() != tree.resolve():
        raise SystemExit(f"{tree}: its processes import cuegap from {found}, not from it")
    return str(found)


def _export_all(tree: Path, ingest: list[str], design: str, work: Path) -> dict[str, bytes]:
    db = f"sqlite:///{work / 'store.db'}"
    _cuegap(tree, "--db", db, "ingest", *ingest)
    _cuegap(tree, "--db", db, "analyze", "--design", design, "--boot", "200")
    out: dict[str, bytes] = {}
    for entry in _tables(tree, db):
        analysis, name = entry.split(":", 1)
        path = work / f"{analysis}-{name}.csv"
        _cuegap(tree, "--db", db, "export", name, "--analysis", analysis, "--out", str(path))
        out[name if analysis == "1" else f"{name}@{analysis}"] = path.read_bytes()
    return out


def _only_reason_differs(old: bytes, new: bytes) -> bool:
    a = list(csv.DictReader(io.StringIO(old.decode())))
    b = list(csv.DictReader(io.StringIO(new.decode())))
    if len(a) != len(b) or (a and set(a[0]) != set(b[0])):
        return False
    strip = [{k: v for k, v in r.items() if k != "reason"} for r in a]
    return strip == [{k: v for k, v in r.items() if k != "reason"} for r in b]


def _explain(old: bytes, new: bytes) -> str:
    """Where two differing tables differ: columns added or dropped, and for each shared
    column that changed, how many cells and (numbers) the largest absolute change."""
    import pandas as pd

    a = pd.read_csv(io.BytesIO(old), dtype=str, keep_default_na=False)
    b = pd.read_csv(io.BytesIO(new), dtype=str, keep_default_na=False)
    parts = []
    if set(b.columns) - set(a.columns):
        parts.append("new columns " + ", ".join(c for c in b.columns if c not in a.columns))
    if set(a.columns) - set(b.columns):
        parts.append("dropped " + ", ".join(c for c in a.columns if c not in b.columns))
    if len(a) != len(b):
        return "; ".join([*parts, f"{len(a)} rows, now {len(b)}"])
    for col in [c for c in a.columns if c in b.columns]:
        changed = a[col] != b[col]
        if not changed.any():
            continue
        x = pd.to_numeric(a.loc[changed, col], errors="coerce")
        y = pd.to_numeric(b.loc[changed, col], errors="coerce")
        both = x.notna() & y.notna()
        size = f", max |change| {float((x[both] - y[both]).abs().max()):.3g}" if both.any() else ""
        parts.append(f"{col}: {int(changed.sum())} cells{size}")
    return "; ".join(parts) or "same cells, other bytes"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--old", type=Path, required=True, help="the old version's source tree")
    ap.add_argument("--new", type=Path, default=ROOT, help="the new version (default: here)")
    ap.add_argument("--scale", default="small", choices=("small", "paper"))
    ap.add_argument("--systems", type=int, default=3)
    ap.add_argument("--design", action="append", choices=DESIGNS)
    ap.add_argument("--fixtures", action="store_true",
                    help="also compare the runner fixtures in tests/")  # fmt: skip
    args = ap.parse_args()
    for tree in (args.old, args.new):
        print(f"cuegap from {_version(tree)}")
    differ = 0
    for design in args.design or DESIGNS:
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            data = root / "data"
            sim = ["simulate", str(data), "--design", design, "--seed", "11"]
            if design != "dilemma":
                sim += ["--scale", args.scale]
            if not (design == "conversation" and args.scale == "paper"):
                sim += ["--systems", str(args.systems)]
            _cuegap(args.new, *sim)
            exports = {}
            for label, tree in (("old", args.old), ("new", args.new)):
                (root / label).mkdir()
                exports[label] = _export_all(tree, [str(data)], design, root / label)
            differ += _compare(design, exports["old"], exports["new"])
    if args.fixtures:
        for design, ingest in FIXTURES:
            with tempfile.TemporaryDirectory() as tmp:
                root = Path(tmp)
                exports = {}
                for label, tree in (("old", args.old), ("new", args.new)):
                    (root / label).mkdir()
                    paths = [str(ROOT / a) if "/" in a else a for a in ingest]
                    exports[label] = _export_all(tree, paths, design, root / label)
                differ += _compare(f"{design} (fixtures)", exports["old"], exports["new"])
    print(f"{differ} table(s) differ in numbers" if differ else "every number identical")
    return 1 if differ else 0


def _compare(design: str, old: dict[str, bytes], new: dict[str, bytes]) -> int:
    """Print one line per table; the number of tables whose numbers differ."""
    differ = 0
    for name in sorted(set(old) | set(new)):
        base = name.split("@")[0]
        if name not in old:
            new_table = base in NEW_ONLY or (design.split()[0], base) in NEW_IN
            note = "new table, not compared" if new_table else "ONLY IN NEW"
            differ += not new_table
            print(f"{design:16s} {name:36s} {note}")
        elif name not in new:
            differ += 1
            print(f"{design:16s} {name:36s} ONLY IN OLD")
        elif old[name] == new[name]:
            print(f"{design:16s} {name:36s} identical ({len(new[name]):,} bytes)")
        elif base == "verdicts" and _only_reason_differs(old[name], new[name]):
            print(f"{design:16s} {name:36s} numbers identical; reason wording changed")
        else:
            differ += 1
            print(f"{design:16s} {name:36s} DIFFERS: {_explain(old[name], new[name])}")
    return differ


if __name__ == "__main__":
    raise SystemExit(main())
