"""The ``cuegap`` command line: argument handling and display; the work lives in the package."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer
from rich.console import Console
from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn
from rich.table import Table
from sqlalchemy.exc import SQLAlchemyError

from cuegap import __version__
from cuegap._terminal import safe
from cuegap.ingest import (
    READERS,
    IngestError,
    IngestSummary,
    expand_path,
    get_reader,
    ingest_path,
)
from cuegap.schema import (
    current_revision,
    describe_url,
    head_revision,
    known_revision,
    make_engine,
    newer_store_error,
    upgrade,
)

app = typer.Typer(
    name="cuegap",
    help="Cue Visibility Gap audits of LLM fairness results: ingest, analyse, report.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
# emoji=False: a name like ":thumbs_up:" is printed as written (markup is escaped by safe())
console = Console(emoji=False)
err = Console(stderr=True, emoji=False)
F = TypeVar("F", bound=Callable[..., Any])

# Upper bounds, checked before any work: beyond them a run would exhaust memory or disk
# (50 million bootstrap replicates need 137 GiB) instead of failing with a clear message.
MAX_SYSTEMS = 100  # a simulated system is ~22,000 responses, ~4.5 MB of JSONL
MAX_BOOT = 100_000
MAX_DRAWS = 100_000
MAX_CHAINS = 64
MAX_SEED = 2**32 - 1


class _State:
    db: str | None = None


def _version(value: bool) -> None:
    if value:
        console.print(f"cuegap {__version__}")
        raise typer.Exit()


@app.callback()
def main(
    db: Annotated[
        str | None,
        typer.Option(
            "--db",
            help="Database URL (sqlite:///FILE or postgresql://USER@HOST/DB) or a SQLite file "
            "path. Default: $CUEGAP_DB, else sqlite:///cuegap.db in the working directory.",
            envvar="CUEGAP_DB",
            show_envvar=False,
        ),
    ] = None,
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version.")
    ] = False,
) -> None:
    """Cue Visibility Gap audits of LLM fairness results: ingest, analyse, report."""
    _State.db = db


def _fail(message: str, code: int = 2) -> typer.Exit:
    err.print(f"[bold red]error:[/] {safe(message)}", highlight=False, soft_wrap=True)
    return typer.Exit(code)


def friendly(fn: F) -> F:
    """Turn expected failures into one readable line and a non-zero exit."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except (ValueError, TypeError, IngestError) as exc:
            raise _fail(str(exc)) from None
        except OSError as exc:
            raise _fail(_os_error(exc)) from None
        except SQLAlchemyError as exc:
            message = f"database error: {str(exc).splitlines()[0]}"
            if "readonly database" in message:
                message += (
                    "; the store's file or folder is not writable: only commands that read "
                    "the store (status, verify, tables, analyses, export) work on it"
                )
            raise _fail(message) from None

    return wrapper  # type: ignore[return-value]


def _os_error(exc: OSError) -> str:
    """One line for a failed file operation: the path and what went wrong."""
    if exc.filename is None:
        return str(exc)
    path = Path(exc.filename)
    if isinstance(exc, FileExistsError) and path.exists() and not path.is_dir():
        what = "is a file, not a folder"  # mkdir of an output folder over a file
    else:
        what = (exc.strerror or type(exc).__name__).lower()
    target = f" -> {exc.filename2}" if exc.filename2 is not None else ""
    return f"{exc.filename}{target}: {what}"


def _require_folder(path: Path) -> None:
    """Fail before any work when an output folder is an existing file."""
    if path.exists() and not path.is_dir():
        raise _fail(f"{path}: is a file, not a folder; give a folder to write to")


def _require_file(engine, code: int = 1) -> None:
    """Exit with ``code`` when a SQLite store's file is missing or empty: connecting would
    create a file behind a mistyped ``--db``, or write into an empty one."""
    path = engine.url.database if engine.dialect.name == "sqlite" else None
    if path and path != ":memory:" and not Path(path).exists():
        err.print(
            f"No store at {safe(describe_url(engine))}: there is no such file. Check --db (or "
            "CUEGAP_DB), or create one with `cuegap init` or `cuegap ingest`."
        )
        raise typer.Exit(code)
    if path and path != ":memory:" and Path(path).is_file() and Path(path).stat().st_size == 0:
        _report_uninitialised(engine)  # opening it would write a SQLite header into it
        raise typer.Exit(code)


def _engine(*, create: bool, missing_code: int = 1):
    """The store's engine, checked: exits ``missing_code`` when there is no store (unless
    ``create``), 2 when its schema is older than this cuegap's."""
    engine = make_engine(_State.db)
    if not create:
        _require_file(engine, missing_code)
    rev = current_revision(engine)
    if rev is None:
        if not create:
            _report_uninitialised(engine)
            raise typer.Exit(missing_code)
        upgrade(engine)
    elif not known_revision(rev):
        raise _fail(str(newer_store_error(rev)))
    elif rev != head_revision():
        raise _fail(
            f"the store at {describe_url(engine)} is at schema revision {rev}, this cuegap "
            f"needs {head_revision()}: run `cuegap init` to upgrade it"
        )
    return engine


def _report_uninitialised(engine) -> int:
    err.print(
        f"The store at {safe(describe_url(engine))} is empty. Run `cuegap init`, or "
        "`cuegap ingest` a file (which initialises it)."
    )
    return 1


@contextmanager
def _progress(label: str) -> Iterator[Callable[[int, int], None] | None]:
    if not err.is_terminal:
        yield None
        return
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        DownloadColumn(),
        TimeRemainingColumn(),
    )
    with Progress(*columns, console=err, transient=True) as bar:
        task = bar.add_task(label, total=None)
        yield lambda done, total: bar.update(task, completed=done, total=total)


@app.command()
@friendly
def init() -> None:
    """Create a store, or upgrade it to this version's schema."""
    engine = make_engine(_State.db)
    before, after = upgrade(engine)
    where = safe(describe_url(engine))
    if before == after:
        console.print(f"Store {where} is up to date (schema {after}).")
    elif before is None:
        console.print(f"Created store {where} (schema {after}).")
    else:
        console.print(f"Upgraded store {where} from schema {before} to {after}.")


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


@app.command()
@friendly
def ingest(
    paths: Annotated[list[Path], typer.Argument(help="Files or directories to ingest, in order.")],
    format: Annotated[
        str | None,
        typer.Option("--format", "-f", help=f"Force a reader: {', '.join(READERS)}."),
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
    # Check the arguments before the store is created: a typo must leave no empty store.
    if format is not None:
        get_reader(format)
    for path in paths:
        if not path.exists():
            raise _fail(f"{path}: no such file or directory")
    if mapping is not None and not mapping.exists():
        raise _fail(f"{mapping}: no such mapping file")
    engine = _engine(create=True)
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


@app.command()
@friendly
def simulate(
    out_dir: Annotated[Path, typer.Argument(help="Directory to write the dataset to.")],
    systems: Annotated[
        int,
        typer.Option(
            "--systems",
            "-n",
            min=1,
            max=MAX_SYSTEMS,
            help=f"Systems to simulate (1 to {MAX_SYSTEMS}).",
        ),
    ] = 3,
    seed: Annotated[int, typer.Option("--seed", min=0, max=MAX_SEED, help="Random seed.")] = 0,
    named: Annotated[
        bool, typer.Option("--named/--no-named", help="Add Named and FormalNamed conditions.")
    ] = False,
) -> None:
    """Write a simulated paper-scale audit dataset: item bank, responses and ground truth."""
    from cuegap.simulate import simulate as run_simulation

    _require_folder(out_dir)
    result = run_simulation(out_dir, systems=systems, seed=seed, named=named)
    console.print(
        f"Simulated {result.n_systems} systems, {result.n_responses:,} responses "
        f"(item bank {safe(repr(result.item_bank_name))}) in {safe(out_dir)}:",
        highlight=False,
    )
    for p in (result.itembank_path, result.responses_path, result.truth_path):
        console.print(f"  {safe(p)}", highlight=False)


@app.command()
@friendly
def status() -> None:
    """Summarise the store: systems, conditions, responses, parse and abstention rates."""
    engine = make_engine(_State.db)
    _require_file(engine)
    if current_revision(engine) is None:
        raise typer.Exit(_report_uninitialised(engine))
    _print_status(engine)


def _pct(x: float) -> str:
    return "–" if x != x else f"{100 * x:.1f}%"


def _print_status(engine) -> None:
    from cuegap.schema import store_status  # pandas: loaded only when needed

    st = store_status(engine)
    console.print(
        f"Store {safe(describe_url(engine))}: {len(st.systems)} systems, {st.responses:,} "
        f"responses from {st.runs} files; item banks: "
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
            f"[yellow]unfinished ingest[/] of {shown} (started {started}, "
            f"{r.lines_read:,} records committed): if it is not running, run `cuegap ingest` "
            "on the file again to finish it (stored lines count as duplicates)",
            highlight=False,
            soft_wrap=True,
        )
    if len(st.systems):
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


@app.command()
@friendly
def demo(
    out_dir: Annotated[
        Path, typer.Option("--dir", help="Where to write the simulated data.")
    ] = Path("cuegap-demo"),
    systems: Annotated[
        int,
        typer.Option(
            "--systems",
            "-n",
            min=1,
            max=MAX_SYSTEMS,
            help=f"Systems to simulate (1 to {MAX_SYSTEMS}).",
        ),
    ] = 14,
    seed: Annotated[int, typer.Option("--seed", min=0, max=MAX_SEED, help="Random seed.")] = 2026,
    bayes: Annotated[
        bool,
        typer.Option("--bayes/--no-bayes", help="Include the hierarchical Bayesian fit."),
    ] = True,
) -> None:
    """Run the whole audit on a simulated paper-scale dataset: simulate, ingest, analyse, report."""
    from cuegap.simulate import simulate as run_simulation

    _require_folder(out_dir)
    engine = make_engine(_State.db)
    if current_revision(engine) != head_revision():
        upgrade(engine)  # the demo store is ours to create or bring up to date
    console.rule("1. simulate")
    result = run_simulation(out_dir, systems=systems, seed=seed)
    console.print(
        f"{result.n_systems} systems, {result.n_responses:,} responses in {safe(out_dir)}",
        highlight=False,
    )
    console.rule("2. ingest")
    for path in (result.itembank_path, result.responses_path):
        with _progress(f"ingest {safe(path.name)}") as progress:
            _print_summary(ingest_path(engine, path, progress=progress))
    console.rule("3. store")
    _print_status(engine)
    console.rule("4. analyze")
    from cuegap.audit import analyze as run_analysis

    settings = _settings(None, 1000, seed)
    with _steps("analyze") as step:
        analysis = run_analysis(engine, settings, progress=step)
    _print_analysis(analysis)
    if bayes:
        _run_bayes(engine, settings, draws=1000, chains=4, force=False)
    console.rule("5. report")
    from cuegap.reanalysis import publish_report

    with _steps("report") as step:
        published = publish_report(engine, analysis.id, out_dir, progress=step)
    _print_published(published)


@contextmanager
def _steps(label: str) -> Iterator[Callable[[str], None]]:
    """A spinner showing the current step of a long computation (on a terminal only)."""
    if not err.is_terminal:
        yield lambda _msg: None
        return
    with err.status(label) as status:
        yield lambda msg: status.update(f"{label}: {safe(msg)}")


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


@app.command()
@friendly
def analyze(
    policy: Annotated[
        Path | None,
        typer.Option("--policy", help="Verdict policy TOML file (default: built-in policy)."),
    ] = None,
    boot: Annotated[
        int,
        typer.Option(
            "--boot",
            min=0,
            max=MAX_BOOT,
            help=f"Bootstrap replicates for the ± values (0 to {MAX_BOOT:,}).",
        ),
    ] = 1000,
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
) -> None:
    """Compute every decision-bias statistic from the store and store the result tables."""
    from cuegap.audit import analyze as run_analysis

    engine = _engine(create=False)
    settings = _settings(policy, boot, seed, explicit, implicit, consequences)
    with _steps("analyze") as step:
        result = run_analysis(engine, settings, force=force, progress=step)
    _print_analysis(result)
    from cuegap.audit import latest_analysis_id

    newest = latest_analysis_id(engine, "frequentist")
    if result.reused and newest != result.id:
        console.print(
            f"Analysis {newest} (other settings) is newer, and `cuegap report` reports the "
            f"newest: use `cuegap report --analysis {result.id}` for this one."
        )
    if bayes:
        _run_bayes(engine, settings, draws=draws, chains=chains, force=force)


def _run_bayes(engine: Any, settings: Any, *, draws: int, chains: int, force: bool) -> None:
    from cuegap.audit import BayesSettings, analyze_bayes

    console.rule("Bayesian fit")
    fit = analyze_bayes(
        engine,
        settings,
        BayesSettings(draws=draws, tune=draws, chains=chains, seed=settings.seed),
        force=force,
        progress=lambda msg: err.print(f"  {safe(msg)}", highlight=False),
        sampler_progress=err.is_terminal,
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


@app.command()
@friendly
def export(
    name: Annotated[str, typer.Argument(help="Result table name (see `cuegap tables`).")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Output file: .csv or .parquet.")],
    analysis: Annotated[
        int | None,
        typer.Option("--analysis", help="Analysis id (default: the newest with this table)."),
    ] = None,
    kind: Annotated[
        str | None,
        typer.Option(
            "--kind",
            help="frequentist or bayesian: only that kind of analysis (both store `verdicts`).",
        ),
    ] = None,
) -> None:
    """Write one stored result table to CSV or Parquet."""
    from cuegap.audit import export_table, find_table, list_tables

    engine = _engine(create=False)
    try:
        found, found_kind = find_table(engine, name, analysis, kind)
        path = export_table(engine, name, out, found)
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


@app.command()
@friendly
def analyses() -> None:
    """List the stored analyses, newest first: what each compared, its policy δ and sampling."""
    from cuegap.audit import list_analyses

    engine = _engine(create=False)
    df = list_analyses(engine)
    if df.empty:
        console.print("No analyses yet: run `cuegap analyze`.")
        return
    table = Table("id", "kind", "status", "created", "compared", "cons.", "δ pp", "sampling")
    for r in df.itertuples():
        table.add_row(
            str(r.id),
            safe(r.kind),
            safe(r.status),
            f"{r.created_at:%m-%d %H:%M}",
            safe(r.compared),
            safe(r.consequences),
            "" if r.delta_pp is None else f"{r.delta_pp:g}",
            safe(r.sampling),
        )
    console.print(table)
    console.print("`cuegap report --analysis ID` reports one (default: the newest frequentist).")


@app.command()
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


@app.command()
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
        typer.Option("--analysis", help="Frequentist analysis id (default: the newest)."),
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
    engine = _engine(create=False)
    chosen = load_policy(policy) if policy is not None else None
    if analysis is None and signed is None:
        from cuegap.audit import latest_analysis_id

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


@app.command()
@friendly
def reanalyze(
    out: Annotated[Path, typer.Option("--out", "-o", help="Directory for the new report version.")],
    policy: Annotated[
        Path | None, typer.Option("--policy", help="Verdict policy TOML file.")
    ] = None,
    boot: Annotated[
        int,
        typer.Option(
            "--boot",
            min=0,
            max=MAX_BOOT,
            help=f"Bootstrap replicates for the ± values (0 to {MAX_BOOT:,}).",
        ),
    ] = 1000,
    bayes: Annotated[
        bool,
        typer.Option("--bayes/--no-bayes", help="Refit the hierarchical Bayesian model too."),
    ] = False,
    explicit: ExplicitOption = None,
    implicit: ImplicitOption = None,
    consequences: ConsequencesOption = None,
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


@app.command()
@friendly
def signoff(
    report: Annotated[
        str, typer.Argument(help="Registered report: its id, file path or SHA-256 (prefix).")
    ],
    reviewer: Annotated[str, typer.Option("--reviewer", help="Who signs.")],
    decision: Annotated[
        str, typer.Option("--decision", help="approve, reject or changes-requested.")
    ],
    comment: Annotated[str | None, typer.Option("--comment", help="Free text.")] = None,
    key: Annotated[
        Path | None,
        typer.Option(
            "--key",
            help="Your Ed25519 private key (from `cuegap keygen`): signs the record, so "
            "that `cuegap verify --trust KEY.pub` proves who signed.",
        ),
    ] = None,
) -> None:
    """Record a review decision on a report, hash-chained to the previous sign-off."""

    from cuegap.compliance import sign_off

    engine = _engine(create=False)
    rec = sign_off(engine, report, reviewer=reviewer, decision=decision, comment=comment, key=key)
    signed = f"; signed with key {rec.key_id}" if rec.key_id else ""
    console.print(
        f"Signed report {rec.report_id} ({rec.decision}) by {safe(rec.reviewer)} "
        f"at {rec.signed_at}; sign-off {rec.seq}, record hash {rec.record_hash[:16]}{signed}",
        highlight=False,
    )


@app.command()
@friendly
def verify(
    against: Annotated[
        Path | None,
        typer.Option(
            "--against",
            help="A witness file written by `cuegap witness`: every ledger head it records "
            "must still be in the store, unchanged.",
        ),
    ] = None,
    trust: Annotated[
        list[Path] | None,
        typer.Option(
            "--trust",
            help="A reviewer's public key (KEY.pub from `cuegap keygen`); repeat for each. "
            "Every sign-off must then be signed by one of them.",
        ),
    ] = None,
) -> None:
    """Recompute everything verdicts and sign-offs depend on; exit 1 if anything changed.

    Checks the ledger (ingest batches and their responses, item banks, systems, analyses
    and their tables and posteriors, registered reports, sign-offs), the report files, the
    sign-off chain, and, when given, a witness file and the reviewers' keys. Says what it
    could not rule out.
    """

    from cuegap.compliance import verify as run_verify

    engine = _engine(create=False)
    result = run_verify(engine, witness=against, trusted=trust)
    for problem in result.problems:
        err.print(f"[bold red]altered:[/] {safe(problem)}", highlight=False, soft_wrap=True)
    for limit in result.limits:
        console.print(f"[yellow]not ruled out:[/] {safe(limit)}", highlight=False, soft_wrap=True)
    state = "intact" if result.ok else f"{len(result.problems)} problem(s)"
    console.print(
        f"Checked {result.entries} ledger entries, {result.reports} report(s), "
        f"{result.signoffs} sign-off(s) and {result.artifacts} stored posterior(s): {state}; "
        f"ledger head {result.ledger_seq}:{result.ledger_head[:16]}",
        highlight=False,
    )
    if not result.ok:
        raise typer.Exit(1)


@app.command()
@friendly
def witness(
    file: Annotated[
        Path,
        typer.Argument(help="Witness file to append the ledger head to (created if missing)."),
    ],
) -> None:
    """Append the store's ledger head to a witness file kept outside the store.

    Keep the file where the store's editors cannot change it (a compliance repository,
    write-once storage, the review board's mail); `cuegap verify --against FILE` then
    detects any rewrite or truncation of the record up to that head.
    """
    from cuegap.compliance import write_witness

    engine = _engine(create=False)
    top = write_witness(engine, file)
    console.print(
        f"Witnessed ledger entry {top.seq} ({top.entry_hash[:16]}) in {safe(file)}", highlight=False
    )


@app.command()
@friendly
def keygen(
    key: Annotated[
        Path, typer.Argument(help="Private key file to create; the public key is KEY.pub.")
    ],
) -> None:
    """Create a reviewer's Ed25519 key pair for `cuegap signoff --key`.

    Keep the private key to yourself (it never enters the store); give KEY.pub to whoever
    runs `cuegap verify --trust`.
    """
    from cuegap.compliance import generate_key

    priv, pub, kid = generate_key(key)
    console.print(
        f"Wrote {safe(priv)} (private, keep it) and {safe(pub)} (public); key id {kid}",
        highlight=False,
    )


@app.command()
def formats() -> None:
    """List the input formats cuegap reads."""
    table = Table("name", "kind", "description")
    for r in READERS.values():
        table.add_row(safe(r.name), safe(r.kind), safe(r.description))
    console.print(table)


if __name__ == "__main__":  # pragma: no cover
    app()
