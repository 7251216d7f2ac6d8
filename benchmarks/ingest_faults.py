"""Ingest fault figures: fuzzed lines and kill -9 during ingest and store creation.

Fuzz: N response lines, most of them damaged at random (invalid UTF-8, NUL, lone
surrogates, out-of-range numbers, over-long fields, wrong types, cut lines, repeats and
conflicts) are ingested into a fresh store; every line must be accounted for
(read = stored + duplicate + quarantined), every quarantine row must carry a reason, and
nothing may raise. With --pg, the same file is ingested into PostgreSQL too and must give
the same counts.

Kill: K times, `cuegap init` or `cuegap ingest` (a clean file) is killed with SIGKILL
after a random delay; the file is then ingested again, and the store must hold exactly the
responses of a store that was never interrupted.

    python benchmarks/ingest_faults.py                       # 10,000 lines, 20 kills
    python benchmarks/ingest_faults.py --lines 500 --kills 2 # what the test suite runs
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from sqlalchemy import func, select

from cuegap.ingest import ingest_path
from cuegap.schema import Quarantine, Response, make_engine, upgrade

ROOT = Path(__file__).parent.parent
BANK = ROOT / "tests" / "data" / "tiny_bank.json"
ITEMS = [("direct-d1", "what_if"), ("direct-d1", "could_be"), ("direct-d2", "what_if")]


def _line(rng: random.Random, i: int) -> dict:
    item, probe = rng.choice(ITEMS)
    return {
        "system": f"s{i % 3}",
        "item_id": item,
        "probe": probe,
        "individual": rng.choice("ABCD"),
        "repeat": i // 8,
        "response": rng.choice(["option1", "option2", "Yes.", "No", "I refuse"]),
    }


def _damage(rng: random.Random, obj: dict) -> bytes:
    kind = rng.randrange(12)
    if kind == 0:
        obj["response"] += "\u0000"
    elif kind == 1:
        obj["repeat"] = rng.choice([2**63, 2**31, -1, 1.5, "3"])
    elif kind == 2:
        obj["sample_id"] = "x" * rng.choice([199, 200, 201, 5000])
    elif kind == 3:
        obj[rng.choice(["system", "item_id", "probe", "individual"])] = rng.choice(
            [None, 7, [], "", "Z" * 300]
        )
    elif kind == 4:
        obj["response"] = "\udc80 lone"
    elif kind == 5:
        obj["item_id"] = "no-such-item"
    raw = json.dumps(obj).encode("utf-8", "surrogatepass")
    if kind == 6:
        raw = raw[: rng.randrange(1, len(raw))]
    elif kind == 7:
        pos = rng.randrange(len(raw))
        raw = raw[:pos] + bytes([rng.randrange(128, 256)]) + raw[pos + 1 :]
    elif kind == 8:
        raw = b"\xef\xbb\xbf" + raw
    return raw


def fuzz_file(path: Path, lines: int, seed: int) -> Path:
    """Write ``lines`` response lines after a header, about two thirds damaged."""
    rng = random.Random(seed)
    out = [json.dumps({"format": "cuegap-responses", "version": 1, "item_bank": "tiny"}).encode()]
    for i in range(lines):
        obj = _line(rng, i)
        out.append(_damage(rng, obj) if rng.random() < 0.67 else json.dumps(obj).encode())
    path.write_bytes(b"\n".join(out) + b"\n")
    return path


def fuzz(url: str, path: Path) -> tuple[int, int, int, int, int]:
    """Ingest the fuzz file into a fresh store at ``url``: (read, stored, dup, quar, bad)."""
    engine = make_engine(url)
    upgrade(engine)
    ingest_path(engine, BANK)
    s = ingest_path(engine, path, batch_size=997)  # several transactions
    with engine.connect() as conn:
        stored = conn.execute(select(func.count(Response.id))).scalar_one()
        no_reason = conn.execute(
            select(func.count(Quarantine.id)).where(func.length(Quarantine.reason) == 0)
        ).scalar_one()
    engine.dispose()
    assert stored == s.stored, (stored, s)
    return s.read, s.stored, s.duplicate, s.quarantined, no_reason


def _snapshot(url: str) -> set[tuple[str, str]]:
    engine = make_engine(url)
    with engine.connect() as conn:
        rows = set(conn.execute(select(Response.response_key, Response.content_hash)).all())
    engine.dispose()
    return rows


def _cli(url: str, *args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "cuegap.cli", "--db", url, *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def kills(workdir: Path, trials: int, seed: int, clean_file: Path) -> tuple[int, int]:
    """Kill init or ingest ``trials`` times on SQLite; returns (consistent, trials)."""
    rng = random.Random(seed)
    reference = f"sqlite:///{workdir / 'reference.db'}"
    assert _cli(reference, "ingest", str(BANK), str(clean_file)).wait() == 0
    want = _snapshot(reference)
    ok = 0
    for t in range(trials):
        url = f"sqlite:///{workdir / f'kill{t}.db'}"
        target = ("init",) if t % 4 == 0 else ("ingest", str(BANK), str(clean_file))
        proc = _cli(url, *target)
        time.sleep(rng.uniform(0.3, 2.5))  # the interpreter start takes most of a second
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        done = _cli(url, "ingest", str(BANK), str(clean_file)).wait() == 0
        ok += done and _snapshot(url) == want
    return ok, trials


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lines", type=int, default=10_000, help="fuzzed lines")
    parser.add_argument("--kills", type=int, default=20, help="kill -9 trials")
    parser.add_argument("--clean-lines", type=int, default=60_000, help="lines killed into")
    parser.add_argument("--seed", type=int, default=12)
    parser.add_argument("--pg", default=os.environ.get("CUEGAP_BENCH_PG_URL", ""))
    args = parser.parse_args()
    failed = False
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        path = fuzz_file(work / "fuzz.jsonl", args.lines, args.seed)
        stores = {"SQLite": f"sqlite:///{work / 'fuzz.db'}"}
        if args.pg:
            stores["PostgreSQL"] = args.pg
        counts = {}
        for name, url in stores.items():
            read, stored, dup, quar, bad = counts[name] = fuzz(url, path)
            balanced = read == stored + dup + quar == args.lines
            failed |= not balanced or bad > 0
            print(
                f"fuzz {name}: {read:,} lines in = {stored:,} stored + {dup:,} duplicate + "
                f"{quar:,} quarantined ({'balanced' if balanced else 'NOT BALANCED'}); "
                f"quarantine rows without a reason: {bad}"
            )
        if len(counts) == 2:
            same = len(set(counts.values())) == 1
            failed |= not same
            print(f"fuzz SQLite vs PostgreSQL: {'same counts' if same else 'DIFFERENT counts'}")
        if args.kills:
            rng = random.Random(args.seed)
            clean = work / "clean.jsonl"
            lines = [{"format": "cuegap-responses", "version": 1, "item_bank": "tiny"}]
            lines += [_line(rng, i) for i in range(args.clean_lines)]
            clean.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
            ok, n = kills(work, args.kills, args.seed, clean)
            failed |= ok != n
            print(f"kill -9: {ok} of {n} killed init/ingest runs re-ingest to the clean store")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
