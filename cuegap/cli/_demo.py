"""The demo: simulate, ingest, analyse and report in one command."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from cuegap.cli._ingest import SystemsOption, _print_summary
from cuegap.cli._report import _print_published
from cuegap.cli._store import _print_status
from cuegap.cli.common import (
    MAX_SEED,
    _progress,
    _require_folder,
    _State,
    _steps,
    console,
    friendly,
)
from cuegap.terminal import safe


@friendly
def demo(
    out_dir: Annotated[
        Path, typer.Option("--dir", help="Where to write the simulated data.")
    ] = Path("cuegap-demo"),
    systems: SystemsOption = 14,
    seed: Annotated[int, typer.Option("--seed", min=0, max=MAX_SEED, help="Random seed.")] = 2026,
    bayes: Annotated[
        bool,
        typer.Option("--bayes/--no-bayes", help="Include the hierarchical Bayesian fit."),
    ] = True,
) -> None:
    """Run the whole audit on a simulated paper-scale dataset: simulate, ingest, analyse, report."""
    from cuegap.api import Audit, IngestPlan
    from cuegap.designs.dilemma.simulate import simulate as run_simulation
    from cuegap.schema import current_revision, head_revision, make_engine, upgrade

    started = time.perf_counter()
    spent: dict[str, float] = {}
    _require_folder(out_dir)
    engine = make_engine(_State.db)
    if current_revision(engine) != head_revision():
        upgrade(engine)  # the demo store is ours to create or bring up to date
    console.rule("1. simulate")
    with _timed(spent, "simulate"):
        result = run_simulation(out_dir, systems=systems, seed=seed)
    console.print(
        f"{result.n_systems} systems, {result.n_responses:,} responses in {safe(out_dir)}",
        highlight=False,
    )
    console.rule("2. ingest")
    audit = Audit(engine, out=console)
    for path in (result.itembank_path, result.responses_path):
        with _timed(spent, "ingest"):
            audit.ingest(plan=IngestPlan((path,)), each=_print_summary,
                         progress=lambda p: _progress(f"ingest {safe(p.name)}"))  # fmt: skip
    console.rule("3. store")
    with _timed(spent, "store status"):
        _print_status(engine)
    console.rule("4. analyze")
    from cuegap.designs import AnalyzeOptions
    from cuegap.designs.dilemma import analyze as run_analysis
    from cuegap.designs.dilemma import dilemma_settings, load_store_data, print_analysis, run_bayes
    from cuegap.models import load_policy

    settings = dilemma_settings(AnalyzeOptions(policy=load_policy(None), boot=1000, seed=seed))

    with _timed(spent, "analyze (1,000 bootstrap replicates)"), _steps("analyze") as step:
        step("reading count tables from the store")
        data = load_store_data(engine)  # one snapshot for the analysis and the fit
        analysis = run_analysis(engine, settings, progress=step, data=data)
    print_analysis(analysis)
    fit = None
    if bayes:
        with _timed(spent, "Bayesian fit"):
            fit = run_bayes(engine, settings, draws=1000, chains=4, force=False, data=data)
    console.rule("5. report")
    with _timed(spent, "report (HTML and PDF)"):
        published = audit.report(analysis=analysis.id, out=out_dir, steps=_steps)
    _print_published(published)
    _print_timing(spent, time.perf_counter() - started, fit)


@contextmanager
def _timed(spent: dict[str, float], step: str) -> Iterator[None]:
    """Add the wall time of the block to ``spent[step]``."""
    start = time.perf_counter()
    try:
        yield
    finally:
        spent[step] = spent.get(step, 0.0) + time.perf_counter() - start


def _print_timing(spent: dict[str, float], total: float, fit: Any) -> None:
    """Where the demo's time went, with the Bayesian fit split into compile and sampling."""
    table = Table("step", "seconds", title="Where the time went")
    for step, seconds in spent.items():
        table.add_row(step, f"{seconds:.1f}")
        diag = (
            None if fit is None or step != "Bayesian fit" else fit.tables.get("bayes_diagnostics")
        )
        if diag is not None and not diag.empty and "compile_seconds" in diag:
            compiled = float(diag["compile_seconds"].sum())
            sampled = float(diag["seconds"].sum()) - compiled
            table.add_row("  of which sampler compilation", f"{compiled:.1f}")
            table.add_row("  of which sampling", f"{sampled:.1f}")
            from cuegap.models import last_jax_fit

            info = last_jax_fit()
            if info is not None and (diag["sampler"] == "jax").any():
                hit = "yes" if info.cache_hit else "no (compiled, now stored)"
                table.add_row("  sampler program from the cache", hit)
    table.add_row("other (store checks, messages)", f"{max(total - sum(spent.values()), 0):.1f}")
    table.add_row("[bold]total[/]", f"[bold]{total:.1f}[/]")
    console.print(table)
