"""Time rendering an audit report (HTML and PDF) of a paper-scale, 14-system audit.

Simulates and ingests a dataset (``cuegap.designs.dilemma.simulate``) and analyses it, or uses
``--db``, then
times, from a stored analysis: gathering the report data, rendering the HTML (figures
included), rendering the PDF, and the whole of ``cuegap report`` (target: under 20 s for
both formats).

    .venv/bin/python benchmarks/bench_report.py                 # 14 systems
    .venv/bin/python benchmarks/bench_report.py --systems 2     # quick
    .venv/bin/python benchmarks/bench_report.py --db sqlite:///cuegap.db
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

TARGET_S = 20.0


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", help="report on this store instead of a fresh simulation")
    parser.add_argument("--systems", type=int, default=14)
    parser.add_argument("--n-boot", type=int, default=200, help="bootstrap of the analysis")
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args(argv)

    from cuegap.designs.dilemma._analysis import analyze
    from cuegap.designs.dilemma._analysis_settings import AnalysisSettings
    from cuegap.designs.dilemma._report import build_report
    from cuegap.designs.dilemma.simulate import simulate
    from cuegap.ingest import ingest_path
    from cuegap.reports import render_html, render_pdf, write_report
    from cuegap.schema import make_engine, upgrade

    with tempfile.TemporaryDirectory() as tmp:
        db = args.db
        if db is None:
            start = time.perf_counter()
            sim = simulate(Path(tmp) / "data", systems=args.systems, seed=2026)
            db = f"sqlite:///{Path(tmp) / 'store.db'}"
            engine = make_engine(db)
            upgrade(engine)
            for f in (sim.itembank_path, sim.responses_path):
                ingest_path(engine, f)
            print(
                f"simulated and ingested {sim.n_responses:,} responses ({args.systems} systems) "
                f"in {time.perf_counter() - start:.1f} s"
            )
        engine = make_engine(db)
        start = time.perf_counter()
        result = analyze(engine, AnalysisSettings(n_boot=args.n_boot))
        how = "reused" if result.reused else "computed"
        print(f"analysis {result.id} {how} in {time.perf_counter() - start:.1f} s (not timed)")

        best: dict[str, float] = {}
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            data = build_report(engine, analysis_id=result.id)
            t1 = time.perf_counter()
            rendered = render_html(data)
            t2 = time.perf_counter()
            pdf = render_pdf(rendered.html)
            t3 = time.perf_counter()
            write_report(data, Path(tmp) / "out")
            t4 = time.perf_counter()
            for key, took in (
                ("data", t1 - t0),
                ("html", t2 - t1),
                ("pdf", t3 - t2),
                ("both", t4 - t3 + (t1 - t0)),
            ):
                best[key] = min(best.get(key, float("inf")), took)
        systems = len(data.tables["verdicts"])
        print(
            f"report of {systems} systems: HTML {len(rendered.html) / 1e3:.0f} kB, "
            f"PDF {len(pdf) / 1e3:.0f} kB"
        )
        print(f"gather report data (store queries): {best['data']:.2f} s")
        print(f"render HTML (figures + templates): {best['html']:.2f} s")
        print(f"render PDF (WeasyPrint): {best['pdf']:.2f} s")
        verdict = "ok" if best["both"] < TARGET_S else "OVER TARGET"
        print(
            f"cuegap report, both formats: {best['both']:.2f} s "
            f"[target < {TARGET_S:g} s: {verdict}] (best of {args.repeats})"
        )
        engine.dispose()


if __name__ == "__main__":
    main()
