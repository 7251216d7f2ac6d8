"""Getting data in: ingest runner outputs and item banks, simulate a dataset, list the formats."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

from cuegap._format_names import FORMAT_NAMES
from cuegap._terminal import safe
from cuegap.cli._common import (
    MAX_SEED,
    MAX_SYSTEMS,
    _engine,
    _fail,
    _progress,
    _require_folder,
    console,
    err,
    friendly,
)

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
    if s.kind == "item_bank":
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
    paths: Annotated[list[Path], typer.Argument(help="Files or directories to ingest, in order.")],
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
            "formats only; see 'Ingesting runner outputs' in the README).",
        ),
    ] = None,
) -> None:
    """Ingest item banks and response files (format detected unless --format is given).

    Every input line is stored, counted as a duplicate of a stored response, or quarantined
    with its file, line and reason. Ingesting a file again stores nothing new. A directory
    gives its files (item banks first); files no reader recognises are skipped and listed.
    Exits 3 when a file had records but every one was quarantined (wrong --format or
    mapping?), or could not be read past a damaged point, after ingesting the other files.
    """
    from cuegap.cli._store import recover
    from cuegap.ingest import expand_path, get_reader, ingest_path

    # Check the arguments before the store is created: a typo must leave no empty store.
    if format is not None:
        get_reader(format)
    for path in paths:
        if not path.exists():
            raise _fail(f"{path}: no such file or directory")
    if mapping is not None and not mapping.exists():
        raise _fail(f"{mapping}: no such mapping file")
    engine = _engine(create=True)
    recover(engine)  # seal what a killed ingest left (ingest_path would, without a word)
    nothing_stored: list[IngestSummary] = []
    for given in paths:
        files, skipped = expand_path(given, format=format)
        for path in skipped:
            console.print(f"skipped {safe(path)}: no reader recognises it", highlight=False)
        for path in files:
            with _progress(f"ingest {safe(path.name)}") as progress:
                summary = ingest_path(
                    engine, path, format=format, progress=progress, mapping=mapping
                )
            _print_summary(summary)
            if summary.kind == "responses" and (
                summary.read == summary.quarantined > 0 or summary.incomplete
            ):
                nothing_stored.append(summary)
    for s in nothing_stored:
        why = s.problems[0][1] if s.problems else "see `cuegap status`"
        message = (
            f"{s.path}: nothing stored, all {s.read:,} records were quarantined (first: "
            f"{why}); check --format and --mapping"
            if s.read == s.quarantined
            else f"{s.path}: not read to its end: {s.incomplete}"
        )
        err.print(f"[bold red]error:[/] {safe(message)}", highlight=False, soft_wrap=True)
    if nothing_stored:
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
    from cuegap.simulate import simulate as run_simulation

    _require_folder(out_dir)
    variants = _variant_options(design, prompt_variants, format_effect, format_driven)
    if design == "prompt-variance":
        from cuegap.cli._pv import simulate_pv

        if named:
            raise ValueError("--named applies to the dilemma design only")
        simulate_pv(out_dir, systems=systems, seed=seed, scale=scale, cue_gap=cue_gap)
        return
    if design == "conversation":
        from cuegap.cli._conv import simulate_conv_cmd

        if named:
            raise ValueError("--named applies to the dilemma design only")
        simulate_conv_cmd(out_dir, systems=systems, seed=seed, scale=scale)
        return
    if cue_gap:
        raise ValueError("--cue-gap applies to the prompt-variance design only")
    if design == "qa":
        _simulate_qa(out_dir, systems, seed, scale, named)
        return
    if design != "dilemma":
        raise ValueError(
            f"--design should be dilemma, qa, prompt-variance or conversation but got {design!r}"
        )
    result = run_simulation(out_dir, systems=systems, seed=seed, named=named, **variants)
    console.print(
        f"Simulated {result.n_systems} systems, {result.n_responses:,} responses "
        f"(item bank {safe(repr(result.item_bank_name))}) in {safe(out_dir)}:",
        highlight=False,
    )
    for p in (result.itembank_path, result.responses_path, result.truth_path):
        console.print(f"  {safe(p)}", highlight=False)


def _variant_options(
    design: str, prompt_variants: int, format_effect: float, format_driven: str | None
) -> dict:
    """The dilemma simulator's prompt-variant arguments, checked."""
    given = prompt_variants != 1 or format_effect != 0 or format_driven is not None
    if design != "dilemma" and given:
        raise ValueError(
            "--prompt-variants, --format-effect and --format-driven apply to the dilemma "
            "design only (the prompt-variance design plants its own format effects)"
        )
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


def _simulate_qa(out_dir: Path, systems: int, seed: int, scale: str, named: bool) -> None:
    from cuegap.simulate import simulate_qa

    if named:
        raise ValueError("--named applies to the dilemma design only")
    with _progress("simulating QA answers") as advance:
        result = simulate_qa(out_dir, systems=systems, scale=scale, seed=seed, progress=advance)
    console.print(
        f"Simulated {result.n_systems} systems, {result.n_items:,} QA items and "
        f"{result.n_responses:,} answers in {safe(out_dir)}:",
        highlight=False,
    )
    for p in (result.itembank_path, result.responses_path, result.truth_path):
        console.print(f"  {safe(p)}", highlight=False)


def formats() -> None:
    """List the input formats cuegap reads."""
    from cuegap.ingest import READERS

    table = Table("name", "kind", "description")
    for r in READERS.values():
        table.add_row(safe(r.name), safe(r.kind), safe(r.description))
    console.print(table)
