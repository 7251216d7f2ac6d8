"""The conversation design's command body: ``analyze --design conversation`` (argument
handling and display only; the work is
:func:`cuegap.designs.conversation._analysis.analyze_conversation`)."""

from __future__ import annotations

from typing import Any

from rich.table import Table

from cuegap.cli.common import console, err
from cuegap.cli.common import steps as _steps
from cuegap.cli.verdicts import print_verdicts
from cuegap.terminal import safe


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
    _print_scope(result.tables, settings)
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


def _print_scope(tables: dict, settings: Any) -> None:
    """Say when no cross-benchmark finding is possible (one benchmark) and which t-tests
    ran over fewer units than the policy's ``min_unit_df`` allows."""
    rates = tables.get("conv_shift_rates")
    benches = sorted(map(str, set(rates["benchmark"]))) if rates is not None else []
    if len(benches) == 1:
        cons = tables.get("conv_consistency")
        n = int(cons["all_significant"].sum()) if cons is not None and len(cons) else 0
        console.print(
            f"[yellow]No cross-benchmark finding is possible:[/] the store holds one benchmark "
            f"({safe(benches[0])}); seed 003 counts cross-dataset evidence only when it is "
            f"significant on every dataset. {n} condition{'s are' if n != 1 else ' is'} "
            f"significant on {safe(benches[0])} alone.",
            highlight=False,
        )
    tests = tables.get("conv_tests")
    if tests is None or not len(tests) or "df_ok" not in tests.columns:
        return
    few = tests[~tests["df_ok"].astype(bool) & (tests["n_units"] >= 2)]
    if len(few):
        reasons = "; ".join(sorted(set(few["note"].astype(str)))[:3])
        console.print(
            f"[yellow]{len(few)} of {len(tests)} t-tests do not count[/] (too few "
            f"{safe(settings.unit)} units for conversation.min_unit_df = "
            f"{settings.policy.min_unit_df}): {safe(reasons)}. They are never significant "
            "and decide no verdict; try --unit question.",
            highlight=False,
        )
