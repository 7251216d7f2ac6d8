"""The conversation design (seed 003, Sections 4-5, MAC-Fairness): two-agent conversations
between an identity agent and a baseline agent over rounds; shift rates toward the peer's
previous opinion and their demographic, reveal and instantiation contrasts.

Its statistics live in :mod:`cuegap.designs.conversation._analysis` and
:mod:`cuegap.designs.conversation.stats`, its report in :mod:`cuegap.designs.conversation._report`,
its
command bodies in :mod:`cuegap.designs.conversation._cli_analyze` and
:mod:`cuegap.designs.conversation._cli`.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

from sqlalchemy.engine import Connection, Engine

from cuegap.designs import AnalyzeOptions, Design, Progress, SimulateOptions, StatusPart, has_rows
from cuegap.designs.dilemma import sampling
from cuegap.models import PolicyKey, Range


class ConversationDesign(Design):
    """Seed 003's multi-agent conversations with assigned identities."""

    name = "conversation"
    title = "Multi-agent conversations (seed 003, Sections 4-5)"
    description = (
        "Two-agent conversations (an identity agent and a baseline) over rounds; shift "
        "rates toward the peer's previous opinion and their demographic, reveal and "
        "instantiation contrasts"
    )
    kinds = ("conversation", "conversation_bayesian")
    policy_sections = ("conversation", "data")
    policy_keys: ClassVar[Mapping[str, tuple[PolicyKey, ...]]] = {
        "conversation": (
            PolicyKey("delta_shift", 0.05,
                      Range(0, 1, low_open=True, unit="difference of shift rates"),
                      "δ on a contrast of shift rates"),
            PolicyKey("min_unit_df", 4, Range(1, 1_000_000_000, unit="an integer count"),
                      "fewest t-test degrees of freedom (units − 1) whose significance counts"),
        ),
    }  # fmt: skip
    analyze_options = frozenset({"unit", "bh"})

    def present(self, conn: Connection) -> bool:
        from cuegap.schema import Conversation

        return has_rows(Conversation)(conn)

    def status(self, engine: Engine) -> StatusPart:
        from cuegap.designs.conversation._cli import count_conversations, print_conv_status

        n = count_conversations(engine)
        show = (lambda console: print_conv_status(engine, console)) if n else None
        return StatusPart(n, "conversation", show)

    def tally_problems(self, conn: Connection) -> list[str]:
        # the conversation tally is what the count query reads; an edit to it would change
        # every shift rate without touching a ledgered row, so verify recounts it
        from cuegap.schema import conv_tally_mismatches

        if differ := conv_tally_mismatches(conn):
            return [
                f"conversation tally: {differ} configuration(s) whose transition counts no "
                "longer match the stored opinions (the count table conversation analyses "
                "read was edited)"
            ]
        return []

    def response_loader(self) -> Any:
        from cuegap.ingest import ConversationLoader

        return ConversationLoader

    def settings_type(self) -> type:
        from cuegap.designs.conversation._analysis_tables import ConvSettings

        return ConvSettings

    def analyze(self, engine: Engine, options: AnalyzeOptions, out: Any) -> int:
        from cuegap.designs.conversation._cli_analyze import analyze_conv

        return analyze_conv(
            engine, options.policy, unit=options.get("unit"), bh=bool(options.get("bh")),
            force=options.force, bayes=options.bayes, draws=options.draws,
            chains=options.chains, seed=options.seed,
        )  # fmt: skip

    def plan(self, engine: Engine | None, request: Any) -> list[Any]:
        """Plan inputs per system: conversations per cell, decided by simulated audits
        under the conversation rule (its minimum counts of disagreements and units too)."""
        from cuegap.designs.conversation._plan import plan

        return plan(engine, request)

    def describe(self, kind: str, settings: Mapping[str, Any]) -> dict[str, Any]:
        from cuegap.designs.conversation.stats._verdict import CONTRAST_NAMES

        st = settings
        contrast = st.get("contrast", "")
        unit, correction = st.get("unit", "persona"), st.get("correction", "none")
        tests = f"t-tests per {unit}" + (", BH" if correction == "bh" else "")
        return {"compared": CONTRAST_NAMES.get(contrast, contrast), "consequences": "",
                "delta_pp": None, "delta": f"{st.get('delta', 0.05):g} (shift rate)",
                "sampling": sampling(st, tests)}  # fmt: skip

    def verdict_records(
        self, kind: str, settings: Mapping[str, Any], tables: Mapping[str, Any], status: str
    ) -> Any:
        from cuegap.designs import column_or as _column_or
        from cuegap.designs import policy_of, records_frame
        from cuegap.designs.conversation.stats._verdict import CONTRAST_NAMES

        verdicts = tables.get("verdicts")
        if verdicts is None:
            return None
        policy = policy_of(settings)
        delta = float(settings.get("delta", policy["delta_shift"]))
        p = float(policy["probability"])
        bayes = kind == "conversation_bayesian"
        contrast = verdicts["contrast"].map(lambda c: CONTRAST_NAMES.get(c, c)) if (
            "contrast" in verdicts) else str(settings.get("contrast", ""))  # fmt: skip
        contrast, verdicts = _deciding(verdicts, tables, contrast, bayes)
        rule = (
            f"flagged when some condition's contrast exceeds ±{delta:g} on every benchmark "
            f"with P >= {p:g}; passed when P(|contrast| < {delta:g} on every benchmark, for "
            f"every condition) >= {p:g}; otherwise inconclusive"
            if bayes
            else f"flagged when some condition is significant with one sign on every benchmark "
            f"(a cross-benchmark finding only with two or more) and its unit mean "
            f"exceeds ±{delta:g} on each; passed when every condition's "
            f"{100 * (2 * p - 1):g}% t-interval lies within ±{delta:g} on every benchmark (TOST); "
            "otherwise inconclusive"
        )
        return records_frame(
            verdicts, design=self.name, kind=kind, compared=contrast, estimate="estimate",
            low="low", high="high", scale="shift rate",
            method=_column_or(verdicts, "method", "posterior" if bayes else "t-test"),
            gate_passed=(status == "ok") if bayes else None, rule=rule, delta=delta,
            probability=p, p_flag="p_flag", p_pass="p_pass",
        )  # fmt: skip

    def shown_analysis(self, engine: Engine, analysis_id: int) -> int:
        from cuegap.designs import analysis_kind, matching_fit

        if analysis_kind(engine, analysis_id) != self.report_kind():
            return analysis_id
        # the settings its report matches a fit on
        keys = ("unit", "correction", "alpha", "contrast", "delta", "policy")
        fit = matching_fit(engine, analysis_id, "conversation_bayesian", keys)
        return analysis_id if fit is None else fit

    def report_data(self, engine: Engine, analysis_id: int, progress: Progress | None) -> Any:
        from cuegap.designs.conversation._report import build_conv_report

        return build_conv_report(engine, analysis_id=analysis_id, progress=progress)

    def under_policy(
        self, engine: Engine, analysis_id: int, policy: Any, progress: Progress | None
    ) -> int:
        from dataclasses import replace

        from cuegap.designs import stored_settings
        from cuegap.designs.conversation._analysis import ConvSettings, analyze_conversation

        stored = ConvSettings.from_dict(stored_settings(engine, analysis_id))
        settings = replace(stored, policy=policy)
        return int(analyze_conversation(engine, settings, progress=progress).id)

    def report_context(self, data: Any) -> tuple[dict[str, Any], str]:
        from cuegap.designs.conversation._report import conv_report_context

        return conv_report_context(data), "conv_report.html.j2"

    def report_sections(self, data: Any) -> Any:
        from cuegap.designs import ReportSections

        context, _template = self.report_context(data)
        findings = ("partials/_conv_summary.html.j2", "partials/_conv_findings.html.j2")
        return ReportSections(context, findings, ("partials/_conv_appendix.html.j2",),
                              store=("partials/_store_provenance.html.j2",))  # fmt: skip

    def reanalyze(self, engine: Engine, out_dir: Path, options: AnalyzeOptions, *,
                  render: bool = True) -> Any:  # fmt: skip
        from cuegap.designs import BayesSettings
        from cuegap.designs.conversation._reanalysis import reanalyze_conv

        if options.boot != 1000:
            raise ValueError("--boot does not apply to the conversation design")
        return reanalyze_conv(
            engine,
            out_dir,
            policy=options.policy if options.policy_path else None,
            bayes=BayesSettings() if options.bayes else None,
            render=render,
        )

    def simulate(self, options: SimulateOptions, out: Any) -> None:
        from cuegap.designs.conversation._cli import simulate_conv_cmd

        simulate_conv_cmd(options.out_dir, systems=options.systems, seed=options.seed,
                          scale=options.scale)  # fmt: skip


def _deciding(verdicts: Any, tables: Mapping[str, Any], contrast: Any, bayes: bool) -> Any:
    """What a verdict compared (the contrast at its deciding condition, when one decided)
    and the verdicts with that condition's ``estimate``: the contrast's mean over
    benchmarks (of the unit means, or the posterior means of a fit)."""
    from cuegap.designs.conversation.stats._verdict import deciding_estimates

    source = tables.get("conv_bayes_contrasts" if bayes else "conv_tests")
    needed = {"system", "contrast", "condition"}
    if source is None or not needed <= set(verdicts) or verdicts.empty:
        return contrast, verdicts
    verdicts = verdicts.assign(estimate=deciding_estimates(verdicts, source))
    cond = verdicts["condition"].fillna("").astype(str)
    names = [contrast] * len(cond) if isinstance(contrast, str) else list(contrast)
    compared = [f"{c} at {d}" if d else c for c, d in zip(names, cond, strict=True)]
    return compared, verdicts
