"""QA-design benchmark: ingest, frequentist tables and Bayesian fit of a simulated
seed-001-scale store, each against the dilemma design at the same number of responses.

Usage::

    .venv/bin/python benchmarks/bench_qa.py                      # 11 systems, paper scale
    .venv/bin/python benchmarks/bench_qa.py --systems 2 --templates 40 --no-bayes

Both designs are simulated (``cuegap simulate``), ingested into fresh SQLite stores,
analysed with the same number of bootstrap replicates and (unless ``--no-bayes``) fitted
with the same sampler settings. The dilemma store gets as many simulated systems as it
takes to reach the QA store's number of responses. Prints seconds per step and the ratio
QA / dilemma (issue 13, "Speed"). Figures, not targets: no assertion.
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
    engine = make_engine(f"sqlite:///{root / 'qa.db'}")
    upgrade(engine)

    def ingest() -> None:
        ingest_path(engine, sim.itembank_path)
        ingest_path(engine, sim.responses_path)

    _, t_ingest = _timed(ingest)
    settings = QASettings(n_boot=args.n_boot)
    _, t_tables = _timed(lambda: analyze_qa(engine, settings, force=True))
    out = {"responses": sim.n_responses, "simulate": t_sim, "ingest": t_ingest, "tables": t_tables}
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
    engine = make_engine(f"sqlite:///{root / 'dilemma.db'}")
    upgrade(engine)

    def ingest() -> None:
        ingest_path(engine, sim.itembank_path)
        ingest_path(engine, sim.responses_path)

    _, t_ingest = _timed(ingest)
    settings = AnalysisSettings(n_boot=args.n_boot)
    _, t_tables = _timed(lambda: analyze(engine, settings, force=True))
    out = {"responses": sim.n_responses, "systems": systems, "simulate": t_sim,
           "ingest": t_ingest, "tables": t_tables}  # fmt: skip
    if args.bayes:
        bayes = BayesSettings(draws=args.draws, tune=args.draws, chains=args.chains)
        _, out["bayes"] = _timed(lambda: analyze_bayes(engine, settings, bayes, force=True))
    engine.dispose()
    return out


def main() -> None:
    """Run both designs and print the figures."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--systems", type=int, default=11)
    ap.add_argument("--templates", type=int, default=667, help="templates per dimension")
    ap.add_argument("--n-boot", type=int, default=200)
    ap.add_argument("--bayes", action=argparse.BooleanOptionalAction, default=True)
    ap.add_argument("--draws", type=int, default=1000)
    ap.add_argument("--chains", type=int, default=4)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        qa = _qa(root, args)
        dilemma = _dilemma(root, qa["responses"], args)
    print(
        f"QA design: {args.systems} systems, {qa['responses']:,} answers; dilemma design: "
        f"{dilemma['systems']} systems, {dilemma['responses']:,} responses; "
        f"{args.n_boot} bootstrap replicates"
        + (f", Bayesian {args.chains} chains x {args.draws} draws" if args.bayes else "")
    )
    print(f"{'step':<22}{'QA s':>10}{'dilemma s':>12}{'QA/dilemma':>12}")
    steps = [("ingest", "ingest"), ("frequentist tables", "tables")]
    if args.bayes:
        steps.append(("Bayesian fit", "bayes"))
    for label, key in steps:
        a, b = qa[key], dilemma[key]
        print(f"{label:<22}{a:>10.1f}{b:>12.1f}{a / b:>12.2f}")
    rate = qa["responses"] / qa["ingest"]
    print(f"QA ingest: {rate:,.0f} answers/s (simulation took {qa['simulate']:.1f} s)")
    if args.bayes:
        print(f"QA Bayesian fit passed the convergence gate: {qa['bayes_converged']}")


if __name__ == "__main__":
    main()
