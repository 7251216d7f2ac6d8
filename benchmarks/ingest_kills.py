"""Kill -9 during ingest, for every design's loader, then recover: is every row sealed?

For each backend (SQLite, and PostgreSQL with --pg) and each design (dilemma responses,
QA answers, prompt-variance answers with their prompt factors, conversation transcripts),
an ingest of a clean file runs in a child process that is killed with SIGKILL after a
random delay (uniform over the time an uninterrupted ingest of that file takes). The
store is then recovered, alternately by ingesting the file again and by ``cuegap init``
(in-process unless --cli-init) followed by ingesting it again, and must:

- hold no ingest batch still marked "running";
- hold no unsealed row: every response, QA answer, conversation and quarantined line
  belongs to an ingest batch with a ledger entry;
- balance every batch (read = stored + duplicate + quarantined), and hold exactly the
  rows of a store that was never interrupted;
- pass ``cuegap verify``, and fail it once the raw text of a row written by the killed
  pass is edited.

    python benchmarks/ingest_kills.py                      # 40 kills per backend
    python benchmarks/ingest_kills.py --kills 8 --pg-kills 4 --scale 0.5 --pg URL  # the test

Prints one line per backend and design with the kills, how many left unsealed rows before
recovery, and how many recovered to a sealed, balanced, verified store.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from sqlalchemy import create_engine, text
from sqlalchemy.engine import Engine, make_url

from cuegap.compliance import verify
from cuegap.designs.conversation._simulate import simulate_conv
from cuegap.designs.prompt_variance._simulate import simulate_pv
from cuegap.designs.qa._simulate import simulate_qa
from cuegap.ingest import ingest_path
from cuegap.schema import make_engine, upgrade

ROOT = Path(__file__).parent.parent
BANK = ROOT / "tests" / "data" / "tiny_bank.json"
ITEMS = [("direct-d1", "what_if"), ("direct-d1", "could_be"), ("direct-d2", "what_if")]
# Row tables that ingest passes write, each with the column a tamper check edits.
ROW_TABLES = {
    "response": "raw_text",
    "qa_response": "raw_text",
    "conversation": "raw",
    "quarantine": "raw",
}
_SEALED = "(SELECT ref_id FROM ledger WHERE kind = 'batch' AND ref_id IS NOT NULL)"
DESIGNS = ("dilemma", "qa", "pv", "conversation")
CHILD = """
import sys, time
from cuegap.ingest import ingest_path
from cuegap.schema import make_engine
engine = make_engine(sys.argv[1])
print("ready", flush=True)
t = time.perf_counter()
ingest_path(engine, sys.argv[2], batch_size=int(sys.argv[3]))
print("done", time.perf_counter() - t, flush=True)
"""


@dataclass
class Design:
    """One design's bank(s), the file whose ingest is killed, and its batch size."""

    name: str
    banks: list[Path]
    path: Path
    batch_size: int


@dataclass
class Tally:
    """Figures of one backend and design."""

    kills: int = 0  # killed before the pass finished
    finished: int = 0  # the pass ended before the kill came
    unsealed_before: int = 0  # trials that left rows unsealed before recovery
    recovered: int = 0  # trials whose store passed every check after recovery
    failures: list[str] = field(default_factory=list)


def _dilemma_file(path: Path, lines: int, seed: int) -> Path:
    """Clean dilemma lines, with repeats (duplicates) and unknown items (quarantined)."""
    rng = random.Random(seed)
    out = [{"format": "cuegap-responses", "version": 1, "item_bank": "tiny"}]
    for i in range(lines):
        item, probe = rng.choice(ITEMS)
        item = item if rng.random() > 0.02 else "no-such-item"  # quarantined
        obj = {"system": f"s{i % 3}", "item_id": item, "probe": probe, "repeat": i // 8}
        obj.update(individual=rng.choice("ABCD"), response=rng.choice(["option1", "No"]))
        out.append(obj)
        if rng.random() < 0.02:
            out.append(obj)  # a repeated line: a duplicate
    path.write_text("\n".join(json.dumps(x) for x in out) + "\n")
    return path


def designs(work: Path, scale: float, seed: int) -> dict[str, Design]:
    """Write each design's data under ``work``; ``scale`` multiplies the file sizes."""
    qa = simulate_qa(
        work / "qa", systems=max(1, round(4 * scale)), templates_per_dimension=2, seed=seed
    )
    pv = simulate_pv(work / "pv", systems=2, fraction=min(1.0, 0.25 * scale), seed=seed)
    conv = simulate_conv(work / "conv", systems=1, fraction=min(1.0, 0.2 * scale), seed=seed)
    return {
        "dilemma": Design(
            "dilemma", [BANK], _dilemma_file(work / "d.jsonl", int(3000 * scale), seed), 100
        ),
        "qa": Design("qa", [qa.itembank_path], qa.responses_path, 50),
        "pv": Design("pv", list(pv.bank_paths), pv.responses_paths[0], 20),
        "conversation": Design("conversation", [], conv.out_dir, 20),
    }


# --------------------------------------------------------------------------- stores


class Stores:
    """Fresh stores with a design's banks loaded: SQLite files or PostgreSQL databases,
    each copied from a template."""

    def __init__(self, work: Path, pg: str | None) -> None:
        self.work, self.made = work, []
        self.admin = None
        if pg:
            url = make_url(pg.replace("postgresql://", "postgresql+psycopg://", 1))
            self.admin = create_engine(url, isolation_level="AUTOCOMMIT")
            self.base = url

    def _url(self, name: str) -> str:
        if self.admin is None:
            return f"sqlite:///{self.work / f'{name}.db'}"
        return self.base.set(database=name).render_as_string(hide_password=False)

    def template(self, design: Design) -> str:
        name = f"cuegap_kill_{design.name}_{uuid.uuid4().hex[:8]}"
        if self.admin is not None:
            with self.admin.connect() as conn:
                conn.execute(text(f'CREATE DATABASE "{name}"'))
            self.made.append(name)
        engine = make_engine(self._url(name))
        upgrade(engine)
        for bank in design.banks:
            ingest_path(engine, bank)
        engine.dispose()
        return name

    def copy(self, template: str, trial: int) -> str:
        name = f"{template}_t{trial}"
        if self.admin is None:
            shutil.copyfile(self.work / f"{template}.db", self.work / f"{name}.db")
        else:
            with self.admin.connect() as conn:
                conn.execute(text(f'CREATE DATABASE "{name}" TEMPLATE "{template}"'))
            self.made.append(name)
        return self._url(name)

    def drop(self, url: str | None = None) -> None:
        """Remove one trial's store; without ``url``, every PostgreSQL database made."""
        if self.admin is None:
            for suffix in () if url is None else ("", "-wal", "-shm", "-ingest.lock"):
                Path(url.removeprefix("sqlite:///") + suffix).unlink(missing_ok=True)
            return
        with self.admin.connect() as conn:
            for name in [make_url(url).database] if url else self.made[::-1]:
                conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
                self.made.remove(name)


# --------------------------------------------------------------------------- checks


def unsealed(engine: Engine) -> dict[str, int]:
    """Rows per table whose ingest batch has no ledger entry (independent of verify)."""
    sql = "SELECT count(*) FROM {} WHERE batch_id NOT IN " + _SEALED
    with engine.connect() as conn:
        counts = {t: conn.execute(text(sql.format(t))).scalar_one() for t in ROW_TABLES}
    return {t: int(n) for t, n in counts.items() if n}


def _rows(engine: Engine) -> set[tuple]:
    with engine.connect() as conn:
        return {
            (t, *r)
            for t, key in (
                ("response", "response_key"),
                ("qa_response", "response_key"),
                ("conversation", "transcript_id"),
            )
            for r in conn.execute(text(f"SELECT {key}, content_hash FROM {t}")).all()
        }


def _problems(engine: Engine, want: set[tuple], killed: int, lines: int) -> list[str]:
    """What is wrong with a recovered store (empty when nothing)."""
    bad = []
    with engine.connect() as conn:
        batches = conn.execute(
            text(
                "SELECT id, status, lines_read, stored, duplicate, quarantined "
                "FROM ingest_batch ORDER BY id"
            )
        ).all()
    for b in batches:
        if b.status == "running":
            bad.append(f"batch {b.id} still running")
        if b.lines_read != b.stored + b.duplicate + b.quarantined:
            bad.append(f"batch {b.id} does not balance: {tuple(b)}")
    if batches and batches[-1].lines_read != lines:
        bad.append(f"the last pass read {batches[-1].lines_read} of {lines} records")
    if left := unsealed(engine):
        bad.append(f"unsealed rows {left}")
    if _rows(engine) != want:
        bad.append("rows differ from an uninterrupted ingest")
    if problems := _verify_problems(engine):
        bad.append(f"verify: {problems[:3]}")
    if not bad:
        bad += _tamper(engine, killed)
    return bad


def _verify_problems(engine: Engine) -> list[str]:
    result = verify(engine)
    return list(result.problems) + list(getattr(result, "unsealed", []))


def _tamper(engine: Engine, killed: int) -> list[str]:
    """Edit a row the killed pass wrote; verify must then name its batch."""
    with engine.begin() as conn:
        for table, column in ROW_TABLES.items():
            row = conn.execute(
                text(f"SELECT id FROM {table} WHERE batch_id = :b ORDER BY id LIMIT 1"),
                {"b": killed},
            ).first()
            if row is not None:
                conn.execute(
                    text(f"UPDATE {table} SET {column} = {column} || ' (edited)' WHERE id = :i"),
                    {"i": row.id},
                )
                break
        else:
            return []  # the killed pass committed no row: nothing to edit
    if not any(f"ingest batch {killed}" in p for p in _verify_problems(engine)):
        return [f"an edit of a row of killed batch {killed} passes verify"]
    return []


# --------------------------------------------------------------------------- trials


def _child(url: str, design: Design) -> subprocess.Popen:
    args = [sys.executable, "-c", CHILD, url, str(design.path), str(design.batch_size)]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(args, stdout=subprocess.PIPE, text=True, env=env)


def _init(url: str, cli: bool) -> bool:
    """``cuegap init``, through the command line or in-process (no interpreter start)."""
    if cli:
        args = [sys.executable, "-m", "cuegap.cli", "--db", url, "init"]
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        return subprocess.run(args, capture_output=True, env=env).returncode == 0
    engine = make_engine(url)
    upgrade(engine)
    try:
        from cuegap.ingest._recover import recover_interrupted
    except ImportError:  # a cuegap before the fix: init only upgrades
        pass
    else:
        recover_interrupted(engine)
    engine.dispose()
    return True


def _duration(url: str, design: Design) -> tuple[float, set[tuple], int]:
    """An uninterrupted ingest: its seconds, its rows, records read."""
    engine = make_engine(url)
    t = time.perf_counter()
    ingest_path(engine, design.path, batch_size=design.batch_size)
    secs = time.perf_counter() - t
    rows = _rows(engine)
    with engine.connect() as conn:
        lines = conn.execute(text("SELECT max(lines_read) FROM ingest_batch")).scalar_one()
    engine.dispose()
    return secs, rows, int(lines)


def trial(
    url: str, design: Design, delay: float, via_init: bool, want, lines, tally, cli: bool
) -> None:
    """Kill one ingest after ``delay`` seconds, recover, check; updates ``tally``."""
    proc = _child(url, design)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    time.sleep(delay)
    if proc.poll() is None:
        os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    if proc.returncode == -signal.SIGKILL:
        tally.kills += 1
    else:
        tally.finished += 1
    engine = make_engine(url)
    with engine.connect() as conn:
        killed = conn.execute(text("SELECT max(id) FROM ingest_batch")).scalar_one()
    if unsealed(engine):
        tally.unsealed_before += 1
    bad = []
    if via_init and not _init(url, cli):
        bad.append("init failed")
    if via_init and (left := unsealed(engine)):
        bad.append(f"unsealed rows after init: {left}")
    ingest_path(engine, design.path)
    bad += _problems(engine, want, killed, lines)
    engine.dispose()
    if bad:
        tally.failures.append(f"{design.name} delay {delay:.2f}s: {'; '.join(bad)}")
    else:
        tally.recovered += 1


def run_backend(
    stores: Stores, specs: dict[str, Design], kills: int, rng: random.Random, cli: bool
) -> tuple[dict[str, Tally], dict[str, tuple[float, int, int]]]:
    """``kills`` trials spread over the designs: a Tally per design, and per design the
    uninterrupted ingest's seconds, rows and records."""
    out: dict[str, Tally] = {}
    templates = {d: stores.template(spec) for d, spec in specs.items()}
    refs = {d: _duration(stores.copy(templates[d], -1), specs[d]) for d in specs}
    names = list(specs)
    for t in range(kills):
        d = names[t % len(names)]
        secs, want, lines = refs[d]
        url = stores.copy(templates[d], t)
        delay = rng.uniform(0, secs * 1.1)
        trial(url, specs[d], delay, t % 2 == 1, want, lines, out.setdefault(d, Tally()), cli)
        stores.drop(url)
    return out, {d: (secs, len(want), lines) for d, (secs, want, lines) in refs.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--kills", type=int, default=40, help="kill -9 trials per backend")
    parser.add_argument("--scale", type=float, default=1.0, help="file sizes, relative")
    parser.add_argument("--designs", default=",".join(DESIGNS))
    parser.add_argument("--seed", type=int, default=30)
    parser.add_argument("--pg", default=os.environ.get("CUEGAP_BENCH_PG_URL", ""))
    parser.add_argument("--pg-kills", type=int, help="trials on PostgreSQL (default --kills)")
    parser.add_argument("--no-sqlite", action="store_true")
    parser.add_argument("--cli-init", action="store_true", help="run `cuegap init` itself")
    args = parser.parse_args()
    failed = False
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        all_specs = designs(work, args.scale, args.seed)
        specs = {d: all_specs[d] for d in args.designs.split(",")}
        backends = {} if args.no_sqlite else {"SQLite": None}
        if args.pg:
            backends["PostgreSQL"] = args.pg
        for backend, pg in backends.items():
            stores = Stores(work, pg)
            try:
                t0 = time.perf_counter()
                rng = random.Random(args.seed)
                kills = args.kills if pg is None or args.pg_kills is None else args.pg_kills
                tallies, refs = run_backend(stores, specs, kills, rng, args.cli_init)
            finally:
                stores.drop()
            for d, t in tallies.items():
                n = t.kills + t.finished
                failed |= t.recovered != n
                print(
                    f"{backend} {d}: {t.kills} killed mid-ingest ({t.finished} finished "
                    f"first); {t.unsealed_before} left unsealed rows; recovered {t.recovered} "
                    f"of {n}"
                )
                for f in t.failures[:5]:
                    print(f"  FAILED {f}")
            print(f"{backend}: {kills} trials in {time.perf_counter() - t0:.1f} s")
            for d, (secs, rows, lines) in refs.items():
                print(f"  {d}: {lines:,} records, {rows:,} rows, uninterrupted {secs:.2f} s")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
