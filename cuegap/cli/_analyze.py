"""Analysis commands: the frequentist analysis and the Bayesian fit.

Also the analysis settings and their options, which the report commands and the demo share.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from cuegap.cli.common import (
    MAX_BOOT,
    MAX_CHAINS,
    MAX_DRAWS,
    MAX_SEED,
    _engine,
    console,
    friendly,
)

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
    str | None,
    typer.Option(
        "--strategy",
        help="QA and prompt-variance designs: the prompting strategy whose explicit-vs-"
        "implicit gap decides the verdicts (default: zero-shot).",
        show_default=False,
    ),
]


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
    strategy: StrategyOption = None,
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
    from cuegap.api import Audit
    from cuegap.models import load_policy

    engine = _engine(create=False)
    load_policy(policy)  # a bad policy file is named before the store is read
    values = {"explicit": explicit, "implicit": implicit, "consequences": consequences,
              "strategy": strategy, "factors": factors, "unit": unit, "bh": bh or None}  # fmt: skip
    Audit(engine, out=console).analyze(design, bayes=bayes, policy=policy, boot=boot,
                                       seed=seed, force=force, draws=draws, chains=chains,
                                       **values)  # fmt: skip


def analyze_options(design: Any, values: dict[str, Any], **shared: Any) -> Any:
    """The :class:`~cuegap.designs.AnalyzeOptions` of a command line, after refusing the
    design-specific options ``design`` does not take (:func:`cuegap.api.analyze_options`)."""
    from cuegap.api import analyze_options as build

    return build(design, values, **shared)
