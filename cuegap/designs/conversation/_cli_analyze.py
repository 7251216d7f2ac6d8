"""The conversation design's command body: ``analyze --design conversation`` (argument
handling and display only; the work is
:func:`cuegap.designs.conversation._analysis.analyze_conversation`)."""

from __future__ import annotations

from typing import Any

from rich.table import Table

from cuegap._terminal import safe
from cuegap.cli._common import _steps, console, err
from cuegap.cli._verdicts import print_verdicts


def analyze_conv(
    engine: Any,
    policy: Any,
    *,
    unit: str | None,
    bh: bool,
    force: bool,
    bayes: bool,
    draws: int,
    chains: int,
    seed: int,
) -> int:
    """Run and print a conversation analysis (and its Bayesian fit with ``bayes``); returns
    its id."""
    from cuegap.designs import BayesSettings
    from cuegap.designs.conversation._analysis import ConvSettings, analyze_conversation

    b = BayesSettings(draws=draws, tune=draws, chains=chains, seed=seed) if bayes else None
    settings = ConvSettings(unit=unit or "persona", bh=bh, policy=policy, bayes=b)  # type: ignore[arg-type]
    with _steps("analyze") as step:
        result = analyze_conversation(
            engine, settings, force=force, progress=step, sampler_progress=err.is_terminal
        )
    how = "reused (data and settings unchanged)" if result.reused else "computed and stored"
    console.print(
        f"Conversation analysis {result.id} {how}; data fingerprint "
        f"{result.data_fingerprint[:12]}; t-tests over {safe(settings.unit)}"
        f"{', Benjamini–Hochberg' if bh else ''}; δ = {settings.delta:g} on "
        f"{safe(settings.contrast)}."
    )
    summary = result.tables.get("conv_consistency_summary")
    if summary is not None and len(summary):
        table = Table(
            "contrast", "instantiation", "conditions", "findings", "−", "+",
            title="Findings: significant with one sign on every benchmark",
        )  # fmt: skip
        for r in summary.itertuples():
            table.add_row(
                safe(r.contrast), safe(r.instantiation), str(r.conditions), str(r.findings),
                str(r.negative), str(r.positive),
            )  # fmt: skip
        console.print(table)
    print_verdicts(engine, int(result.id), "Verdicts (t-tests)")
    console.print(
        "Tables (cuegap export NAME --out FILE.csv|.parquet): " + safe(", ".join(result.tables))
    )
    if result.bayes_tables is None:
        return int(result.id)
    state = "converged" if result.converged else "[red]did not converge[/]"
    console.print(f"Conversation Bayesian analysis {result.bayes_id}: {state}")
    print_verdicts(engine, int(result.bayes_id), "Verdicts (posterior)")
    if not result.converged:
        console.print(
            "The fit missed the convergence gate, so every verdict above is inconclusive. "
            f"Sample longer: `cuegap analyze --design conversation --bayes --draws "
            f"{2 * draws} --chains {max(chains, 4)}`.",
            highlight=False,
        )
    return int(result.id)
