"""The prompt-variance design's command bodies: ``analyze --design prompt-variance`` and
``simulate --design prompt-variance`` (argument handling and display only)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
from rich.table import Table

from cuegap.cli.common import console, err
from cuegap.cli.common import progress as _progress
from cuegap.cli.common import steps as _steps
from cuegap.cli.verdicts import print_verdicts
from cuegap.terminal import safe


def parse_factors(text: str | None) -> tuple[str, ...] | None:
    """``--factors a,b`` as a tuple (None when not given).

    Raises
    ------
    ValueError
        For an empty name.
    """
    if text is None:
        return None
    names = tuple(t.strip() for t in text.split(","))
    if not names or any(not n for n in names):
        raise ValueError(f"--factors should be comma-separated factor names but got {text!r}")
    return names


def analyze_pv(engine: Any, policy: Any, *, factors: str | None, strategy: str, force: bool) -> Any:
    """Run and print a prompt-variance analysis; returns it."""
    from cuegap.designs.prompt_variance._analysis import PVSettings, analyze_prompt_variance

    settings = PVSettings(factors=parse_factors(factors), strategy=strategy, policy=policy)
    with _steps("analyze") as step:
        result = analyze_prompt_variance(engine, settings, force=force, progress=step)
    how = "reused (data and settings unchanged)" if result.reused else "computed and stored"
    console.print(
        f"Prompt-variance analysis {result.id} {how}; data fingerprint "
        f"{result.data_fingerprint[:12]}; factors {safe(', '.join(result.factors))}"
    )
    summary = result.tables.get("pv_anova_summary")
    if summary is not None and len(summary):
        table = Table(
            "metric",
            "η² p10",
            "p25",
            "p50",
            "p75",
            "p90",
            "q < α",
            title="Share of score variance due to prompt construction (η²)",
        )
        for r in summary.itertuples():
            cells = [f"{getattr(r, f'eta2_p{p}'):.2f}" for p in (10, 25, 50, 75, 90)]
            table.add_row(safe(r.metric), *cells, safe(r.bh))
        console.print(table)
    flips = result.tables.get("pv_extremes")
    if flips is not None and len(flips):
        n_ext = int(flips["extremes_flip"].fillna(False).astype(bool).sum())
        n_any = int(flips["any_flip"].fillna(False).astype(bool).sum())
        console.print(
            f"Sign flips across combinations: {n_any} of {len(flips)} system × category × "
            f"metric cells ({n_ext} between the extremes)."
        )
    gap = result.tables.get("pv_cue_gap_formats")
    if gap is not None and len(gap):
        table = Table(
            "system",
            "gap",
            "format SD",
            "P(zone kept)",
            "format-sensitive",
            title=f"Explicit vs implicit gap across prompt formats ({safe(strategy)})",
        )
        for r in gap.itertuples():
            unknown = r.format_sensitive is None or r.format_sensitive is pd.NA
            sens = "" if unknown else ("yes" if r.format_sensitive else "no")
            table.add_row(
                safe(r.system),
                f"{r.gap:+.3f}",
                f"{r.sd_format:.3f}",
                f"{r.p_same_zone:.2f}",
                sens,
            )
        console.print(table)
    if "verdicts" in result.tables:
        none = "Verdicts: no signed bias score (BBQ) to judge in this store."
        print_verdicts(engine, int(result.id), "Verdicts (formats)", empty=none)
    console.print(
        "Tables (cuegap export NAME --out FILE.csv|.parquet): " + safe(", ".join(result.tables))
    )
    return result


def analyze_pv_bayes(
    engine: Any,
    policy: Any,
    *,
    factors: str | None,
    strategy: str,
    force: bool,
    draws: int,
    chains: int,
    seed: int,
) -> Any:
    """Fit, store and print the hierarchical variance-components model."""
    from cuegap.designs import BayesSettings
    from cuegap.designs.prompt_variance._analysis import PVSettings
    from cuegap.designs.prompt_variance._analysis_bayes import analyze_pv_bayes as run

    console.rule("Bayesian variance components")
    settings = PVSettings(factors=parse_factors(factors), strategy=strategy, policy=policy)
    result = run(
        engine,
        settings,
        BayesSettings(draws=draws, tune=draws, chains=chains, seed=seed),
        force=force,
        progress=lambda msg: err.print(f"  {safe(msg)}", highlight=False),
        sampler_progress=err.is_terminal,
    )
    state = "converged" if result.status == "ok" else "[red]did not converge[/]"
    how = "reused" if result.reused else "stored"
    console.print(f"Prompt-variance Bayesian analysis {result.id} {how}: {state}")
    comp = result.tables["pv_bayes_components"]
    if len(comp):
        table = Table("metric", "component", "median share", "cells", title=(
            "Share of a run score's variance per component (posterior means; median over "
            "system × category)"))  # fmt: skip
        med = comp.groupby(["metric", "component"], sort=False)["share"].agg(["median", "size"])
        for (metric, component), r in med.iterrows():
            table.add_row(safe(metric), safe(component), f"{r['median']:.2f}", str(int(r["size"])))
        console.print(table)
    if result.status != "ok":
        console.print(
            f"{safe(result.message)}. Rows of a metric that missed the gate say converged = "
            f"False. Sample longer: `cuegap analyze --design prompt-variance --bayes --draws "
            f"{2 * draws} --chains {max(chains, 4)}`.",
            highlight=False,
        )
    console.print(
        "Tables (cuegap export NAME --out FILE.csv|.parquet): " + safe(", ".join(result.tables))
    )
    return result


def simulate_pv(out_dir: Path, *, systems: int, seed: int, scale: str, cue_gap: bool) -> None:
    """Write and describe a simulated prompt-variance audit."""
    from cuegap.designs.prompt_variance._simulate import simulate_pv as run

    with _progress("simulating prompt-variance answers") as advance:
        result = run(
            out_dir,
            systems=systems,
            scale=scale,
            seed=seed,
            cue_gap=cue_gap,
            progress=None if advance is None else (lambda n: advance(n, None)),
        )
    console.print(
        f"Simulated {result.n_systems} systems and {result.n_responses:,} answers in "
        f"{safe(out_dir)}:",
        highlight=False,
    )
    for p in (*result.bank_paths, *result.responses_paths, result.truth_path):
        console.print(f"  {safe(p)}", highlight=False)
