"""The dilemma design's command bodies: ``analyze``, ``reanalyze`` and ``simulate`` for
seed 000's moral dilemmas (argument handling and display only)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from rich.table import Table

from cuegap.cli.common import console, err
from cuegap.cli.common import steps as _steps
from cuegap.cli.verdicts import print_verdicts
from cuegap.designs import AnalyzeOptions, SimulateOptions
from cuegap.terminal import safe


def dilemma_settings(options: AnalyzeOptions, *, seed: int | None = None) -> Any:
    """The dilemma analysis settings of the command line's options."""
    from cuegap.designs.dilemma._analysis_settings import AnalysisSettings, parse_condition

    explicit = options.values.get("explicit")
    implicit = options.values.get("implicit")
    consequences = options.values.get("consequences")
    settings = AnalysisSettings(
        policy=options.policy,
        n_boot=options.boot,
        seed=options.seed if seed is None else seed,
        consequences=True if consequences is None else consequences,
        # a choice made on the command line is kept as given
        chosen=frozenset(
            name
            for name, value in (
                ("explicit", explicit),
                ("implicit", implicit),
                ("consequences", consequences),
            )
            if value is not None
        ),
    )
    if explicit is not None:
        settings = replace(settings, explicit=parse_condition(explicit))
    if implicit is not None:
        settings = replace(settings, implicit=parse_condition(implicit))
    return settings


def analyze_dilemma(engine: Any, options: AnalyzeOptions) -> int:
    """Run and print the dilemma analysis (and its Bayesian fit with ``--bayes``)."""
    from cuegap.audit import latest_analysis_id
    from cuegap.designs.dilemma._analysis import analyze as run_analysis

    settings = dilemma_settings(options)
    data = None
    with _steps("analyze") as step:
        if options.bayes:  # one snapshot of the counts for both the analysis and the fit
            from cuegap.designs.dilemma._analysis_tables import load_store_data

            step("reading count tables from the store")
            data = load_store_data(engine)
        result = run_analysis(engine, settings, force=options.force, progress=step, data=data)
    print_analysis(result)
    print_verdicts(engine, int(result.id), "Verdicts (bootstrap)")
    newest = latest_analysis_id(engine, "frequentist")
    if result.reused and newest != result.id:
        console.print(
            f"Analysis {newest} (other settings) is newer, and `cuegap report` reports the "
            f"newest: use `cuegap report --analysis {result.id}` for this one."
        )
    if options.bayes:
        run_bayes(engine, settings, draws=options.draws, chains=options.chains,
                  force=options.force, data=data)  # fmt: skip
    return int(result.id)


def print_analysis(result: Any) -> None:
    """The dilemma analysis's headline: the compared conditions and the macro gap."""
    from cuegap.designs.dilemma._analysis_tables import TABLES
    from cuegap.designs.dilemma.stats import condition_label

    how = "reused (data and settings unchanged)" if result.reused else "computed and stored"
    console.print(
        f"Analysis {result.id} ({result.kind}) {how}; data fingerprint "
        f"{result.data_fingerprint[:12]}; {len(result.tables)} tables"
    )
    stored = result.settings or {}
    explicit = safe(condition_label(tuple(stored.get("explicit", ("direct", None)))))
    implicit = safe(condition_label(tuple(stored.get("implicit", ("puzzled", "hard")))))
    shown = "with" if stored.get("consequences", True) else "without"
    console.print(
        f"Gap = net under {explicit} (identity stated) - net under {implicit}; verdicts on "
        f"prompts {shown} consequences."
    )
    excl = result.tables.get("exclusions")
    if excl is not None:
        for r in excl[excl["excluded"]].itertuples():
            console.print(f"[yellow]excluded[/] {safe(r.system)}: {safe(r.reason)}")
    gap = result.tables.get("macro_gap")
    if gap is not None and len(gap):
        table = Table(
            "system",
            "consequences",
            f"net {explicit}",
            f"net {implicit}",
            "gap (pp)",
            title="Macro Cue Visibility Gap",
        )
        for r in gap.itertuples():
            table.add_row(
                safe(r.system),
                "with" if r.consequences else "without",
                f"{r.net_direct_pp:+.1f}",
                f"{r.net_puzzled_pp:+.1f}",
                f"{r.gap_pp:+.1f}",
            )
        console.print(table)
    names = [n for n in TABLES if n in result.tables] + sorted(set(result.tables) - set(TABLES))
    console.print("Tables (cuegap export NAME --out FILE.csv|.parquet): " + safe(", ".join(names)))


def run_bayes(
    engine: Any, settings: Any, *, draws: int, chains: int, force: bool, data: Any = None
) -> Any:
    """Fit and print the dilemma design's hierarchical Bayesian model."""
    from cuegap.designs import BayesSettings
    from cuegap.designs.dilemma._analysis import analyze_bayes

    console.rule("Bayesian fit")
    fit = analyze_bayes(
        engine,
        settings,
        BayesSettings(draws=draws, tune=draws, chains=chains, seed=settings.seed),
        force=force,
        progress=lambda msg: err.print(f"  {safe(msg)}", highlight=False),
        sampler_progress=err.is_terminal,
        data=data,
    )
    how = "reused" if fit.reused else "stored"
    state = "converged" if fit.status == "ok" else "[red]did not converge[/]"
    console.print(f"Bayesian analysis {fit.id} {how}: {state}")
    print_verdicts(engine, int(fit.id), "Verdicts (posterior)")
    if fit.status != "ok":
        console.print(
            "The fit missed the convergence gate, so every verdict above is inconclusive. "
            f"Sample longer: `cuegap analyze --bayes --draws {2 * draws} --chains "
            f"{max(chains, 4)}` (a new fit; the frequentist tables are reused).",
            highlight=False,
        )
    return fit


def simulate_dilemma(options: SimulateOptions) -> None:
    """Simulate seed 000's dilemma audit and print what was written."""
    from cuegap.designs.dilemma.simulate import simulate as run_simulation

    variants = variant_options(options)
    result = run_simulation(options.out_dir, systems=options.systems, seed=options.seed,
                            named=bool(options.get("named", False)), **variants)  # fmt: skip
    console.print(
        f"Simulated {result.n_systems} systems, {result.n_responses:,} responses "
        f"(item bank {safe(repr(result.item_bank_name))}) in {safe(options.out_dir)}:",
        highlight=False,
    )
    for p in (result.itembank_path, result.responses_path, result.truth_path):
        console.print(f"  {safe(p)}", highlight=False)


def variant_options(options: SimulateOptions) -> dict:
    """The dilemma simulator's prompt-variant arguments, checked."""
    prompt_variants = int(options.get("prompt_variants", 1))
    format_effect = float(options.get("format_effect", 0.0))
    format_driven = options.get("format_driven")
    driven = None
    if format_driven is not None:
        try:
            driven = [int(x) for x in format_driven.split(",") if x.strip()]
        except ValueError:
            raise ValueError(
                f"--format-driven should be system numbers like 1,3 but got {format_driven!r}"
            ) from None
    if (format_effect or driven) and prompt_variants < 2:
        raise ValueError("--format-effect and --format-driven need --prompt-variants 2 or more")
    return {"prompt_variants": prompt_variants, "format_effect_pp": format_effect,
            "format_driven": driven}  # fmt: skip
