"""Reporting commands: render a report of a stored analysis; re-analyse and re-report when
the data changed."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from cuegap._terminal import safe
from cuegap.cli._analyze import (
    BootOption,
    ConsequencesOption,
    DesignOption,
    ExplicitOption,
    ImplicitOption,
    StrategyOption,
    _dilemma_only,
    _no_strategy,
    _settings,
)
from cuegap.cli._common import (
    _engine,
    _fail,
    _steps,
    console,
    friendly,
)


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
            "policy re-runs the analysis with it.",
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
    """Render an audit report (self-contained HTML and/or PDF) of one stored analysis.

    Every file written is registered in the store with its SHA-256, ready for
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
    if analysis is None and signed is None:
        from cuegap.audit import latest_analysis_id
        from cuegap.designs import resolve_design

        chosen_design = resolve_design(engine, design)
        if chosen_design == "conversation":
            analysis = latest_analysis_id(engine, "conversation")
            if analysis is None:
                raise ValueError(
                    "no conversation analysis is stored: run cuegap analyze --design conversation"
                )
        elif chosen_design == "qa":  # with the prompt-variance section when there is one
            analysis = latest_analysis_id(engine, "qa")
            if analysis is None:
                raise ValueError("no QA analysis is stored: run cuegap analyze --design qa")
        elif chosen_design == "prompt-variance":  # the prompt-variance report on its own
            analysis = latest_analysis_id(engine, "prompt_variance")
            if analysis is None:
                raise ValueError(
                    "no prompt-variance analysis is stored: run cuegap analyze --design "
                    "prompt-variance (the QA report carries the same section)"
                )
        else:
            analysis = latest_analysis_id(engine, "frequentist")
    with _steps("report") as step:
        published = publish_report(
            engine,
            analysis,  # type: ignore[arg-type]  # None: build_report analyses first
            out,
            formats=formats[format],
            policy=chosen,
            signed=signed,
            progress=step,
        )
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
    strategy: StrategyOption = "zero-shot",
) -> None:
    """Re-analyse and re-report if data changed since the last report (for cron / timers).

    Exit codes: 0 nothing changed (nothing written); 1 data changed, a new analysis and
    report version were written; 2 failure, or another re-analysis holds the store's lock.
    """
    from cuegap.compliance import LockHeld
    from cuegap.reanalysis import EXIT_FAILED, default_renderer
    from cuegap.reanalysis import reanalyze as run_reanalysis

    engine = _engine(create=False, missing_code=EXIT_FAILED)  # 1 would read "changed"
    try:
        from cuegap.audit import BayesSettings
        from cuegap.designs import resolve_design

        chosen_design = resolve_design(engine, design)
        if chosen_design == "conversation":
            result = _reanalyze_conv(engine, out, policy, bayes, boot, strategy, explicit,
                                     implicit, consequences)  # fmt: skip
        elif chosen_design == "prompt-variance":
            result = _reanalyze_pv(engine, out, policy, bayes, strategy, explicit, implicit,
                                   consequences)  # fmt: skip
        elif chosen_design == "qa":
            from cuegap.audit import QASettings
            from cuegap.models import load_policy
            from cuegap.reanalysis_qa import reanalyze_qa

            _dilemma_only(explicit=explicit, implicit=implicit, consequences=consequences)
            qa = QASettings(policy=load_policy(policy), strategy=strategy, n_boot=boot)
            result = reanalyze_qa(
                engine, out, settings=qa, bayes=BayesSettings() if bayes else None
            )
        else:
            _no_strategy(strategy, "dilemma")
            result = run_reanalysis(
                engine,
                out,
                settings=_settings(policy, boot, 2026, explicit, implicit, consequences),
                bayes=BayesSettings() if bayes else None,
                render=default_renderer(),
            )
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


def _reanalyze_pv(
    engine: Any, out: Path, policy: Path | None, bayes: bool, strategy: str, *dilemma: Any
) -> Any:
    from cuegap.audit.prompt_variance import PVSettings
    from cuegap.models import load_policy
    from cuegap.reanalysis_pv import reanalyze_pv

    _dilemma_only(explicit=dilemma[0], implicit=dilemma[1], consequences=dilemma[2])
    from cuegap.audit import BayesSettings

    settings = PVSettings(policy=load_policy(policy), strategy=strategy)
    return reanalyze_pv(engine, out, settings=settings, bayes=BayesSettings() if bayes else None)


def _reanalyze_conv(
    engine: Any, out: Path, policy: Path | None, bayes: bool, boot: int, strategy: str,
    *dilemma: Any,
) -> Any:  # fmt: skip
    from cuegap.models import load_policy
    from cuegap.reanalysis_conv import reanalyze_conv

    _dilemma_only(explicit=dilemma[0], implicit=dilemma[1], consequences=dilemma[2])
    if boot != 1000 or strategy != "zero-shot":
        raise ValueError("--boot and --strategy do not apply to the conversation design")
    from cuegap.audit import BayesSettings

    return reanalyze_conv(
        engine,
        out,
        policy=load_policy(policy) if policy else None,
        bayes=BayesSettings() if bayes else None,
    )
