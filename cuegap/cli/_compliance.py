"""Compliance commands: sign-offs, reviewer keys, verification and the witness file."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from cuegap.cli.common import (
    _engine,
    _fail,
    console,
    err,
    friendly,
)
from cuegap.terminal import safe


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
        list[str] | None,
        typer.Option(
            "--trust",
            help="A reviewer's public key (KEY.pub from `cuegap keygen`, bound to its "
            "reviewer's name; NAME=KEY.pub for a key from an older keygen); repeat for each. "
            "Every sign-off must then be signed by the key of the reviewer it names.",
        ),
    ] = None,
    recount: Annotated[
        bool,
        typer.Option(
            "--recount",
            help="Count the files `cuegap count` counted again, on Spark (--master), and compare "
            "the tally with the stored one row for row.",
        ),
    ] = False,
    master: Annotated[
        str, typer.Option("--master", help="Spark's master URL for --recount.")
    ] = "local[2]",
) -> None:
    """Recompute everything verdicts and sign-offs depend on; exit 1 if anything changed.

    Checks the ledger (ingest batches and their responses or counted tallies, item banks,
    systems, analyses and their tables and posteriors, registered reports, sign-offs), the
    report files, the files `cuegap count` counted (where reachable), the sign-off chain,
    and, when given, a witness file and the reviewers' keys. Says what it could not rule
    out.
    """

    from cuegap.compliance import verify as run_verify

    engine = _engine(create=False)
    result = run_verify(engine, witness=against, trusted=trust)
    if recount:
        _recount(engine, result, master)
    for line in result.counted:
        console.print(f"[cyan]counted:[/] {safe(line)}", highlight=False, soft_wrap=True)
    for problem in result.problems:
        err.print(f"[bold red]altered:[/] {safe(problem)}", highlight=False, soft_wrap=True)
    for batch in result.unsealed:
        err.print(f"[bold red]not sealed:[/] {safe(batch)}", highlight=False, soft_wrap=True)
    for limit in result.limits:
        console.print(f"[yellow]not ruled out:[/] {safe(limit)}", highlight=False, soft_wrap=True)
    state = "intact" if result.ok else f"{len(result.problems)} problem(s)"
    if result.unsealed:
        state += f", {len(result.unsealed)} ingest batch(es) with unsealed rows"
    console.print(
        f"Checked {result.entries} ledger entries, {result.reports} report(s), "
        f"{result.signoffs} sign-off(s) and {result.artifacts} stored posterior(s): {state}; "
        f"ledger head {result.ledger_seq}:{result.ledger_head[:16]}",
        highlight=False,
    )
    if not result.ok:
        raise typer.Exit(1)


def _recount(engine, result, master: str) -> None:
    """Recount every design's counted files on Spark; differences become problems."""
    from cuegap.cli._count import spark_problem
    from cuegap.designs import registered
    from cuegap.ingest import recount_problems

    countable = [d.spark_counting() for d in registered().values()]
    countable = [c for c in countable if c is not None]
    if (problem := spark_problem()) is not None:
        raise _fail(f"--recount: {problem}")
    for counting in countable:
        problems, files = recount_problems(engine, counting, master=master)
        result.problems += problems
        if files:
            result.counted.append(
                f"{files} file(s) recounted into {counting.tally} on Spark ({master}): "
                + ("the tally differs" if problems else "the tally is the same, row for row")
            )


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


@friendly
def keygen(
    key: Annotated[
        Path, typer.Argument(help="Private key file to create; the public key is KEY.pub.")
    ],
    reviewer: Annotated[
        str,
        typer.Option(
            "--reviewer",
            help="The reviewer the key is issued for: the name they sign with (`cuegap "
            "signoff --reviewer`). The key signs for this name only.",
        ),
    ],
) -> None:
    """Create a reviewer's Ed25519 key pair for `cuegap signoff --key`.

    Keep the private key to yourself (it never enters the store); give KEY.pub to whoever
    runs `cuegap verify --trust`.
    """
    from cuegap.compliance import generate_key

    priv, pub, kid = generate_key(key, reviewer=reviewer)
    console.print(
        f"Wrote {safe(priv)} (private, keep it) and {safe(pub)} (public); key id {kid}",
        highlight=False,
    )
