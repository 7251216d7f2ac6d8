"""The store's commands: create or upgrade it, summarise it, list and export its analyses and
result tables."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

from cuegap.cli.common import (
    _engine,
    _fail,
    _report_uninitialised,
    _require_file,
    _require_folder,
    _State,
    console,
    friendly,
)
from cuegap.terminal import safe

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine


@friendly
def init() -> None:
    """Create a store, or upgrade it to this version's schema; repair what a killed ingest
    left (rebuild dropped indexes, seal the rows it committed)."""
    from cuegap.schema import describe_url, make_engine, upgrade

    engine = make_engine(_State.db)
    before, after = upgrade(engine)
    where = safe(describe_url(engine))
    if before == after:
        console.print(f"Store {where} is up to date (schema {after}).")
    elif before is None:
        console.print(f"Created store {where} (schema {after}).")
    else:
        console.print(f"Upgraded store {where} from schema {before} to {after}.")
    recover(engine)


def recover(engine: Engine) -> None:
    """Seal the ingest batches that killed passes left "running", saying what was done.

    Parameters
    ----------
    engine : Engine
        An initialised store.
    """
    from cuegap.api import Audit

    for b in Audit(engine, out=console).recover():
        shown = safe(b.source_path)
        if b.sealed:
            console.print(
                f"[yellow]Sealed interrupted ingest[/] {b.batch_id} of {shown}: the "
                f"{b.lines_read:,} records it had committed ({b.stored:,} stored + "
                f"{b.duplicate:,} duplicate + {b.quarantined:,} quarantined); ingest the "
                "file again to store the rest.",
                highlight=False,
                soft_wrap=True,
            )
        else:
            console.print(
                f"Ingest {b.batch_id} of {shown} is still running in another process (or "
                "its lock file cannot be opened): left as it is.",
                highlight=False,
                soft_wrap=True,
            )


@friendly
def status() -> None:
    """Summarise the store: systems, conditions, responses, parse and abstention rates."""
    from cuegap.schema import current_revision, make_engine

    engine = make_engine(_State.db)
    _require_file(engine)
    if current_revision(engine) is None:
        raise typer.Exit(_report_uninitialised(engine))
    _print_status(engine)


def _pct(x: float) -> str:
    return "–" if x != x else f"{100 * x:.1f}%"


def _count(n: int, noun: str) -> str:
    """``n`` with ``noun``, plural unless one: ``1 file``, ``2 files``, ``1,024 responses``."""
    return f"{n:,} {noun}" if n == 1 else f"{n:,} {noun}s"


def _print_status(engine) -> None:
    from cuegap.designs import registered
    from cuegap.schema import describe_url, store_status  # pandas: loaded here

    st = store_status(engine)
    parts = [p for d in registered().values() if (p := d.status(engine)) is not None]
    answers = ", ".join(_count(p.count, p.noun) for p in parts if p.count) or "no responses"
    console.print(
        f"Store {safe(describe_url(engine))}: {_count(len(st.systems), 'system')}, {answers} "
        f"from {_count(st.runs, 'file')}; item banks: "
        f"{safe(', '.join(st.banks['name'])) or 'none'}; "
        f"quarantined lines: {st.quarantined:,}"
        + (f"; [red]failed ingests: {st.failed_batches}[/]" if st.failed_batches else "")
    )
    for r in st.unfinished.itertuples():  # killed (or running now): resumable
        started = f"{r.started_at:%Y-%m-%d %H:%M}"
        shown = Path(r.source_path)  # stored resolved; shown relative where it can be
        if shown.is_relative_to(Path.cwd()):
            shown = shown.relative_to(Path.cwd())
        console.print(
            f"[yellow]unfinished ingest[/] of {safe(shown)} (started {started}, "
            f"{r.lines_read:,} records committed): if it is not running, run `cuegap init` "
            "to seal what it committed, and `cuegap ingest` on the file again to store the "
            "rest (stored lines count as duplicates)",
            highlight=False,
            soft_wrap=True,
        )
    for part in parts:
        if part.show is not None:
            part.show(console)
    # the store-wide tables: the responses per system and condition, and the systems alone
    # when no design has any record stored yet
    if st.responses or (len(st.systems) and not any(p.count for p in parts)):
        table = Table("system", "responses", "parsed", "abstained", title="Systems")
        for r in st.systems.itertuples():
            table.add_row(
                safe(r.system), f"{r.responses:,}", _pct(r.parsed_rate), _pct(r.abstention_rate)
            )
        console.print(table)
    if len(st.conditions):
        table = Table(
            "condition", "difficulty", "probe", "responses", "abstained", title="Conditions"
        )
        for r in st.conditions.itertuples():
            table.add_row(
                safe(r.condition),
                safe(r.difficulty) if isinstance(r.difficulty, str) else "",
                safe(r.probe),
                f"{r.responses:,}",
                _pct(r.abstention_rate),
            )
        console.print(table)


@friendly
def export(
    name: Annotated[
        str | None,
        typer.Argument(help="Result table name (see `cuegap tables`); not with --evidence."),
    ] = None,
    out: Annotated[
        Path | None, typer.Option("--out", "-o", help="Output file: .csv or .parquet.")
    ] = None,
    analysis: Annotated[
        int | None,
        typer.Option("--analysis", help="Analysis id (default: the newest with this table)."),
    ] = None,
    kind: Annotated[
        str | None,
        typer.Option(
            "--kind",
            help="An analysis kind (see `cuegap analyses`): only analyses of that kind; an "
            "unknown kind is refused with the registered designs' kinds.",
        ),
    ] = None,
    evidence: Annotated[
        Path | None,
        typer.Option(
            "--evidence",
            help="Instead of a table: write the evidence bundle (cuegap-evidence.json) and "
            "its in-toto attestation of the registered reports (cuegap-evidence.intoto.jsonl) "
            "into this folder (see docs/evidence.md).",
        ),
    ] = None,
    key: Annotated[
        Path | None,
        typer.Option(
            "--key",
            help="With --evidence: the reviewer's Ed25519 private key (`cuegap keygen`) "
            "that signs the attestation.",
        ),
    ] = None,
) -> None:
    """Write one stored result table to CSV or Parquet, or (--evidence) the evidence others
    can check without cuegap."""
    if evidence is not None:
        if name is not None or out is not None or analysis is not None or kind is not None:
            raise _fail("--evidence writes the whole evidence: give no table name, --out, "
                        "--analysis or --kind with it")  # fmt: skip
        _export_evidence(evidence, key)
        return
    if key is not None:
        raise _fail("--key signs the attestation of --evidence; give --evidence FOLDER")
    if name is None or out is None:
        raise _fail("give a table name and --out FILE (or --evidence FOLDER)")
    from cuegap.api import Audit
    from cuegap.audit import list_tables

    engine = _engine(create=False)
    try:
        path, found, found_kind = Audit(engine, out=console).export(
            name, out, analysis=analysis, kind=kind
        )
    except (KeyError, ValueError) as exc:
        raise _fail(str(exc.args[0])) from None
    console.print(
        f"Wrote {safe(path)} (table {safe(repr(name))} of {found_kind} analysis {found})",
        highlight=False,
    )
    if analysis is None and kind is None:
        kinds = set(list_tables(engine).query("name == @name")["kind"])
        if len(kinds) > 1:
            other = (kinds - {found_kind}).pop()
            console.print(
                f"Note: a {other} analysis also stores {safe(repr(name))}; pass --kind {other} "
                "for it."
            )


def _export_evidence(out_dir: Path, key: Path | None) -> None:
    from cuegap.api import Audit

    _require_folder(out_dir)
    engine = _engine(create=False)
    files = Audit(engine, out=console).evidence(out_dir, key=key)
    signed = "signed" if files.signed else "unsigned (give --key to sign it)"
    console.print(f"Wrote {safe(files.bundle)} and {safe(files.envelope)}: an in-toto "
                  f"attestation of {files.reports} registered report file(s), {signed}.",
                  highlight=False, soft_wrap=True)  # fmt: skip
    for line in files.unmatched:
        console.print(f"[yellow]warning:[/] {safe(line)}: the attestation holds its "
                      "registered SHA-256", highlight=False, soft_wrap=True)  # fmt: skip


@friendly
def analyses() -> None:
    """List the stored analyses, newest first: what each compared, its policy δ and sampling."""
    from cuegap.api import Audit

    df = Audit(_engine(create=False), out=console).analyses()
    if df.empty:
        console.print("No analyses yet: run `cuegap analyze`.")
        return
    table = Table("id", "kind", "status", "created", "compared", "cons.", "δ", "sampling")
    for r in df.itertuples():
        table.add_row(
            str(r.id),
            safe(r.kind),
            safe(r.status),
            f"{r.created_at:%m-%d %H:%M}",
            safe(r.compared),
            safe(r.consequences),
            safe(r.delta),
            safe(r.sampling),
        )
    console.print(table)
    console.print(
        "`cuegap report --analysis ID` reports one (default: the newest analysis of the "
        "store's design)."
    )


@friendly
def tables(
    analysis: Annotated[
        int | None, typer.Option("--analysis", help="Analysis id (default: newest of each).")
    ] = None,
) -> None:
    """List the stored result tables with their row counts and contents."""
    from cuegap.audit import list_tables

    engine = _engine(create=False)
    df = list_tables(engine, analysis)
    if df.empty:
        console.print("No result tables yet: run `cuegap analyze`.")
        return
    table = Table("name", "kind", "analysis", "rows", "contents")
    for r in df.itertuples():
        table.add_row(
            safe(r.name), safe(r.kind), str(r.analysis_id), f"{r.rows:,}", safe(r.description or "")
        )
    console.print(table)
