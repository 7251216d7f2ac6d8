"""The conversation design's command bodies: ``simulate --design conversation`` and its
part of ``cuegap status`` (argument handling and display only)."""

from __future__ import annotations

from pathlib import Path

from cuegap.cli.common import console
from cuegap.cli.common import progress as _progress
from cuegap.terminal import safe


def simulate_conv_cmd(out_dir: Path, *, systems: int, seed: int, scale: str) -> None:
    """Write and describe a simulated MAC-Fairness workspace of two-agent conversations."""
    from cuegap.designs.conversation._simulate import simulate_conv

    if scale == "paper":
        systems = 8  # seed 003 §5: eight systems
    with _progress("simulating conversations") as advance:
        result = simulate_conv(out_dir, systems=systems, scale=scale, seed=seed, progress=advance)
    console.print(
        f"Simulated {result.n_systems} systems and {result.n_transcripts:,} two-agent "
        f"transcripts ({result.n_failed:,} failed) in {safe(out_dir)}; ingest with "
        f"`cuegap ingest {safe(out_dir)}`:",
        highlight=False,
    )
    for p in (result.truth_path, result.counts_path):
        console.print(f"  {safe(p)}", highlight=False)


def count_conversations(engine) -> int:
    """The number of stored conversations (the conversation design's transcripts)."""
    from sqlalchemy import func, select

    from cuegap.schema import Conversation

    with engine.connect() as conn:
        return int(conn.execute(select(func.count(Conversation.id))).scalar() or 0)


def print_conv_status(engine, out=console) -> None:
    """Print the conversation design's transcripts per system and benchmark."""
    from rich.table import Table
    from sqlalchemy import func, select

    from cuegap.schema import ConvConfig, Conversation, System

    stmt = (
        select(System.name, ConvConfig.benchmark, func.count(Conversation.id))
        .join(ConvConfig, ConvConfig.id == Conversation.config_id)
        .join(System, System.id == ConvConfig.system_id)
        .group_by(System.name, ConvConfig.benchmark)
        .order_by(System.name, ConvConfig.benchmark)
    )
    with engine.connect() as conn:
        rows = conn.execute(stmt).all()
    table = Table("system", "benchmark", "conversations", title="Conversation design")
    for system, benchmark, n in rows:
        table.add_row(safe(system), safe(benchmark), f"{n:,}")
    out.print(table)
