"""QA-design benchmark: ingest, frequentist tables and Bayesian fit of a simulated
seed-001-scale store, each against the dilemma design at the same number of responses.

Usage::

    .venv/bin/python benchmarks/bench_qa.py                      # 11 systems, paper scale
    .venv/bin/python benchmarks/bench_qa.py --systems 2 --templates 40 --no-bayes
    .venv/bin/python benchmarks/bench_qa.py --systems 2 --templates 150 --ingest-only \
        [--pg postgresql://cuegap:cuegap@localhost:5432/postgres]

Both designs are simulated (``cuegap simulate``), ingested into fresh SQLite stores,
analysed with the same number of bootstrap replicates and (unless ``--no-bayes``) fitted
with the same sampler settings. The dilemma store gets as many simulated systems as it
takes to reach the QA store's number of responses. Prints seconds per step and the ratio
QA / dilemma (issue 13, "Speed"), and the loaders' rates measured in this run: QA answers
per second and dilemma responses per second (the answers or responses file alone, after
its item bank), against issue 31's target of the same rate per answer (ratio 1.0), met or
not. ``--pg`` runs both on fresh databases of a PostgreSQL server. No assertion.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any


def _timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    start = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - start


def _qa(root: Path, args: argparse.Namespace) -> dict[str, Any]:
    from cuegap.designs import BayesSettings
    from cuegap.designs.qa._analysis import QASettings, analyze_qa, analyze_qa_bayes
    from cuegap.designs.qa._simulate import simulate_qa
    from cuegap.ingest import ingest_path
    from cuegap.schema import make_engine, upgrade

    sim, t_sim = _timed(
        lambda: simulate_qa(
            root / "qa", systems=args.systems, templates_per_dimension=args.templates
        )
    )
    engine = make_engine(_url(root, "qa", args.pg))
    upgrade(engine)
    _, t_bank = _timed(lambda: ingest_path(engine, sim.itembank_path))
    _, t_answers = _timed(lambda: ingest_path(engine, sim.responses_path))
    out = {"responses": sim.n_responses, "simulate": t_sim, "ingest": t_bank + t_answers,
           "answers": t_answers}  # fmt: skip
    if args.ingest_only:
        engine.dispose()
        return out
    settings = QASettings(n_boot=args.n_boot)
    _, out["tables"] = _timed(lambda: analyze_qa(engine, settings, force=True))
    if args.bayes:
        bayes = BayesSettings(draws=args.draws, tune=args.draws, chains=args.chains)
        fit, out["bayes"] = _timed(lambda: analyze_qa_bayes(engine, settings, bayes, force=True))
        out["bayes_converged"] = bool(fit.tables["qa_bayes_diagnostics"]["passed"].iloc[-1])
    engine.dispose()
    return out


def _dilemma(root: Path, responses: int, args: argparse.Namespace) -> dict[str, Any]:
    from cuegap.designs import BayesSettings
    from cuegap.designs.dilemma._analysis import analyze, analyze_bayes
    from cuegap.designs.dilemma._analysis_settings import AnalysisSettings
    from cuegap.designs.dilemma.simulate import simulate
    from cuegap.ingest import ingest_path
    from cuegap.schema import make_engine, upgrade

    probe = simulate(root / "probe", systems=1, seed=1)  # responses per simulated system
    systems = max(1, round(responses / probe.n_responses))
    sim, t_sim = _timed(lambda: simulate(root / "dilemma", systems=systems, seed=1))
    engine = make_engine(_url(root, "dilemma", args.pg))
    upgrade(engine)
    _, t_bank = _timed(lambda: ingest_path(engine, sim.itembank_path))
    _, t_answers = _timed(lambda: ingest_path(engine, sim.responses_path))
    out = {"responses": sim.n_responses, "systems": systems, "simulate": t_sim,
           "ingest": t_bank + t_answers, "answers": t_answers}  # fmt: skip
    if args.ingest_only:
        engine.dispose()
        return out
    settings = AnalysisSettings(n_boot=args.n_boot)
    _, out["tables"] = _timed(lambda: analyze(engine, settings, force=True))
    if args.bayes:
        bayes = BayesSettings(draws=args.draws, tune=args.draws, chains=args.chains)
        _, out["bayes"] = _timed(lambda: analyze_bayes(engine, settings, bayes, force=True))
    engine.dispose()
    return out


def _url(root: Path, name: str, server: str | None, *, drop: bool = False) -> str:
    """The store's URL: a SQLite file under ``root``, or a fresh database on ``server``."""
    if server is None:
        return f"sqlite:///{root / name}.db"
    from sqlalchemy import create_engine
    from sqlalchemy.engine import make_url

    db = f"cuegap_bench_qa_{name}"
    admin = create_engine(server, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.exec_driver_sql(f"DROP DATABASE IF EXISTS {db} WITH (FORCE)")
        if not drop:
            conn.exec_driver_sql(f"CREATE DATABASE {db}")
    admin.dispose()
    return make_url(server).set(database=db).render_as_string(hide_password=False)


def main() -> None:
    """Run both designs and print the figures."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--systems", type=int, default=11)
    ap.add_argument("--templates", type=int, default=667, help="templates per dimension")
    ap.add_argument("--n-boot", type=int, default=200)
    ap.add_argument("--bayes", action=argparse.BooleanOptionalAction, default=True)
    ap.add_argument("--draws", type=int, default=1000)
    ap.add_argument("--chains", type=int, default=4)
    ap.add_argument("--ingest-only", action="store_true", help="time ingest only")
    ap.add_argument("--pg", help="a PostgreSQL server URL: stores there instead of SQLite")
    args = ap.parse_args()
    if args.ingest_only:
        args.bayes = False
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        qa = _qa(root, args)
        dilemma = _dilemma(root, qa["responses"], args)
        if args.pg:
            for name in ("qa", "dilemma"):
                _url(root, name, args.pg, drop=True)
    print(
        f"QA design: {args.systems} systems, {qa['responses']:,} answers; dilemma design: "
        f"{dilemma['systems']} systems, {dilemma['responses']:,} responses; "
        f"{args.n_boot} bootstrap replicates"
        + (f", Bayesian {args.chains} chains x {args.draws} draws" if args.bayes else "")
    )
    print(f"{'step':<22}{'QA s':>10}{'dilemma s':>12}{'QA/dilemma':>12}")
    steps = [("ingest", "ingest")]
    if not args.ingest_only:
        steps.append(("frequentist tables", "tables"))
    if args.bayes:
        steps.append(("Bayesian fit", "bayes"))
    for label, key in steps:
        a, b = qa[key], dilemma[key]
        print(f"{label:<22}{a:>10.1f}{b:>12.1f}{a / b:>12.2f}")
    qa_rate = qa["responses"] / qa["answers"]
    dil_rate = dilemma["responses"] / dilemma["answers"]
    ratio = qa_rate / dil_rate
    print(f"store: {'PostgreSQL' if args.pg else 'SQLite'}")
    print(f"QA loader: {qa_rate:,.0f} answers/s (simulation took {qa['simulate']:.1f} s)")
    print(f"dilemma loader, same run: {dil_rate:,.0f} responses/s")
    print(
        f"QA / dilemma per answer: {ratio:.2f} (target 1.00: "
        + ("met)" if ratio >= 1.0 else "not met)")
    )
    if args.bayes:
        print(f"QA Bayesian fit passed the convergence gate: {qa['bayes_converged']}")


if __name__ == "__main__":
    main()
