"""Simulating through the notebook API: a dataset with planted effects, written by a
design's simulator (the store is not touched)."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def simulate(
    design: str,
    out: Path | str,
    *,
    systems: int = 3,
    seed: int = 0,
    scale: str = "small",
    console: Any = None,
    **options: Any,
) -> Path:
    """Write a simulated dataset of ``design`` with planted effects into ``out``.

    What ``cuegap simulate`` and :meth:`cuegap.Audit.simulate` run. Nothing is stored:
    ingest the folder to audit it.

    Parameters
    ----------
    design : str
        A registered design's name (``dilemma``, ``qa``, ``prompt-variance``,
        ``conversation``).
    out : path
        The folder the files go to.
    systems, seed : int
        How many systems, and the random seed.
    scale : str
        ``small`` or ``paper`` (the designs that have a paper-scale simulation).
    console : rich Console, optional
        Where the simulator prints (default: a new console on standard output).
    **options
        The design's own simulate options (``named``, ``cue_gap``, ``prompt_variants``,
        ``format_effect``, ``format_driven``); a design refuses those it does not take, by
        name. Only the options given count as given.

    Returns
    -------
    Path
        The folder written.

    Raises
    ------
    ValueError
        For an unknown design, or an option the design does not take.
    """
    from rich.console import Console

    from cuegap.designs import SimulateOptions, get, refuse_options

    chosen = get(design)
    given = frozenset(options)
    refuse_options(chosen, given, command="simulate")
    sim = SimulateOptions(Path(out), systems=systems, seed=seed, scale=scale,
                          values=dict(options), given=given)  # fmt: skip
    chosen.simulate(sim, console if console is not None else Console(emoji=False))
    return Path(out)
