"""The prompt-variance design (seed 003, Section 3): QA answers under prompt-construction
factors (choice format, field order, ...) and replicates; the share of a score's variance
due to formatting, sign flips, rank discordance, format-sensitive gaps.

Its statistics live in :mod:`cuegap.designs.prompt_variance._analysis` and
:mod:`cuegap.designs.prompt_variance.stats`, its report in :mod:`cuegap.reports`, its command
bodies in :mod:`cuegap.designs.prompt_variance._cli`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any, ClassVar

from sqlalchemy.engine import Connection, Engine

from cuegap.designs import AnalyzeOptions, Design, Progress, SimulateOptions, varying_factor
from cuegap.designs.dilemma import sampling
from cuegap.models import PolicyKey, Range


class PromptVarianceDesign(Design):
    """Seed 003 §3: does a score survive a change of prompt format?"""

    name = "prompt-variance"
    title = "Prompt-construction variance (seed 003, Section 3)"
    description = (
        "QA answers under prompt-construction factors (choice format, field order, ...) "
        "and replicates; share of variance due to formatting, sign flips, rank "
        "discordance, format-sensitive gaps"
    )
    kinds = ("prompt_variance", "pv_bayesian")
    policy_sections = ("qa", "prompt_variance", "data")
    policy_keys: ClassVar[Mapping[str, tuple[PolicyKey, ...]]] = {
        "prompt_variance": (
            PolicyKey("format_probability", 0.95, Range(0.5, 1, low_open=True),
                      "probability that a further prompt format keeps a score's zone (±δ)"),
            PolicyKey("min_combinations", 4, Range(2, 1_000_000_000, unit="an integer count"),
                      "fewest prompt-factor combinations for a verdict"),
            PolicyKey("min_replicates", 2, Range(2, 1_000_000_000, unit="an integer count"),
                      "fewest replicates in every combination for a verdict"),
        ),
    }  # fmt: skip
    analyze_options = frozenset({"strategy", "factors"})
    simulate_options = frozenset({"cue_gap"})

    def present(self, conn: Connection) -> bool:
        return varying_factor(conn)

    def missing_analysis(self) -> str:
        return (
            "no prompt-variance analysis is stored: run cuegap analyze --design "
            "prompt-variance (the QA report carries the same section)"
        )

    def settings_type(self) -> type:
        from cuegap.designs.prompt_variance._analysis import PVSettings

        return PVSettings

    def analyze(self, engine: Engine, options: AnalyzeOptions, out: Any) -> int:
        from cuegap.designs.prompt_variance._cli import analyze_pv, analyze_pv_bayes

        strategy = options.get("strategy", "zero-shot")
        factors = options.get("factors")
        result = analyze_pv(engine, options.policy, factors=factors, strategy=strategy,
                            force=options.force)  # fmt: skip
        if options.bayes:
            analyze_pv_bayes(
                engine, options.policy, factors=factors, strategy=strategy,
                force=options.force, draws=options.draws, chains=options.chains,
                seed=options.seed,
            )  # fmt: skip
        return int(result.id)

    def plan(self, engine: Engine | None, request: Any) -> list[Any]:
        """Plan inputs per system and headline score: runs (prompt combinations ×
        replicates), decided by simulated audits under the prompt-variance rule."""
        from cuegap.designs.prompt_variance._plan import plan

        return plan(engine, request)

    def describe(self, kind: str, settings: Mapping[str, Any]) -> dict[str, Any]:
        st, policy = settings, settings.get("policy") or {}
        factors = st.get("factors")
        formats = ", ".join(map(str, factors)) if factors else "every factor"
        return {"compared": f"prompt formats: {formats} ({st.get('strategy', 'zero-shot')})",
                "consequences": "", "delta_pp": None,
                "delta": f"{policy.get('delta_bias', 0.05):g} (bias score)",
                "sampling": sampling(st, "ANOVA and ranks")}  # fmt: skip

    def verdict_records(
        self, kind: str, settings: Mapping[str, Any], tables: Mapping[str, Any], status: str
    ) -> Any:
        from cuegap.designs import column_or as _column_or
        from cuegap.designs import policy_of, records_frame

        verdicts = tables.get("verdicts")
        if verdicts is None:
            return None
        policy = policy_of(settings)
        described = self.describe(kind, settings)
        bayes = kind == "pv_bayesian"
        return records_frame(
            verdicts, design=self.name, kind=kind,
            compared=_column_or(verdicts, "compared", described["compared"]),
            estimate="estimate", low="low", high="high", level="level", scale="bias score",
            method=_column_or(verdicts, "method", "posterior" if bayes else "replicates"),
            gate_passed=verdicts.get("gate_passed"),
            rule=_column_or(verdicts, "rule", ""), delta=float(policy["delta_bias"]),
            probability=float(policy.get("format_probability", policy["probability"])),
            p_flag=None, p_pass=None,
        )  # fmt: skip

    def report_data(self, engine: Engine, analysis_id: int, progress: Progress | None) -> Any:
        from cuegap.designs.prompt_variance._report import build_pv_report

        return build_pv_report(engine, analysis_id=analysis_id, progress=progress)

    def under_policy(
        self, engine: Engine, analysis_id: int, policy: Any, progress: Progress | None
    ) -> int:
        from cuegap.designs import stored_settings
        from cuegap.designs.prompt_variance._analysis import PVSettings, analyze_prompt_variance

        stored = PVSettings.from_dict(stored_settings(engine, analysis_id))
        settings = replace(stored, policy=policy)
        return int(analyze_prompt_variance(engine, settings, progress=progress).id)

    def report_context(self, data: Any) -> tuple[dict[str, Any], str]:
        from cuegap.designs.prompt_variance._report import pv_report_context

        return pv_report_context(data), "pv_report.html.j2"

    def report_sections(self, data: Any) -> Any:
        from cuegap.designs import ReportSections

        context, _template = self.report_context(data)
        pv = ("partials/_pv_section.html.j2",) if context.get("pv") else ()
        return ReportSections(context, ("partials/_pv_summary.html.j2", *pv),
                              ("partials/_pv_appendix.html.j2",),
                              store=("partials/_store_provenance.html.j2",))  # fmt: skip

    def reanalyze(self, engine: Engine, out_dir: Path, options: AnalyzeOptions, *,
                  render: bool = True) -> Any:  # fmt: skip
        from cuegap.designs import BayesSettings
        from cuegap.designs.prompt_variance._analysis import PVSettings
        from cuegap.designs.prompt_variance._reanalysis import reanalyze_pv

        settings = PVSettings(policy=options.policy, strategy=options.get("strategy", "zero-shot"))
        bayes = BayesSettings() if options.bayes else None
        return reanalyze_pv(engine, out_dir, settings=settings, bayes=bayes, render=render)

    def simulate(self, options: SimulateOptions, out: Any) -> None:
        from cuegap.designs.prompt_variance._cli import simulate_pv

        simulate_pv(options.out_dir, systems=options.systems, seed=options.seed,
                    scale=options.scale, cue_gap=bool(options.get("cue_gap", False)))  # fmt: skip
