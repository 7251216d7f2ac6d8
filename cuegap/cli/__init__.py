"""The ``cuegap`` command line: argument handling and display; the work lives in the package.

This module builds the Typer ``app`` (the console script ``cuegap.cli:app``); the commands
live in modules grouped by concern, sharing the console, the store's engine and error
handling of ``_common``:

- ``_store``: init, status, export, analyses, tables;
- ``_ingest``: ingest, simulate, formats;
- ``_analyze``: analyze (and the settings options the report commands share);
- ``_report``: report, reanalyze;
- ``_demo``: demo;
- ``_compliance``: signoff, verify, witness, keygen.
"""

from __future__ import annotations

import typer

from cuegap.cli._analyze import analyze
from cuegap.cli._compliance import keygen, signoff, verify, witness
from cuegap.cli._count import count
from cuegap.cli._demo import demo
from cuegap.cli._ingest import formats, ingest, simulate
from cuegap.cli._plan import plan
from cuegap.cli._report import reanalyze, report
from cuegap.cli._store import analyses, export, init, status, tables
from cuegap.cli.common import main
from cuegap.cli.verdicts import verdicts

app = typer.Typer(
    name="cuegap",
    help="Cue Visibility Gap audits of LLM fairness results: ingest, analyse, report.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
app.callback()(main)
# in this order in `cuegap --help`
for _command in (
    init,
    ingest,
    count,
    simulate,
    status,
    demo,
    analyze,
    verdicts,
    plan,
    export,
    analyses,
    tables,
    report,
    reanalyze,
    signoff,
    verify,
    witness,
    keygen,
    formats,
):
    app.command()(_command)

__all__ = ["app"]
