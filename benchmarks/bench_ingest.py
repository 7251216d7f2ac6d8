"""Ingest benchmark: prints rows/s, peak memory and ratios against baselines from the same run.

Usage::

    .venv/bin/python benchmarks/bench_ingest.py                # 14 systems, SQLite (+ PostgreSQL
                                                             #   when CUEGAP_TEST_PG_URL is set)
    .venv/bin/python benchmarks/bench_ingest.py --systems 2    # a quick look

Targets (issue 14, replacing issue 2's): ingest into SQLite >= 1.5x faster than pandas
``read_json`` + ``to_sql`` of the same file; cuegap's time beyond SQLite's bulk-insert floor
and its start-up no more than that floor; ingest into PostgreSQL at least as fast as pandas'
``to_sql`` into the same server; peak memory flat when the input doubles. DuckDB's
``read_json`` into a table is printed as a reference, with no target (when duckdb is
installed: the ``dev`` extra). Each measurement runs in a fresh process so that peak RSS is
its own.

For context it also times the two parts no faster parsing can remove: SQLite's own share
(copying the ingested responses into an empty store of the same schema with one
``INSERT ... SELECT``, indexes built after as a large ingest does, no Python per row) and
cuegap's start-up (imports, schema check, item bank) without any responses.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import resource
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

RESPONSE_FIELDS = [
    "system",
    "item_id",
    "probe",
    "individual",
    "consequences",
    "prompt_variant",
    "response",
    "sample_id",
]


def _peak_mib() -> float:
    """Peak resident memory of this process (VmHWM; unlike ru_maxrss it resets on exec)."""
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _child(fn: str | Callable, args: tuple, queue: mp.Queue) -> None:
    start, cpu = time.perf_counter(), time.process_time()
    extra = (globals()[fn] if isinstance(fn, str) else fn)(*args)
    seconds = time.perf_counter() - start
    cpu = time.process_time() - cpu
    if isinstance(extra, dict) and "seconds" in extra:  # the task timed its own part
        seconds, cpu = extra["seconds"], extra.get("cpu", cpu)
    queue.put((seconds, cpu, _peak_mib(), extra))


REPEATS = 1  # runs of each task; the median time is reported (set by --repeats)
# Median CPU seconds of the last measured task (this process only: a database server's
# work is not in it). On a busy machine it moves less than the wall time.
LAST_CPU = [0.0]


def measure(fn_name: str | Callable, *args: object) -> tuple[float, float, object]:
    """Run a function in a fresh process, ``REPEATS`` times.

    ``fn_name`` names a function of this module, or is a module-level function of another.

    Returns
    -------
    tuple
        (median seconds, highest peak RSS in MiB, the last run's return value).
    """
    ctx = mp.get_context("spawn")
    times, cpus, peaks = [], [], []
    for _ in range(REPEATS):
        queue = ctx.Queue()
        proc = ctx.Process(target=_child, args=(fn_name, args, queue))
        proc.start()
        seconds, cpu, peak, extra = queue.get()
        proc.join()
        times.append(seconds)
        cpus.append(cpu)
        peaks.append(peak)
    LAST_CPU[0] = statistics.median(cpus)
    return statistics.median(times), max(peaks), extra


# --------------------------------------------------------------------- measured tasks
def parse_lines(path: str, lib: str) -> int:
    """Parse every line with ``json`` or ``orjson`` and nothing else: the floor."""
    loads = __import__(lib).loads
    n = 0
    with open(path, "rb") as fh:
        for line in fh:
            loads(line)
            n += 1
    return n


def pandas_to_sql(path: str, url: str) -> int:
    import pandas as pd
    from sqlalchemy import create_engine

    df = pd.read_json(path, lines=True)
    df = df[[c for c in RESPONSE_FIELDS if c in df.columns]].dropna(subset=["system"])
    engine = create_engine(url)
    df.to_sql("responses", engine, index=False, if_exists="replace", chunksize=5000)
    return len(df)


def duckdb_read_json(path: str, db: str) -> int:
    """DuckDB's ``read_json`` of the file into a table of a new database file (a reference)."""
    import duckdb

    con = duckdb.connect(db)
    cols = ", ".join(RESPONSE_FIELDS)
    con.execute(
        f"CREATE OR REPLACE TABLE responses AS SELECT {cols} FROM read_json(?, format = "
        "'newline_delimited', union_by_name = true) WHERE system IS NOT NULL",
        [path],
    )
    n = con.execute("SELECT count(*) FROM responses").fetchone()[0]
    con.close()
    return n


def cuegap_ingest(paths: list[str], url: str) -> dict:
    """Ingest ``paths`` into a fresh store: a new SQLite file, or a new PostgreSQL database
    when ``url`` is the server's admin URL (created and dropped outside the timed part)."""
    start, cpu = time.perf_counter(), time.process_time()
    from cuegap.ingest import ingest_path
    from cuegap.schema import make_engine, upgrade

    t0, c0 = time.perf_counter(), time.process_time()
    drop = None
    if url.startswith("sqlite:///"):
        for suffix in ("", "-wal", "-shm"):
            Path(url.removeprefix("sqlite:///") + suffix).unlink(missing_ok=True)
    else:
        url, drop = _pg_url(url)
    untimed, untimed_cpu = time.perf_counter() - t0, time.process_time() - c0
    engine = make_engine(url)
    upgrade(engine)
    out = {}
    for p in paths:
        s = ingest_path(engine, p)
        out = {"read": s.read, "stored": s.stored, "quarantined": s.quarantined}
    engine.dispose()
    out["seconds"] = time.perf_counter() - start - untimed
    out["cpu"] = time.process_time() - cpu - untimed_cpu
    if drop is not None:
        drop()
    return out


def sqlite_copy_floor(src_db: str, dst_db: str) -> dict:
    """Time copying the responses of an ingested store into an empty one (SQLite's share).

    Untimed: the store is copied and emptied of responses. Timed: the secondary indexes are
    dropped, one ``INSERT ... SELECT`` copies every response, the indexes are rebuilt and
    the transaction commits, on a connection with cuegap's pragmas.
    """
    import shutil

    from sqlalchemy import text

    from cuegap.schema import Response, make_engine

    for suffix in ("", "-wal", "-shm"):
        Path(dst_db + suffix).unlink(missing_ok=True)
    shutil.copy(src_db, dst_db)
    engine = make_engine(f"sqlite:///{dst_db}")
    with engine.begin() as conn:
        conn.execute(text("DELETE FROM response"))
    with engine.connect() as conn:
        conn.execute(text("VACUUM"))
        conn.commit()
    secondary = [ix for ix in Response.__table__.indexes if not ix.unique]
    with engine.begin() as conn:
        conn.execute(text("ATTACH DATABASE :path AS src"), {"path": src_db})
    with engine.connect() as conn:
        start, cpu = time.perf_counter(), time.process_time()
        with conn.begin():
            for ix in secondary:
                ix.drop(conn)
            n = conn.execute(text("INSERT INTO main.response SELECT * FROM src.response")).rowcount
            for ix in secondary:
                ix.create(conn)
        seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    engine.dispose()
    return {"rows": n, "seconds": seconds, "cpu": cpu}


# ---------------------------------------------------------------------------- driver
def _double(src: Path, dst: Path) -> None:
    """The same responses twice, the copy under renamed systems (so nothing deduplicates)."""
    with src.open("rb") as fin, dst.open("wb") as fout:
        lines = fin.readlines()
        fout.writelines(lines)
        fout.writelines(line.replace(b'"system":"sim-', b'"system":"dup-') for line in lines[1:])


def _pg_url(base: str) -> tuple[str, callable]:
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url

    admin_url = base.replace("postgresql://", "postgresql+psycopg://", 1)
    admin = create_engine(admin_url, isolation_level="AUTOCOMMIT")
    name = f"cuegap_bench_{uuid.uuid4().hex[:8]}"
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))

    def drop() -> None:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))

    url = make_url(admin_url).set(database=name).render_as_string(hide_password=False)
    return url, drop


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--systems", type=int, default=14)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument(
        "--pg",
        default=os.environ.get("CUEGAP_TEST_PG_URL"),
        help="PostgreSQL admin URL (default $CUEGAP_TEST_PG_URL)",
    )
    ap.add_argument("--no-double", action="store_true", help="skip the doubled-input run")
    ap.add_argument(
        "--repeats", type=int, default=1, help="runs of each task, median reported (busy machines)"
    )
    args = ap.parse_args(argv)
    global REPEATS
    REPEATS = max(1, args.repeats)

    from cuegap.designs.dilemma.simulate import simulate

    with tempfile.TemporaryDirectory(prefix="cuegap-bench-") as tmp:
        tmp = Path(tmp)
        t0 = time.perf_counter()
        sim = simulate(tmp / "data", systems=args.systems, seed=args.seed)
        print(
            f"simulated {sim.n_systems} systems, {sim.n_responses:,} responses "
            f"in {time.perf_counter() - t0:.1f} s "
            f"({sim.responses_path.stat().st_size / 2**20:.0f} MiB)"
        )
        bank, resp = str(sim.itembank_path), str(sim.responses_path)
        n = sim.n_responses

        rows = []
        t_std, m_std, _ = measure("parse_lines", resp, "json")
        rows.append(("json.loads per line (floor)", t_std, m_std, LAST_CPU[0]))
        t_orj, m_orj, _ = measure("parse_lines", resp, "orjson")
        rows.append(("orjson.loads per line", t_orj, m_orj, LAST_CPU[0]))
        t_pd, m_pd, _ = measure("pandas_to_sql", resp, f"sqlite:///{tmp / 'pandas.db'}")
        rows.append(("pandas read_json + to_sql (SQLite)", t_pd, m_pd, LAST_CPU[0]))
        t_sq, m_sq, res = measure("cuegap_ingest", [bank, resp], f"sqlite:///{tmp / 'c.db'}")
        assert res["stored"] == n, res
        rows.append(("cuegap ingest -> SQLite", t_sq, m_sq, LAST_CPU[0]))
        t_fl, m_fl, res = measure("sqlite_copy_floor", str(tmp / "c.db"), str(tmp / "f.db"))
        assert res["rows"] == n, res
        rows.append(("SQLite INSERT ... SELECT of the rows", t_fl, m_fl, LAST_CPU[0]))
        t_fx, m_fx, _ = measure("cuegap_ingest", [bank], f"sqlite:///{tmp / 'b.db'}")
        rows.append(("cuegap start-up + item bank only", t_fx, m_fx, LAST_CPU[0]))
        t_dd = None
        try:
            import duckdb  # noqa: F401
        except ImportError:
            print("duckdb is not installed: no DuckDB reference (pip install -e '.[dev]')")
        else:
            t_dd, m_dd, res = measure("duckdb_read_json", resp, str(tmp / "d.duckdb"))
            assert res == n, res
            rows.append(("DuckDB read_json into a table (reference)", t_dd, m_dd, LAST_CPU[0]))
        t_pg = t_pdpg = None
        if args.pg:
            url, drop = _pg_url(args.pg)
            try:
                t_pdpg, m_pdpg, res = measure("pandas_to_sql", resp, url)
                assert res == n, res
                rows.append(("pandas read_json + to_sql (PostgreSQL)", t_pdpg, m_pdpg, LAST_CPU[0]))
            finally:
                drop()
            t_pg, m_pg, res = measure("cuegap_ingest", [bank, resp], args.pg)
            assert res["stored"] == n, res
            rows.append(("cuegap ingest -> PostgreSQL", t_pg, m_pg, LAST_CPU[0]))
        if not args.no_double:
            doubled = tmp / "doubled.jsonl"
            _double(sim.responses_path, doubled)
            t_d, m_d, res = measure(
                "cuegap_ingest", [bank, str(doubled)], f"sqlite:///{tmp / 'd.db'}"
            )
            assert res["stored"] == 2 * n, res
            rows.append(("cuegap ingest -> SQLite, input doubled", t_d, m_d, LAST_CPU[0]))

    what = f"median of {REPEATS} runs" if REPEATS > 1 else "one run"
    head = f"{'task (' + what + ' each)':<42}{'seconds':>9}{'rows/s':>12}{'peak MiB':>10}"
    print(f"\n{head}{'CPU s':>8}")
    cpu = {}
    for name, t, m, c in rows:
        k = 2 * n if "doubled" in name else 0 if "bank only" in name else n
        speed = f"{k / t:,.0f}" if k else "-"
        print(f"{name:<42}{t:>9.2f}{speed:>12}{m:>10.0f}{c:>8.2f}")
        cpu[name] = c
    beyond = (t_sq - t_fl - t_fx) / t_fl
    print("\nratios (issue 14's targets in brackets)")
    r_pd = t_pd / t_sq
    print(f"  pandas time / SQLite ingest time       : {r_pd:.2f}  [>= 1.5] {_met(r_pd >= 1.5)}")
    print(f"  (ingest - floor - start-up) / floor    : {beyond:.2f}  [<= 1] {_met(beyond <= 1)}")
    if t_pg:
        r_pg = t_pdpg / t_pg
        print(f"  pandas PG time / PostgreSQL ingest time: {r_pg:.2f}  [>= 1] {_met(r_pg >= 1)}")
    if not args.no_double:
        print(f"  peak memory doubled / single input     : {m_d / m_sq:.2f}  [~1.0, flat]")
    print("for context")
    print(f"  SQLite ingest speed / json.loads speed : {t_std / t_sq:.2f}")
    print(f"  SQLite ingest speed / orjson speed     : {t_orj / t_sq:.2f}")
    print(f"  SQLite's own share of the ingest time  : {t_fl / t_sq:.2f}")
    print(f"  start-up + bank share of the ingest    : {t_fx / t_sq:.2f}")
    c_sq, c_fl = cpu["cuegap ingest -> SQLite"], cpu["SQLite INSERT ... SELECT of the rows"]
    c_fx, c_pd = cpu["cuegap start-up + item bank only"], cpu["pandas read_json + to_sql (SQLite)"]
    print(f"  the same two SQLite ratios in CPU time : {c_pd / c_sq:.2f} and ", end="")
    print(f"{(c_sq - c_fl - c_fx) / c_fl:.2f} (this process's CPU; steadier on a busy machine)")
    if t_dd:
        print(
            f"  DuckDB time / SQLite ingest time       : {t_dd / t_sq:.2f}  (reference, no target)"
        )
    return 0


def _met(ok: bool) -> str:
    return "met" if ok else "NOT MET"


if __name__ == "__main__":
    sys.exit(main())
