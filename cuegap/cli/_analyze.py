"""Analysis commands: the frequentist analysis and the Bayesian fit.

Also the analysis settings and their options, which the report commands and the demo share.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from cuegap._terminal import safe
from cuegap.cli._common import (
    MAX_BOOT,
    MAX_CHAINS,
    MAX_DRAWS,
    MAX_SEED,
    _engine,
    _steps,
    console,
    err,
    friendly,
)


def _settings(
    policy: Path | None,
    boot: int,
    seed: int,
    explicit: str | None = None,
    implicit: str | None = None,
    consequences: bool | None = None,
) -> Any:
    from cuegap.audit import AnalysisSettings, parse_condition
    from cuegap.models import load_policy

    settings = AnalysisSettings(
        policy=load_policy(policy),
        n_boot=boot,
        seed=seed,
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


BootOption = Annotated[
    int,
    typer.Option(
        "--boot",
        min=0,
        max=MAX_BOOT,
        help=f"Bootstrap replicates for the ± values (0 to {MAX_BOOT:,}).",
    ),
]
ExplicitOption = Annotated[
    str | None,
    typer.Option(
        "--explicit",
        help="Condition where identity is stated, e.g. direct, named (default: direct; "
        "explicit when the store has no direct).",
    ),
]


ConsequencesOption = Annotated[
    bool | None,
    typer.Option(
        "--consequences/--no-consequences",
        help="Headline tables and verdicts for prompts with / without the consequences text "
        "(default: with; without when the store has only those).",
        show_default=False,
    ),
]


ImplicitOption = Annotated[
    str | None,
    typer.Option(
        "--implicit",
        help="Condition where identity must be inferred, e.g. puzzled-hard, puzzled-easy, "
        "formal_named (default: puzzled-hard; implicit when the store has no puzzled).",
    ),
]


DesignOption = Annotated[
    str | None,
    typer.Option(
        "--design",
        help="Study design to work on: dilemma, qa, prompt-variance or conversation (default: "
        "the only one the store holds).",
    ),
]
StrategyOption = Annotated[
    str,
    typer.Option(
        "--strategy",
        help="QA design: the prompting strategy whose explicit-vs-implicit gap decides the "
        "verdicts.",
    ),
]


def _dilemma_only(**given: Any) -> None:
    """Refuse dilemma options on another design's analysis."""
    used = [f"--{k}" for k, v in given.items() if v is not None]
    if used:
        raise ValueError(f"{', '.join(used)} applies to the dilemma design only")


def _no_strategy(strategy: str, design: str) -> None:
    """Refuse ``--strategy`` on a design without prompting strategies (it would be ignored)."""
    if strategy != "zero-shot":
        raise ValueError(
            f"--strategy applies to the QA and prompt-variance designs only, not the {design} "
            "design"
        )


def _analyze_qa(
    engine: Any, settings: Any, *, force: bool, bayes: bool, draws: int, chains: int
) -> None:
    from cuegap.audit import BayesSettings, analyze_qa, analyze_qa_bayes

    with _steps("analyze") as step:
        result = analyze_qa(engine, settings, force=force, progress=step)
    how = "reused (data and settings unchanged)" if result.reused else "computed and stored"
    console.print(
        f"QA analysis {result.id} {how}; data fingerprint {result.data_fingerprint[:12]}; "
        f"{len(result.tables)} tables"
    )
    console.print(
        f"Gap G = S_amb(implicit) - S_amb(explicit) under {safe(settings.strategy)}; "
        f"δ = {settings.delta:g} on the bias-score scale."
    )
    _print_qa_verdicts(result.tables["verdicts"], "Verdicts (bootstrap)")
    console.print(
        "Tables (cuegap export NAME --out FILE.csv|.parquet): " + safe(", ".join(result.tables))
    )
    if not bayes:
        return
    console.rule("Bayesian fit")
    fit = analyze_qa_bayes(
        engine,
        settings,
        BayesSettings(draws=draws, tune=draws, chains=chains, seed=settings.seed),
        force=force,
        progress=lambda msg: err.print(f"  {safe(msg)}", highlight=False),
        sampler_progress=err.is_terminal,
    )
    diag = fit.tables["qa_bayes_diagnostics"]
    ok = bool(diag["passed"].iloc[-1])
    state = "converged" if ok else "[red]did not converge[/]"
    console.print(f"QA Bayesian analysis {fit.id} {'reused' if fit.reused else 'stored'}: {state}")
    _print_qa_verdicts(fit.tables["verdicts"], "Verdicts (posterior)")
    if not ok:
        console.print(
            "The fit missed the convergence gate, so every verdict above is inconclusive. "
            f"Sample longer: `cuegap analyze --design qa --bayes --draws {2 * draws} --chains "
            f"{max(chains, 4)}`.",
            highlight=False,
        )


def _print_qa_verdicts(verdicts: Any, title: str) -> None:
    table = Table("system", "verdict", "G", "reason", title=title)
    for r in verdicts.itertuples():
        gap = "" if r.gap != r.gap else f"{r.gap:+.3f}"
        table.add_row(safe(r.system), safe(r.verdict), gap, safe(r.reason))
    console.print(table)


def _print_analysis(result: Any) -> None:
    from cuegap.audit import TABLES, condition_label

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


@friendly
def analyze(
    policy: Annotated[
        Path | None,
        typer.Option("--policy", help="Verdict policy TOML file (default: built-in policy)."),
    ] = None,
    boot: BootOption = 1000,
    seed: Annotated[
        int, typer.Option("--seed", min=0, max=MAX_SEED, help="Seed of the bootstrap.")
    ] = 2026,
    force: Annotated[
        bool, typer.Option("--force", help="Recompute even if data and settings are unchanged.")
    ] = False,
    bayes: Annotated[
        bool,
        typer.Option(
            "--bayes/--no-bayes",
            help="Also fit the hierarchical Bayesian model (verdicts then use its posterior).",
        ),
    ] = False,
    draws: Annotated[
        int,
        typer.Option(
            "--draws",
            min=10,
            max=MAX_DRAWS,
            help=f"Posterior draws per chain (10 to {MAX_DRAWS:,}).",
        ),
    ] = 1000,
    chains: Annotated[
        int,
        typer.Option(
            "--chains", min=1, max=MAX_CHAINS, help=f"Sampler chains (1 to {MAX_CHAINS})."
        ),
    ] = 4,
    explicit: ExplicitOption = None,
    implicit: ImplicitOption = None,
    consequences: ConsequencesOption = None,
    design: DesignOption = None,
    strategy: StrategyOption = "zero-shot",
    factors: Annotated[
        str | None,
        typer.Option(
            "--factors",
            help="Prompt-variance design: comma-separated prompt factors to compare (default: "
            "every response factor with two or more values, e.g. choice_format,field_order).",
        ),
    ] = None,
    unit: Annotated[
        str | None,
        typer.Option(
            "--unit",
            help="Conversation design: the t-tests' unit of observation, persona (default), "
            "question or category; recorded with the tables.",
        ),
    ] = None,
    bh: Annotated[
        bool,
        typer.Option(
            "--bh",
            help="Conversation design: Benjamini–Hochberg within each contrast and benchmark.",
        ),
    ] = False,
) -> None:
    """Compute every statistic of the store's study design and store the result tables."""
    from cuegap.audit import analyze as run_analysis
    from cuegap.designs import resolve_design
    from cuegap.models import load_policy

    engine = _engine(create=False)
    chosen = load_policy(policy)  # a bad policy file is named before the store is read
    chosen_design = resolve_design(engine, design)
    if chosen_design == "conversation":
        from cuegap.cli._conv_analyze import analyze_conv

        _dilemma_only(explicit=explicit, implicit=implicit, consequences=consequences)
        _no_strategy(strategy, "conversation")
        if factors is not None:
            raise ValueError("--factors applies to the prompt-variance design only")
        analyze_conv(
            engine, chosen, unit=unit, bh=bh, force=force, bayes=bayes, draws=draws,
            chains=chains, seed=seed,
        )  # fmt: skip
        return
    if unit is not None or bh:
        raise ValueError("--unit and --bh apply to the conversation design only")
    if chosen_design == "prompt-variance":
        from cuegap.cli._pv import analyze_pv

        _dilemma_only(explicit=explicit, implicit=implicit, consequences=consequences)
        analyze_pv(engine, chosen, factors=factors, strategy=strategy, force=force)
        if bayes:
            from cuegap.cli._pv import analyze_pv_bayes

            analyze_pv_bayes(
                engine, chosen, factors=factors, strategy=strategy, force=force,
                draws=draws, chains=chains, seed=seed,
            )  # fmt: skip
        return
    if factors is not None:
        raise ValueError("--factors applies to the prompt-variance design only")
    if chosen_design == "qa":
        from cuegap.audit import QASettings

        _dilemma_only(explicit=explicit, implicit=implicit, consequences=consequences)
        qa = QASettings(policy=chosen, strategy=strategy, n_boot=boot, seed=seed)
        _analyze_qa(engine, qa, force=force, bayes=bayes, draws=draws, chains=chains)
        return
    _no_strategy(strategy, "dilemma")
    settings = _settings(policy, boot, seed, explicit, implicit, consequences)
    data = None
    with _steps("analyze") as step:
        if bayes:  # one snapshot of the counts for both the analysis and the fit
            from cuegap.audit._dilemma_tables import load_store_data

            step("reading count tables from the store")
            data = load_store_data(engine)
        result = run_analysis(engine, settings, force=force, progress=step, data=data)
    _print_analysis(result)
    from cuegap.audit import latest_analysis_id

    newest = latest_analysis_id(engine, "frequentist")
    if result.reused and newest != result.id:
        console.print(
            f"Analysis {newest} (other settings) is newer, and `cuegap report` reports the "
            f"newest: use `cuegap report --analysis {result.id}` for this one."
        )
    if bayes:
        _run_bayes(engine, settings, draws=draws, chains=chains, force=force, data=data)


def _run_bayes(
    engine: Any, settings: Any, *, draws: int, chains: int, force: bool, data: Any = None
) -> Any:
    from cuegap.audit import BayesSettings, analyze_bayes

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
    verdicts = fit.tables["verdicts"]
    table = Table("system", "verdict", "reason", title="Verdicts (posterior)")
    for r in verdicts.itertuples():
        table.add_row(safe(r.system), safe(r.verdict), safe(r.reason))
    console.print(table)
    if fit.status != "ok":
        console.print(
            "The fit missed the convergence gate, so every verdict above is inconclusive. "
            f"Sample longer: `cuegap analyze --bayes --draws {2 * draws} --chains "
            f"{max(chains, 4)}` (a new fit; the frequentist tables are reused).",
            highlight=False,
        )
    return fit
