"""Reporting commands: render a report of a stored analysis; re-analyse and re-report when
the data changed."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from cuegap.cli._analyze import (
    BootOption,
    ConsequencesOption,
    DesignOption,
    ExplicitOption,
    ImplicitOption,
    StrategyOption,
    analyze_options,
)
from cuegap.cli.common import (
    _engine,
    _fail,
    _steps,
    console,
    friendly,
)
from cuegap.terminal import safe


@friendly
def report(
    out: Annotated[
        Path, typer.Option("--out", "-o", help="Directory to write the report files to.")
    ],
    policy: Annotated[
        Path | None,
        typer.Option(
            "--policy",
            help="Verdict policy TOML file (default: the analysis's own policy); a different "
            "policy runs the analysis again with it (printed) before the report.",
        ),
    ] = None,
    analysis: Annotated[
        int | None,
        typer.Option(
            "--analysis",
            help="Analysis id: a frequentist, QA or conversation analysis (default: the newest of "
            "the design).",
        ),
    ] = None,
    format: Annotated[str, typer.Option("--format", "-f", help="html, pdf or both.")] = "both",
    signed: Annotated[
        str | None,
        typer.Option(
            "--signed",
            help="Write a signed copy of this registered report (id, path or hash): exactly "
            "the reviewed content, its sign-off block filled in.",
        ),
    ] = None,
    design: DesignOption = None,
) -> None:
    """Render an audit report (HTML and/or PDF): one design's, or the board report across all.

    On a store that holds several designs (without --design or --analysis), renders one
    board report across them: a systems x designs verdict matrix, then each design's
    sections. Every file written is registered in the store with its SHA-256, ready for
    `cuegap signoff`. Existing files are never replaced: a new render gets a new name.
    With --signed REPORT, writes a signed copy of that registered report.
    """
    from cuegap.models import load_policy
    from cuegap.reanalysis import publish_report

    formats = {"html": ("html",), "pdf": ("pdf",), "both": ("html", "pdf")}
    if format not in formats:
        raise ValueError(f"--format should be html, pdf or both but got {format!r}")
    if not out.is_dir() and out.suffix.lower() in (".html", ".htm", ".pdf"):
        raise ValueError(
            f"--out is the folder the report goes in, not a file name: {out} (the files are "
            "named cuegap-report-N.html and .pdf inside it)"
        )
    engine = _engine(create=False)
    chosen = load_policy(policy) if policy is not None else None
    if signed is not None:
        with _steps("report") as step:
            published = publish_report(engine, None, out, formats=formats[format],  # type: ignore[arg-type]
                                       policy=chosen, signed=signed, progress=step)  # fmt: skip
        _print_published(published)
        return
    from cuegap.designs import analysis_kind, designs_in_store, for_kind, get, resolve_design

    held = designs_in_store(engine) if analysis is None and design is None else []
    if len(held) > 1:  # one board report across every design held
        _board(engine, [get(name) for name in held], out, formats[format], chosen, policy)
        return
    if analysis is None:
        analysis = get(resolve_design(engine, design)).report_analysis(engine)
    if chosen is not None:  # the report only reads: the re-run happens here, visibly
        kind = analysis_kind(engine, analysis)  # type: ignore[arg-type]
        if kind is None:
            raise ValueError(f"--analysis {analysis}: no analysis {analysis} in the store "
                             "(`cuegap analyses` lists them)")  # fmt: skip
        chosen_design = for_kind(kind)
        console.print(
            f"Running the {chosen_design.label or chosen_design.name} analysis of analysis "
            f"{analysis} again under the policy in {safe(policy)} (reused when stored): a "
            "report only shows stored analyses.",
            soft_wrap=True, highlight=False,
        )  # fmt: skip
        with _steps("analyze") as step:
            rerun = chosen_design.under_policy(engine, analysis, chosen, step)  # type: ignore[arg-type]
        console.print(f"Reporting analysis {rerun}.", highlight=False)
        analysis = rerun
    with _steps("report") as step:
        published = publish_report(engine, analysis, out, formats=formats[format],  # type: ignore[arg-type]
                                   progress=step)  # fmt: skip
    _print_published(published)


def _board(
    engine: Any, designs: list[Any], out: Path, formats: tuple[str, ...], chosen: Any,
    policy: Path | None,
) -> None:  # fmt: skip
    """The board report across ``designs``; with a policy, each design's analysis is run
    again under it first (printed), as for one design's report."""
    from cuegap.reanalysis import publish_board

    analyses = None
    if chosen is not None:
        analyses = {}
        for d in designs:
            try:
                shown = d.report_analysis(engine)
            except ValueError:  # none stored: the board shows its column as "no verdict"
                continue
            label = d.label or d.name
            console.print(f"Running the {label} analysis again under the policy in {safe(policy)} "
                          "(reused when stored): a report only shows stored analyses.",
                          soft_wrap=True, highlight=False)  # fmt: skip
            with _steps("analyze") as step:
                analyses[d.name] = d.under_policy(engine, shown, chosen, step)
    console.print(f"Board report across {len(designs)} designs "
                  f"({', '.join(d.name for d in designs)}); --design D reports one alone.",
                  soft_wrap=True, highlight=False)  # fmt: skip
    with _steps("report") as step:
        published = publish_board(engine, designs, out, formats=formats, analyses=analyses,
                                  policy=chosen, progress=step)  # fmt: skip
    _print_published(published)


def _print_published(published: dict[str, tuple[Path, int]]) -> None:
    for fmt, (path, report_id) in published.items():
        console.print(
            f"{fmt.upper()} report {report_id}: {safe(path)}", soft_wrap=True, highlight=False
        )


@friendly
def reanalyze(
    out: Annotated[Path, typer.Option("--out", "-o", help="Directory for the new report version.")],
    policy: Annotated[
        Path | None, typer.Option("--policy", help="Verdict policy TOML file.")
    ] = None,
    boot: BootOption = 1000,
    bayes: Annotated[
        bool,
        typer.Option("--bayes/--no-bayes", help="Refit the hierarchical Bayesian model too."),
    ] = False,
    explicit: ExplicitOption = None,
    implicit: ImplicitOption = None,
    consequences: ConsequencesOption = None,
    design: DesignOption = None,
    strategy: StrategyOption = None,
) -> None:
    """Re-analyse and re-report if data changed since the last report (for cron / timers).

    Exit codes: 0 nothing changed (nothing written); 1 data changed, a new analysis and
    report version were written; 2 failure, or another re-analysis holds the store's lock.
    """
    from cuegap.compliance import LockHeld
    from cuegap.reanalysis import EXIT_FAILED

    engine = _engine(create=False, missing_code=EXIT_FAILED)  # 1 would read "changed"
    try:
        from cuegap.designs import get, resolve_design
        from cuegap.models import load_policy

        chosen = get(resolve_design(engine, design))
        values = {"explicit": explicit, "implicit": implicit, "consequences": consequences,
                  "strategy": strategy}  # fmt: skip
        options = analyze_options(chosen, values, policy=load_policy(policy),
                                  policy_path=policy, boot=boot, bayes=bayes)  # fmt: skip
        result = chosen.reanalyze(engine, out, options)
    except LockHeld as exc:
        raise _fail(f"another re-analysis is running: {exc}", EXIT_FAILED) from None
    if not result.changed:
        console.print("Nothing changed since the last analysis; nothing written.")
        raise typer.Exit(result.exit_code)
    parts = [
        f"{label}: {', '.join(names)}"
        for label, names in (
            ("changed", result.changed_systems),
            ("new", result.new_systems),
            ("removed", result.removed_systems),
        )
        if names
    ]
    console.print(f"Data changed ({safe('; '.join(parts))}); analysis {result.analysis_id}.")
    if result.changes is not None:
        for r in result.changes.itertuples():
            console.print(f"  {safe(r.system)}: {safe(r.note)}", highlight=False)
    for path in result.reports:
        console.print(f"  wrote {safe(path)}", highlight=False)
    raise typer.Exit(result.exit_code)
