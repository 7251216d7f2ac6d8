"""Getting data in: ingest runner outputs and item banks, simulate a dataset, list the formats."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

from cuegap.cli.common import (
    MAX_SEED,
    MAX_SYSTEMS,
    _engine,
    _progress,
    _require_folder,
    console,
    err,
    friendly,
)
from cuegap.format_names import FORMAT_NAMES
from cuegap.terminal import safe

if TYPE_CHECKING:
    from cuegap.ingest import IngestSummary

SystemsOption = Annotated[
    int,
    typer.Option(
        "--systems",
        "-n",
        min=1,
        max=MAX_SYSTEMS,
        help=f"Systems to simulate (1 to {MAX_SYSTEMS}).",
    ),
]


def _print_summary(s: IngestSummary) -> None:
    name = safe(Path(s.path).name)
    if s.kind == "item_bank" and not s.quarantined:
        console.print(f"[bold]{name}[/] ({safe(s.format)}): {safe(s.note)}", highlight=False)
        return
    line = (
        f"[bold]{name}[/] ({safe(s.format)}): read {s.read:,} = stored {s.stored:,} + "
        f"duplicate {s.duplicate:,} + quarantined {s.quarantined:,}"
    )
    console.print(line, highlight=False)
    if s.note:
        console.print(f"  {safe(s.note)}", highlight=False)
    for line_no, reason in s.problems[:5]:
        console.print(
            f"  [yellow]quarantined[/] {safe(s.path)}:{line_no}: {safe(reason)}", highlight=False
        )
    if s.quarantined > 5:
        console.print(f"  … and {s.quarantined - 5:,} more; see `cuegap status`")


@friendly
def ingest(
    paths: Annotated[
        list[Path], typer.Argument(help="Files or directories to ingest (item banks of all first).")
    ],
    format: Annotated[
        str | None,
        typer.Option("--format", "-f", help=f"Force a reader: {', '.join(FORMAT_NAMES)}."),
    ] = None,
    mapping: Annotated[
        Path | None,
        typer.Option(
            "--mapping",
            "-m",
            help="TOML file mapping a runner's sample metadata to cuegap fields (runner "
            "formats only; see 'Ingesting runner outputs' in docs/formats.md).",
        ),
    ] = None,
    system: Annotated[
        str | None,
        typer.Option(
            "--system",
            "-s",
            help="The audited system of result lines that name none (BBQ-style results, as "
            "published); a line's or a header's system wins.",
        ),
    ] = None,
) -> None:
    """Ingest item banks and response files (format detected unless --format is given).

    Every input line is stored, counted as a duplicate of a stored response, or quarantined
    with its file, line and reason. Ingesting a file again stores nothing new. A directory
    gives its files; a BBQ-family repository as cloned gives its data/ banks and the result
    files in its other folders. Item banks of all paths are stored first (ImplicitBBQ banks
    after BBQ's, which they join), then results; files no reader recognises are skipped
    and listed.
    Exits 3 when a file had records but every one was quarantined (wrong --format or
    mapping?), or could not be read past a damaged point, after ingesting the other files.
    """
    from cuegap.api import Audit, ingest_failures, plan_ingest
    from cuegap.cli._store import recover

    # Check the arguments before the store is created: a typo must leave no empty store.
    plan = plan_ingest(paths, format=format, mapping=mapping, system=system)
    engine = _engine(create=True)
    recover(engine)  # seal what a killed ingest left (ingest_path would, without a word)
    for path in plan.skipped:
        console.print(f"skipped {safe(path)}: no reader recognises it", highlight=False)
    summaries = Audit(engine, out=console).ingest(
        plan=plan, progress=lambda path: _progress(f"ingest {safe(path.name)}"),
        each=_print_summary,
    )  # fmt: skip
    failures = ingest_failures(summaries)
    for message in failures:
        err.print(f"[bold red]error:[/] {safe(message)}", highlight=False, soft_wrap=True)
    if failures:
        raise typer.Exit(3)


@friendly
def simulate(
    out_dir: Annotated[Path, typer.Argument(help="Directory to write the dataset to.")],
    systems: SystemsOption = 3,
    seed: Annotated[int, typer.Option("--seed", min=0, max=MAX_SEED, help="Random seed.")] = 0,
    named: Annotated[
        bool, typer.Option("--named/--no-named", help="Add Named and FormalNamed conditions.")
    ] = False,
    design: Annotated[
        str,
        typer.Option(
            "--design",
            help="dilemma (seed 000's moral dilemmas), qa (seed 001's BBQ-style questions "
            "with explicit and implicit cues) or prompt-variance (seed 003 §3: BBQ and "
            "Difference-Awareness under prompt formats and replicates) or conversation "
            "(seed 003 §4-5: two-agent MAC-Fairness transcripts and config snapshots).",
        ),
    ] = "dilemma",
    scale: Annotated[
        str,
        typer.Option(
            "--scale",
            help="QA design: small (24 templates per dimension, 2,304 items) or paper (667, "
            "≈8,000 items per cue and context; with --systems 11, seed 001's 2.8 million "
            "answers). Prompt-variance design: small, or paper (seed 003: 11 systems x 9 BBQ "
            "categories x 200 questions x 22 prompt combinations x 5 replicates, plus "
            "Difference-Awareness 8 subsets x 250; --systems is then 11). Conversation "
            "design: small (5 categories x 4 questions x 168 configurations per system), or "
            "paper (seed 003: 8 systems, BBQ 9 x 200, Difference-Awareness 8 x 250, "
            "Discrim-Eval 2 x 1,000 questions x 168 configurations, 7.8 million transcripts).",
        ),
    ] = "small",
    cue_gap: Annotated[
        bool,
        typer.Option(
            "--cue-gap/--no-cue-gap",
            help="Prompt-variance design: also plant an explicit vs implicit cue contrast "
            "(steady and format-driven gaps).",
        ),
    ] = False,
    prompt_variants: Annotated[
        int,
        typer.Option(
            "--prompt-variants",
            min=1,
            max=50,
            help="Dilemma design: answer every prompt under this many prompt variants.",
        ),
    ] = 1,
    format_effect: Annotated[
        float,
        typer.Option(
            "--format-effect",
            min=0,
            max=50,
            help="Dilemma design: move the format-driven systems' gap by ± this many pp "
            "per prompt variant, alternately.",
        ),
    ] = 0.0,
    format_driven: Annotated[
        str | None,
        typer.Option(
            "--format-driven",
            help="Dilemma design: the format-driven systems' numbers, e.g. 1,3 (default: "
            "the odd-numbered ones).",
        ),
    ] = None,
) -> None:
    """Write a simulated audit dataset with planted effects: item bank, responses, truth."""
    from cuegap.api import simulate as run_simulation

    _require_folder(out_dir)
    defaults = {"named": False, "cue_gap": False, "prompt_variants": 1, "format_effect": 0.0,
                "format_driven": None}  # fmt: skip
    values = {"named": named, "cue_gap": cue_gap, "prompt_variants": prompt_variants,
              "format_effect": format_effect, "format_driven": format_driven}  # fmt: skip
    given = {k: v for k, v in values.items() if v != defaults[k]}
    run_simulation(design, out_dir, systems=systems, seed=seed, scale=scale, console=console,
                   **given)  # fmt: skip


def formats() -> None:
    """List the input formats cuegap reads."""
    from cuegap.ingest import READERS

    table = Table("name", "kind", "description")
    for r in READERS.values():
        table.add_row(safe(r.name), safe(r.kind), safe(r.description))
    console.print(table)
