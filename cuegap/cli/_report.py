"""Reporting commands: render a report of a stored analysis; re-analyse and re-report when
the data changed."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from cuegap.cli._analyze import (
    BootOption,
    ConsequencesOption,
    DesignOption,
    ExplicitOption,
    ImplicitOption,
    StrategyOption,
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
    from cuegap.api import Audit

    formats = {"html": ("html",), "pdf": ("pdf",), "both": ("html", "pdf")}
    if format not in formats:
        raise ValueError(f"--format should be html, pdf or both but got {format!r}")
    if not out.is_dir() and out.suffix.lower() in (".html", ".htm", ".pdf"):
        raise ValueError(
            f"--out is the folder the report goes in, not a file name: {out} (the files are "
            "named cuegap-report-N.html and .pdf inside it)"
        )
    engine = _engine(create=False)
    published = Audit(engine, out=console).report(
        design, out=out, analysis=analysis, formats=formats[format], policy=policy,
        signed=signed, steps=_steps,
    )  # fmt: skip
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

    On a store that holds several designs (without --design), re-analyses each design whose
    data changed and publishes one new board report version across them all.

    Exit codes: 0 nothing changed (nothing written); 1 data changed, a new analysis and
    report version were written; 2 failure, or another re-analysis holds the store's lock.
    """
    from cuegap.api import EXIT_FAILED, Audit, LockHeld

    engine = _engine(create=False, missing_code=EXIT_FAILED)  # 1 would read "changed"
    values = {"explicit": explicit, "implicit": implicit, "consequences": consequences,
              "strategy": strategy}  # fmt: skip
    try:
        result = Audit(engine, out=console).reanalyze(design, out=out, policy=policy,
                                                      boot=boot, bayes=bayes, **values)  # fmt: skip
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
