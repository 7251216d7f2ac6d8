"""Publishing a report version: render, write, and register its files in one step (the
registration rolled back and the files removed when any part fails), for
``cuegap reanalyze``, ``cuegap demo`` and signed copies.

Split from :mod:`cuegap.reanalysis`, which re-exports these names.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pandas as pd
from sqlalchemy import select
from sqlalchemy.engine import Engine

from cuegap.audit import AnalysisResult
from cuegap.compliance import (
    ComplianceError,
    check_report,
    find_report,
    register_report,
    sha256_bytes,
    signed_records,
)
from cuegap.files import remove_files
from cuegap.models import Policy
from cuegap.schema import Report

#: Renders the report of an analysis into a directory; returns the written files.
Renderer = Callable[[Engine, AnalysisResult, Path, pd.DataFrame | None], list[Path]]


def publish_report(
    engine: Engine,
    analysis_id: int,
    out_dir: Path | str,
    *,
    formats: tuple[str, ...] = ("html", "pdf"),
    policy: Policy | None = None,
    signed: int | str | Path | None = None,
    changes: pd.DataFrame | None = None,
    progress: Callable[[str], None] | None = None,
) -> dict[str, tuple[Path, int]]:
    """Render an analysis's report, write it and register every file.

    Every format is rendered before anything is written; the files are written without
    replacing any existing file and registered in one transaction. If anything fails,
    nothing is left written or registered.

    Parameters
    ----------
    policy : Policy, optional
        Refused: a report shows a stored analysis (run it under the policy first); kept so
        that ``signed`` with a policy gets its own message.
    signed : report id, path or hash, optional
        Write a signed copy of this registered report (:func:`publish_signed`) instead.
    changes : DataFrame, optional
        The "what changed since the last signed report" table.

    Returns
    -------
    dict
        Format -> (path, registered report id).
    """
    from cuegap.reports import load_plan, render_files, render_html

    if signed is not None:
        if policy is not None:
            raise ValueError(
                "--policy cannot be used with --signed: a signed copy shows exactly the "
                "content that was reviewed"
            )
        return publish_signed(engine, signed, out_dir, formats=formats, progress=progress)
    from cuegap.designs import analysis_kind, for_kind

    if policy is not None:
        raise ValueError(
            "a report shows stored analyses only: run the analysis under the policy first "
            "(cuegap report --policy does, Design.under_policy), then publish that analysis"
        )
    kind = analysis_kind(engine, analysis_id)
    if kind is None:
        raise ValueError(
            f"--analysis {analysis_id}: no analysis {analysis_id} in the store "
            "(`cuegap analyses` lists them)"
        )
    design = for_kind(kind)
    data = design.report_data(engine, analysis_id, progress)
    data.changes = changes
    if progress:
        progress("rendering")
    rendered = render_html(data, plan=load_plan(engine, design.name))
    files = render_files(rendered.html, formats)  # type: ignore[arg-type]
    return _publish(
        engine,
        out_dir,
        f"cuegap-report-{data.analysis_id}",
        files,
        html=rendered.html,
        analysis_id=data.analysis_id,
        supersedes=None,
    )


def publish_board(
    engine: Engine,
    designs: list[Any],
    out_dir: Path | str,
    *,
    formats: tuple[str, ...] = ("html", "pdf"),
    analyses: dict[str, int] | None = None,
    policy: Policy | None = None,
    changes: dict[str, pd.DataFrame] | None = None,
    progress: Callable[[str], None] | None = None,
) -> dict[str, tuple[Path, int]]:
    """Render the board report across ``designs``, write it and register every file as one
    report (under the newest analysis it shows; every other one it shows is listed in it
    with its content digest, which ``verify`` checks).

    Parameters
    ----------
    designs : list of Design
        The designs the store holds (the matrix columns).
    analyses : dict of str to int, optional
        The analysis to show per design (default: each design's newest).
    policy : Policy, optional
        Whose ``[board]`` rule decides the overall line (default: the one the analyses
        shown were run under).
    changes : dict of str to DataFrame, optional
        Per design name, its "what changed since the last signed report" table (a
        re-analysis): shown after that design's verdict page.

    Returns
    -------
    dict
        Format -> (path, registered report id).
    """
    from cuegap.reports import board_report_data, render_files, render_html

    data = board_report_data(engine, designs, chosen=analyses, policy=policy,
                             progress=progress)  # fmt: skip
    for part in data.parts:
        if changes and part.data is not None and changes.get(part.design) is not None:
            part.data.changes = changes[part.design]
    if progress:
        progress("rendering")
    rendered = render_html(data)
    files = render_files(rendered.html, formats)  # type: ignore[arg-type]
    return _publish(engine, out_dir, "cuegap-board-report", files, html=rendered.html,
                    analysis_id=data.analysis_id, supersedes=None)  # fmt: skip


def publish_signed(
    engine: Engine,
    report: int | str | Path,
    out_dir: Path | str,
    *,
    formats: tuple[str, ...] = ("html", "pdf"),
    progress: Callable[[str], None] | None = None,
) -> dict[str, tuple[Path, int]]:
    """Write a signed copy of a registered report: exactly the HTML that was reviewed
    (kept in the store and checked against the ledger), its sign-off block filled in.

    Nothing is rebuilt from the store's current results: a later analysis or ingest cannot
    change what a signed copy shows.

    Raises
    ------
    ComplianceError
        When the report has no sign-offs, was registered before cuegap kept reviewed
        content, or its file, registry record, analysis or sign-offs were altered.
    """
    from cuegap.reports import render_files, render_signed

    rep = find_report(engine, report)
    problems = check_report(engine, rep.id)
    if problems:
        raise ComplianceError(
            f"report {rep.id} cannot be reproduced as signed: {'; '.join(problems)}"
        )
    records = signed_records(engine, rep.id)
    if not records:
        raise ComplianceError(f"report {rep.id} has no sign-offs to fill in")
    with engine.connect() as conn:
        html = conn.execute(select(Report.html).where(Report.id == rep.id)).scalar()
    if html is None:
        raise ComplianceError(
            f"report {rep.id} was registered before cuegap kept the reviewed content, so "
            "its signed copy cannot be reproduced exactly; render a new report and sign it"
        )
    if rep.format == "html" and sha256_bytes(html.encode("utf-8")) != rep.sha256:
        raise ComplianceError(
            f"report {rep.id}: the reviewed HTML kept in the store is not the file that was "
            f"signed (SHA-256 {rep.sha256[:12]}…); refusing to show the sign-offs on it"
        )
    if progress:
        progress("filling in the sign-off block of the reviewed report")
    signed_html = render_signed(
        html, [asdict(r) for r in records], report_id=rep.id, report_sha256=rep.sha256
    )
    files = render_files(signed_html, formats)  # type: ignore[arg-type]
    return _publish(
        engine,
        out_dir,
        f"{Path(rep.path).stem}-signed",
        files,
        html=signed_html,
        analysis_id=rep.analysis_id,
        supersedes=rep.id,
    )


def _publish(
    engine: Engine,
    out_dir: Path | str,
    stem: str,
    files: dict[str, bytes],
    *,
    html: str,
    analysis_id: int,
    supersedes: int | None,
) -> dict[str, tuple[Path, int]]:
    from cuegap.reports import write_files

    paths = write_files(out_dir, stem, files)
    try:
        with engine.begin() as conn:
            ids = {
                fmt: register_report(
                    engine,
                    path,
                    analysis_id=analysis_id,
                    supersedes_id=supersedes,
                    html=html,
                    conn=conn,
                )
                for fmt, path in paths.items()
            }
    except BaseException:
        remove_files(paths.values())
        raise
    return {fmt: (paths[fmt], ids[fmt]) for fmt in paths}


def default_renderer(formats: tuple[str, ...] = ("html", "pdf")) -> Renderer:
    """The renderer ``cuegap reanalyze`` uses: both formats, registered."""

    def render(
        engine: Engine, analysis: AnalysisResult, out_dir: Path, changes: pd.DataFrame | None
    ) -> list[Path]:
        published = publish_report(engine, analysis.id, out_dir, formats=formats, changes=changes)
        return [path for path, _ in published.values()]

    return render
