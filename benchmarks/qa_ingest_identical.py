"""Do two versions of cuegap store the same QA rows, and how fast does each ingest them?

For a change to the QA ingest path that must not change what is stored (issue 31, "the
QA loader at the dilemma loader's speed"): check out the old version somewhere
(``git worktree add /tmp/old <commit>``) and run::

    .venv/bin/python benchmarks/qa_ingest_identical.py --old /tmp/old
    .venv/bin/python benchmarks/qa_ingest_identical.py --old /tmp/old \
        --pg postgresql://cuegap:cuegap@localhost:5432/postgres

Each version, in a fresh process with its own source tree first on ``PYTHONPATH``, builds a
fresh store (SQLite, or with ``--pg`` a fresh PostgreSQL database per version on that
server, dropped afterwards) and ingests the same files: a simulated QA audit (item bank
and answers in the forms systems write: "(b)", "Final Answer: ...", option text,
uncertainty), ingested twice (the second pass stores nothing), and the published-layout
BBQ / ImplicitBBQ folders of ``tests/fixtures/bbq_family`` (runner readings and free text,
with bad lines). Then every column of every ``qa_response`` row, every prompt factor and
tally row, every quarantine row and every ingest batch's counts are compared. It prints
each version's answers per second on the simulated file and their ratio, and, for
reference, the dilemma loader's rate on as many simulated responses (the issue's
yardstick). Exit status 1 when anything stored differs.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "bbq_family"

_CHILD = r"""
import hashlib, json, sys, time
from pathlib import Path
import orjson
import cuegap
from cuegap.ingest import expand_path, ingest_order, ingest_path
from cuegap.schema import make_engine, upgrade

url, bank, resp, bbq, implicit, out = sys.argv[1:7]
engine = make_engine(url)
upgrade(engine)
ingest_path(engine, bank)
start = time.perf_counter()
first = ingest_path(engine, resp)
seconds = time.perf_counter() - start
summaries = [[s.read, s.stored, s.duplicate, s.quarantined] for s in
             (first, ingest_path(engine, resp))]
files = [f for p in (bbq, implicit) for f in expand_path(Path(p))[0]]
for f in ingest_order(files):  # as `cuegap ingest BBQ ImplicitBBQ --system NAME` does
    s = ingest_path(engine, f, system="fixture-system")
    summaries.append([s.read, s.stored, s.duplicate, s.quarantined])

def dump(sql):
    with engine.connect() as conn:
        cur = conn.exec_driver_sql(sql)
        return list(cur.keys()), [list(r) for r in cur]

def digest(rows):
    return hashlib.sha256(orjson.dumps(rows, default=str)).hexdigest()

cols, rows = dump("SELECT * FROM qa_response ORDER BY id")
_, factors = dump("SELECT * FROM qa_response_factor ORDER BY id")
_, tally = dump("SELECT * FROM qa_tally ORDER BY id")
_, quarantine = dump("SELECT batch_id, source_path, line_no, field, reason, raw "
                     "FROM quarantine ORDER BY id")
_, batches = dump("SELECT lines_read, stored, duplicate, quarantined FROM ingest_batch "
                  "ORDER BY id")
Path(out).write_bytes(orjson.dumps({
    "cuegap": cuegap.__file__, "summaries": summaries, "answers": first.read,
    "seconds": seconds, "rows": len(rows),
    "columns": {c: digest([r[i] for r in rows]) for i, c in enumerate(cols)},
    "quarantine": digest(quarantine), "batches": batches,
    "factors": digest(factors), "tally": digest(tally),
}, default=str))
"""

_DILEMMA = r"""
import sys, time
from cuegap.designs.dilemma.simulate import simulate
from cuegap.ingest import ingest_path
from cuegap.schema import make_engine, upgrade
root, url, want = sys.argv[1], sys.argv[2], int(sys.argv[3])
sim = simulate(root, systems=max(1, round(want / 21_800)), seed=5)  # ~21,800 per system
engine = make_engine(url); upgrade(engine)
ingest_path(engine, sim.itembank_path)
start = time.perf_counter()
s = ingest_path(engine, sim.responses_path)
print(s.read, time.perf_counter() - start)
"""


def _run(tree: Path, args: list[str]) -> dict:
    env = dict(os.environ, PYTHONPATH=str(tree))
    subprocess.run([sys.executable, "-c", _CHILD, *args], env=env, check=True, cwd=tree)
    out = json.loads(Path(args[-1]).read_bytes())
    if not out["cuegap"].startswith(str(tree)):
        raise SystemExit(f"{tree}: its cuegap was not the one imported ({out['cuegap']})")
    return out


def _fresh(server: str, label: str, *, drop_only: bool = False) -> str:
    """A fresh database ``cuegap_qa_ident_<label>`` on a PostgreSQL server; its URL."""
    from sqlalchemy import create_engine
    from sqlalchemy.engine import make_url

    name = f"cuegap_qa_ident_{label}"
    admin = create_engine(server, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.exec_driver_sql(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        if not drop_only:
            conn.exec_driver_sql(f"CREATE DATABASE {name}")
    admin.dispose()
    return make_url(server).set(database=name).render_as_string(hide_password=False)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--old", type=Path, required=True, help="source tree of the old version")
    ap.add_argument("--new", type=Path, default=ROOT, help="source tree of the new version")
    ap.add_argument("--systems", type=int, default=2)
    ap.add_argument("--templates", type=int, default=150, help="templates per dimension")
    ap.add_argument("--pg", help="a PostgreSQL server URL: compare there instead of on SQLite")
    args = ap.parse_args(argv)
    backend = "PostgreSQL" if args.pg else "SQLite"
    sys.path.insert(0, str(args.new))
    from cuegap.designs.qa._simulate import simulate_qa

    with tempfile.TemporaryDirectory(prefix="cuegap-qa-ident-") as tmp_:
        tmp = Path(tmp_)
        sim = simulate_qa(tmp / "qa", systems=args.systems, templates_per_dimension=args.templates)
        files = [str(sim.itembank_path), str(sim.responses_path),
                 str(FIXTURES / "BBQ"), str(FIXTURES / "ImplicitBBQ")]  # fmt: skip
        got = {}
        for label, tree in (("old", args.old.resolve()), ("new", args.new.resolve())):
            url = _fresh(args.pg, label) if args.pg else f"sqlite:///{tmp / label}.db"
            got[label] = _run(tree, [url, *files, str(tmp / label)])
        old, new = got["old"], got["new"]
        keys = ("summaries", "rows", "quarantine", "batches", "factors", "tally")
        differ = [k for k in keys if old.get(k) != new.get(k)]
        differ += [f"column {c}" for c, d in old["columns"].items() if new["columns"].get(c) != d]
        env = dict(os.environ, PYTHONPATH=str(args.new.resolve()))
        dil_url = _fresh(args.pg, "dil") if args.pg else f"sqlite:///{tmp / 'dil.db'}"
        dil = subprocess.run(
            [sys.executable, "-c", _DILEMMA, str(tmp / "dil"), dil_url,
             str(new["answers"])], env=env, check=True, capture_output=True, text=True,
        ).stdout.split()  # fmt: skip
    if args.pg:
        for label in ("old", "new", "dil"):
            _fresh(args.pg, label, drop_only=True)
    rate = {k: v["answers"] / v["seconds"] for k, v in got.items()}
    d_rate = int(dil[0]) / float(dil[1])
    print(f"{backend}: QA answers (simulated, {new['answers']:,}): old {rate['old']:,.0f}/s, "
          f"new {rate['new']:,.0f}/s, new/old x{rate['new'] / rate['old']:.2f}")  # fmt: skip
    print(f"dilemma loader, {int(dil[0]):,} responses: {d_rate:,.0f}/s; "
          f"QA per answer at x{rate['new'] / d_rate:.2f} of its rate")  # fmt: skip
    print(
        f"{new['rows']:,} qa_response rows; "
        + ("IDENTICAL" if not differ else "DIFFERENT: " + ", ".join(differ))
    )
    return 1 if differ else 0


if __name__ == "__main__":
    raise SystemExit(main())
