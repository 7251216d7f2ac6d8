"""The QA design's command bodies: ``analyze``, ``reanalyze``, ``simulate`` and its part of
``cuegap status`` for seed 001's BBQ-style questions (argument handling and display only)."""

from __future__ import annotations

from typing import Any

from rich.table import Table

from cuegap.cli.common import console, err
from cuegap.cli.common import progress as _progress
from cuegap.cli.common import steps as _steps
from cuegap.cli.verdicts import print_verdicts
from cuegap.designs import AnalyzeOptions, SimulateOptions
from cuegap.terminal import safe


def qa_settings(options: AnalyzeOptions, *, seed: int | None = None) -> Any:
    """The QA analysis settings of the command line's options."""
    from cuegap.designs.qa._analysis import QASettings

    strategy = options.get("strategy", "zero-shot")
    if seed is None:
        return QASettings(policy=options.policy, strategy=strategy, n_boot=options.boot,
                          seed=options.seed)  # fmt: skip
    return QASettings(policy=options.policy, strategy=strategy, n_boot=options.boot)


def analyze_qa(engine: Any, options: AnalyzeOptions) -> int:
    """Run and print a QA analysis (and its Bayesian fit with ``--bayes``)."""
    from cuegap.designs import BayesSettings
    from cuegap.designs.qa._analysis import analyze_qa, analyze_qa_bayes

    settings = qa_settings(options)
    draws, chains = options.draws, options.chains
    with _steps("analyze") as step:
        result = analyze_qa(engine, settings, force=options.force, progress=step)
    how = "reused (data and settings unchanged)" if result.reused else "computed and stored"
    console.print(
        f"QA analysis {result.id} {how}; data fingerprint {result.data_fingerprint[:12]}; "
        f"{len(result.tables)} tables"
    )
    console.print(
        f"Gap G = S_amb(implicit) - S_amb(explicit) under {safe(settings.strategy)}; "
        f"δ = {settings.delta:g} on the bias-score scale."
    )
    print_verdicts(engine, int(result.id), "Verdicts (bootstrap)")
    console.print(
        "Tables (cuegap export NAME --out FILE.csv|.parquet): " + safe(", ".join(result.tables))
    )
    if not options.bayes:
        return int(result.id)
    console.rule("Bayesian fit")
    fit = analyze_qa_bayes(
        engine,
        settings,
        BayesSettings(draws=draws, tune=draws, chains=chains, seed=settings.seed),
        force=options.force,
        progress=lambda msg: err.print(f"  {safe(msg)}", highlight=False),
        sampler_progress=err.is_terminal,
    )
    diag = fit.tables["qa_bayes_diagnostics"]
    ok = bool(diag["passed"].iloc[-1])
    state = "converged" if ok else "[red]did not converge[/]"
    console.print(f"QA Bayesian analysis {fit.id} {'reused' if fit.reused else 'stored'}: {state}")
    print_verdicts(engine, int(fit.id), "Verdicts (posterior)")
    if not ok:
        console.print(
            "The fit missed the convergence gate, so every verdict above is inconclusive. "
            f"Sample longer: `cuegap analyze --design qa --bayes --draws {2 * draws} --chains "
            f"{max(chains, 4)}`.",
            highlight=False,
        )
    return int(result.id)


def simulate_qa(options: SimulateOptions) -> None:
    """Simulate seed 001's QA audit and print what was written."""
    from cuegap.designs.qa._simulate import simulate_qa as run

    with _progress("simulating QA answers") as advance:
        result = run(options.out_dir, systems=options.systems, scale=options.scale,
                     seed=options.seed, progress=advance)  # fmt: skip
    console.print(
        f"Simulated {result.n_systems} systems, {result.n_items:,} QA items and "
        f"{result.n_responses:,} answers in {safe(options.out_dir)}:",
        highlight=False,
    )
    for p in (result.itembank_path, result.responses_path, result.truth_path):
        console.print(f"  {safe(p)}", highlight=False)


def _pct(x: float) -> str:
    return "–" if x != x else f"{100 * x:.1f}%"


def print_qa_status(systems: Any, cells: Any, out: Any = console) -> None:
    """The QA design's answers per system and per cue × context (:func:`cuegap.schema.
    qa_status`'s frames), when the store has any."""
    if systems.empty:
        return
    table = Table("system", "answers", "unparsable", title="QA design: answers per system")
    for r in systems.itertuples():
        table.add_row(safe(r.system), f"{r.answers:,}", _pct(r.unparsable / r.answers))
    out.print(table)
    table = Table("cue", "context", "answers", "unparsable", title="QA design: cues and contexts")
    for r in cells.itertuples():
        table.add_row(
            safe(r.cue), safe(r.context), f"{r.answers:,}", _pct(r.unparsable / r.answers)
        )
    out.print(table)
