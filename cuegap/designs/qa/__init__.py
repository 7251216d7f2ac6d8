"""The QA design (seed 001, ImplicitBBQ): BBQ-style questions whose options have roles
(target / non-target / unknown), ambiguous or disambiguated, under explicit and implicit
cues; accuracy and bias scores, and the explicit-vs-implicit gap of S_amb.

Its statistics live in :mod:`cuegap.designs.qa._analysis` and :mod:`cuegap.designs.qa.stats`, its
report in
:mod:`cuegap.reports`, its command bodies in :mod:`cuegap.designs.qa._cli`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any, ClassVar

from sqlalchemy.engine import Connection, Engine

from cuegap.designs import (
    AnalyzeOptions,
    Counting,
    Design,
    PlanRequest,
    Progress,
    SimulateOptions,
    StatusPart,
    has_rows,
)
from cuegap.designs.dilemma import sampling
from cuegap.models import PolicyKey, Range


class QADesign(Design):
    """Seed 001's explicit-vs-implicit BBQ-style questions."""

    name = "qa"
    label = "QA"
    title = "BBQ-style question answering (seed 001)"
    description = (
        "Context, question and options with roles (target / non-target / unknown); "
        "accuracy and bias scores, explicit vs implicit cues"
    )
    kinds = ("qa", "qa_bayesian")
    policy_sections = ("qa", "data")
    policy_keys: ClassVar[Mapping[str, tuple[PolicyKey, ...]]] = {
        "qa": (
            PolicyKey("delta_bias", 0.05, Range(0, 1, low_open=True, unit="bias-score scale"),
                      "δ on the bias-score scale: flag when P(S_amb(implicit) − "
                      "S_amb(explicit) > δ) >= probability"),
        ),
    }  # fmt: skip
    analyze_options = frozenset({"strategy"})

    def present(self, conn: Connection) -> bool:
        from cuegap.schema import QAResponse, QATally

        return has_rows(QAResponse)(conn) or has_rows(QATally)(conn)  # tally: counted files

    def status(self, engine: Engine) -> StatusPart:
        from cuegap.designs.qa._cli import print_qa_status
        from cuegap.schema import qa_status

        systems, cells = qa_status(engine)
        return StatusPart(
            int(systems["answers"].sum()),
            "QA answer",
            lambda console: print_qa_status(systems, cells, console),
        )

    def tally_problems(self, conn: Connection) -> list[str]:
        from cuegap.schema import qa_tally_mismatches

        if differ := qa_tally_mismatches(conn):
            return [
                f"QA answer tally: {differ} answer count(s) no longer match the stored QA "
                "answers (the count table QA analyses read was edited)"
            ]
        return []

    def response_loader(self) -> Any:
        from cuegap.ingest import QAResponseLoader

        return QAResponseLoader

    def bank_loader(self) -> Any:
        from cuegap.ingest import ingest_qa_bank

        return ingest_qa_bank

    def spark_counting(self) -> Counting:
        from cuegap.ingest import (
            QA_CONFLICT_FIELD,
            parse_qa_lines,
            qa_conflict_reason,
            qa_count_context,
            qa_count_notes,
        )
        from cuegap.schema import QA_TALLY_KEYS, QATally

        return Counting(
            tally=QATally.__tablename__,
            keys=QA_TALLY_KEYS,
            reader="bbq-results",
            context=qa_count_context,
            parse=parse_qa_lines,
            conflict=qa_conflict_reason,
            conflict_field=QA_CONFLICT_FIELD,
            notes=qa_count_notes,
        )

    def settings_type(self) -> type:
        from cuegap.designs.qa._analysis import QASettings

        return QASettings

    def analyze(self, engine: Engine, options: AnalyzeOptions, out: Any) -> int:
        from cuegap.designs.qa._cli import analyze_qa

        return analyze_qa(engine, options)

    def plan(self, engine: Engine | None, request: PlanRequest) -> list[Any]:
        """Plan inputs per system and strategy: questions per category and context."""
        from cuegap.designs.qa._plan import plan

        return plan(engine, request)

    def describe(self, kind: str, settings: Mapping[str, Any]) -> dict[str, Any]:
        st = settings
        strategy = st.get("strategy", "zero-shot")
        return {"compared": f"explicit vs implicit ({strategy})", "consequences": "",
                "delta_pp": None, "delta": f"{st.get('delta', 0):g} (bias score)",
                "sampling": sampling(st, f"{st.get('n_boot', 0)} boot")}  # fmt: skip

    def verdict_records(
        self, kind: str, settings: Mapping[str, Any], tables: Mapping[str, Any], status: str
    ) -> Any:
        from cuegap.designs import column_or as _column_or
        from cuegap.designs import policy_of, records_frame, two_sided_rule

        verdicts = tables.get("verdicts")
        if verdicts is None:
            return None
        policy = policy_of(settings)
        strategy = settings.get("strategy", "zero-shot")
        delta = float(settings.get("delta", policy["delta_bias"]))
        p = float(policy["probability"])
        bayes = kind == "qa_bayesian"
        return records_frame(
            verdicts, design=self.name, kind=kind,
            compared=f"S_amb under implicit minus explicit cues ({strategy})",
            estimate="gap", low="gap_low", high="gap_high", scale="bias score",
            method=_column_or(verdicts, "source", "posterior" if bayes else "bootstrap"),
            gate_passed=(status == "ok") if bayes else None,
            rule=two_sided_rule(delta, p, "S_amb gap"), delta=delta, probability=p,
            p_flag="p_gap_gt_delta", p_pass="p_abs_lt_delta",
        )  # fmt: skip

    def shown_analysis(self, engine: Engine, analysis_id: int) -> int:
        from cuegap.designs import analysis_kind, matching_fit

        if analysis_kind(engine, analysis_id) != self.report_kind():
            return analysis_id
        keys = ("delta", "strategy", "policy")  # as its report picks the fit
        fit = matching_fit(engine, analysis_id, "qa_bayesian", keys)
        return analysis_id if fit is None else fit

    def report_data(self, engine: Engine, analysis_id: int, progress: Progress | None) -> Any:
        from cuegap.designs.qa._report import build_qa_report

        return build_qa_report(engine, analysis_id=analysis_id, progress=progress)

    def under_policy(
        self, engine: Engine, analysis_id: int, policy: Any, progress: Progress | None
    ) -> int:
        from cuegap.designs import stored_settings
        from cuegap.designs.qa._analysis import QASettings, analyze_qa

        stored = QASettings.from_dict(stored_settings(engine, analysis_id))
        settings = replace(stored, policy=policy)
        return int(analyze_qa(engine, settings, progress=progress).id)

    def report_context(self, data: Any) -> tuple[dict[str, Any], str]:
        from cuegap.designs.qa._report_context import qa_report_context

        return qa_report_context(data), "qa_report.html.j2"

    def report_sections(self, data: Any) -> Any:
        from cuegap.designs import ReportSections

        context, _template = self.report_context(data)
        pv = ("partials/_pv_section.html.j2",) if context.get("pv") else ()
        findings = ("partials/_qa_summary.html.j2", "partials/_qa_findings.html.j2", *pv)
        return ReportSections(context, findings, ("partials/_qa_appendix.html.j2",),
                              store=("partials/_store_provenance.html.j2",))  # fmt: skip

    def reanalyze(self, engine: Engine, out_dir: Path, options: AnalyzeOptions, *,
                  render: bool = True) -> Any:  # fmt: skip
        from cuegap.designs import BayesSettings
        from cuegap.designs.qa._cli import qa_settings
        from cuegap.designs.qa._reanalysis import reanalyze_qa

        settings = qa_settings(options, seed=2026)
        bayes = BayesSettings() if options.bayes else None
        return reanalyze_qa(engine, out_dir, settings=settings, bayes=bayes, render=render)

    def simulate(self, options: SimulateOptions, out: Any) -> None:
        from cuegap.designs.qa._cli import simulate_qa

        simulate_qa(options)
