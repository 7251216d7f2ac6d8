"""The dilemma design (seed 000): moral dilemmas under Neutral / Direct / Puzzled / Named
cues, Favor / Against relative to the neutral decision, the Cue Visibility Gap.

Its statistics live in :mod:`cuegap.designs.dilemma._analysis` and :mod:`cuegap.models`, its report
in
:mod:`cuegap.reports`, its command bodies in :mod:`cuegap.designs.dilemma._cli`.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

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


class DilemmaDesign(Design):
    """Seed 000's moral dilemmas and the Cue Visibility Gap."""

    name = "dilemma"
    title = "Moral dilemmas (seed 000)"
    description = (
        "Neutral / Direct / Puzzled dilemmas; Favor / Against relative to the neutral "
        "decision; the cue visibility gap"
    )
    kinds = ("frequentist", "bayesian")
    policy_sections = ("verdict", "data")
    analyze_options = frozenset({"explicit", "implicit", "consequences"})
    simulate_options = frozenset({"named", "prompt_variants", "format_effect", "format_driven"})

    def present(self, conn: Connection) -> bool:
        from cuegap.schema import Response, ResponseTally

        # a store counted by ``cuegap count`` holds the tally without the responses
        return has_rows(Response)(conn) or has_rows(ResponseTally)(conn)

    def status(self, engine: Engine) -> StatusPart:
        # its tables are the store-wide Systems and Conditions of ``cuegap status``
        from sqlalchemy import func, select

        from cuegap.schema import ResponseTally

        # the tally counts every stored response, and every one a ``cuegap count`` counted
        with engine.connect() as conn:
            n = conn.execute(select(func.sum(ResponseTally.n))).scalar()
        return StatusPart(int(n or 0), "response")

    def tally_problems(self, conn: Connection) -> list[str]:
        from cuegap.schema import tally_mismatches

        if differ := tally_mismatches(conn):
            return [
                f"response tally: {differ} distinct answer count(s) no longer match the "
                "stored responses (the count table analyses read was edited)"
            ]
        return []

    def response_loader(self) -> Any:
        from cuegap.ingest import ResponseLoader as _ResponseLoader

        return _ResponseLoader

    def bank_loader(self) -> Any:
        from cuegap.ingest import ingest_dilemma_bank

        return ingest_dilemma_bank

    def spark_counting(self) -> Counting:
        from cuegap.ingest import dilemma_count_context, parse_dilemma_lines
        from cuegap.schema import TALLY_KEYS, ResponseTally

        return Counting(
            tally=ResponseTally.__tablename__,
            keys=TALLY_KEYS,
            reader="generic",
            context=dilemma_count_context,
            parse=parse_dilemma_lines,
        )

    def settings_type(self) -> type:
        from cuegap.designs.dilemma._analysis_settings import AnalysisSettings

        return AnalysisSettings

    def analyze(self, engine: Engine, options: AnalyzeOptions, out: Any) -> int:
        from cuegap.designs.dilemma._cli import analyze_dilemma

        return analyze_dilemma(engine, options)

    def plan(self, engine: Engine | None, request: PlanRequest) -> list[Any]:
        """Plan inputs per system: dilemmas per condition (:mod:`._plan`)."""
        from cuegap.designs.dilemma._plan import plan

        return plan(engine, request)

    def describe(self, kind: str, settings: Mapping[str, Any]) -> dict[str, Any]:
        from cuegap.designs.dilemma.stats import condition_label

        st, policy = settings, settings.get("policy") or {}
        pair = [st.get("explicit"), st.get("implicit")]
        return {
            "compared": " vs ".join(condition_label(tuple(c)) for c in pair) if all(pair) else "",
            "consequences": "with" if st.get("consequences", True) else "without",
            "delta_pp": policy.get("delta_pp"),
            "delta": f"{policy.get('delta_pp', 2.0):g} pp",
            "sampling": sampling(st, f"{st.get('n_boot', 0)} boot"),
        }

    def verdict_records(
        self, kind: str, settings: Mapping[str, Any], tables: Mapping[str, Any], status: str
    ) -> Any:
        from cuegap.designs import column_or as _column_or
        from cuegap.designs import policy_of, records_frame, two_sided_rule

        verdicts = tables.get("verdicts")
        if verdicts is None:
            return None
        policy = policy_of(settings)
        described = self.describe(kind, settings)
        compared = f"{described['compared']} ({described['consequences']} consequences)"
        delta, p = float(policy["delta_pp"]), float(policy["probability"])
        bayes = kind == "bayesian"
        return records_frame(
            verdicts, design=self.name, kind=kind, compared=compared, estimate="gap_pp",
            low="gap_low_pp", high="gap_high_pp", scale="pp",
            method=_column_or(verdicts, "source", "posterior" if bayes else "bootstrap"),
            gate_passed=(status == "ok") if bayes else None,
            rule=two_sided_rule(delta, p, "macro gap", " pp"), delta=delta, probability=p,
            p_flag="p_gap_gt_delta", p_pass="p_abs_lt_delta",
        )  # fmt: skip

    def shown_analysis(self, engine: Engine, analysis_id: int) -> int:
        from sqlalchemy import select

        from cuegap.designs.dilemma._analysis import bayes_answering
        from cuegap.designs.dilemma._analysis_settings import settings_from_dict
        from cuegap.schema import Analysis

        with engine.connect() as conn:
            row = conn.execute(
                select(Analysis.kind, Analysis.data_fingerprint, Analysis.settings).where(
                    Analysis.id == analysis_id
                )
            ).one()
        if row.kind != self.report_kind():
            return analysis_id
        settings = settings_from_dict(row.settings or {})
        fit, _ = bayes_answering(engine, row.data_fingerprint, settings)
        return analysis_id if fit is None else fit

    def report_data(self, engine: Engine, analysis_id: int, progress: Progress | None) -> Any:
        from cuegap.designs.dilemma._report import build_report

        return build_report(engine, analysis_id=analysis_id, progress=progress)

    def under_policy(
        self, engine: Engine, analysis_id: int, policy: Any, progress: Progress | None
    ) -> int:
        from dataclasses import replace

        from cuegap.designs import stored_settings
        from cuegap.designs.dilemma._analysis import analyze
        from cuegap.designs.dilemma._analysis_settings import settings_from_dict

        settings = settings_from_dict(stored_settings(engine, analysis_id))
        if policy == settings.policy:
            return analysis_id
        settings = replace(settings, policy=policy)
        result = analyze(engine, settings, progress=progress)
        _rederive_bayes(engine, settings, result.id, progress)
        return int(result.id)

    def report_context(self, data: Any) -> tuple[dict[str, Any], str]:
        from cuegap.designs.dilemma._report_context import report_context

        return report_context(data), "report.html.j2"

    def report_sections(self, data: Any) -> Any:
        from cuegap.designs import ReportSections
        from cuegap.designs.dilemma._report_context import report_context
        from cuegap.reports import provenance_rows

        # its ingest passes and quarantined lines are the whole store's: shown once in a
        # board report, as the shared store partial over the same provenance
        context = {**report_context(data), "provenance": provenance_rows(data)}
        return ReportSections(
            context,
            ("partials/_summary.html.j2", "partials/_findings.html.j2",
             "partials/_tables.html.j2"),
            ("partials/_cover.html.j2", "partials/_quality.html.j2",
             "partials/_appendix.html.j2"),
            store=("partials/_store_provenance.html.j2",),
        )  # fmt: skip

    def reanalyze(self, engine: Engine, out_dir: Path, options: AnalyzeOptions, *,
                  render: bool = True) -> Any:  # fmt: skip
        from cuegap.designs import BayesSettings
        from cuegap.designs.dilemma._cli import dilemma_settings
        from cuegap.designs.dilemma._reanalysis import reanalyze
        from cuegap.reanalysis import default_renderer

        return reanalyze(
            engine,
            out_dir,
            settings=dilemma_settings(options, seed=2026),
            bayes=BayesSettings() if options.bayes else None,
            render=default_renderer() if render else None,
        )

    def simulate(self, options: SimulateOptions, out: Any) -> None:
        from cuegap.designs.dilemma._cli import simulate_dilemma

        simulate_dilemma(options)


def sampling(settings: Mapping[str, Any], otherwise: str) -> str:
    """How an analysis sampled: "4×1000 draws" of a Bayesian fit, else ``otherwise``."""
    bayes = settings.get("bayes") or {}
    return f"{bayes.get('chains')}×{bayes.get('draws')} draws" if bayes else otherwise


def _rederive_bayes(engine: Engine, settings: Any, analysis_id: int, say: Any) -> None:
    """Under a new policy, recompute the newest Bayesian fit's verdicts from its posterior
    (no sampling; nothing happens when that fit would need resampling)."""
    from sqlalchemy import select

    from cuegap.designs.dilemma._analysis import analyze_bayes
    from cuegap.designs.dilemma._analysis_settings import BayesSettings
    from cuegap.schema import Analysis

    with engine.connect() as conn:
        fingerprint = conn.execute(
            select(Analysis.data_fingerprint).where(Analysis.id == analysis_id)
        ).scalar()
        stored = conn.execute(
            select(Analysis.settings)
            .where(Analysis.kind == "bayesian", Analysis.data_fingerprint == fingerprint)
            .order_by(Analysis.id.desc())
            .limit(1)
        ).scalar()
    if not stored or not stored.get("bayes"):
        return
    fields = BayesSettings.__dataclass_fields__
    bayes = BayesSettings(**{k: v for k, v in stored["bayes"].items() if k in fields})
    say = say or (lambda _msg: None)
    say("Bayesian verdicts under the new policy, from the stored posterior")
    analyze_bayes(engine, settings, bayes, progress=say, sample=False)


#: What the demo and notebooks use of this design beyond the :class:`Design` interface,
#: loaded on first use (PEP 562): name -> its module in this package.
_PUBLIC = {
    "analyze": "cuegap.designs.dilemma._analysis",
    "analyze_bayes": "cuegap.designs.dilemma._analysis",
    "bayes_answering": "cuegap.designs.dilemma._analysis",
    "load_store_data": "cuegap.designs.dilemma._analysis_tables",
    "AnalysisSettings": "cuegap.designs.dilemma._analysis_settings",
    "settings_from_dict": "cuegap.designs.dilemma._analysis_settings",
    "dilemma_settings": "cuegap.designs.dilemma._cli",
    "print_analysis": "cuegap.designs.dilemma._cli",
    "run_bayes": "cuegap.designs.dilemma._cli",
}


def __getattr__(name: str) -> Any:
    home = _PUBLIC.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value
