"""A toy fifth study design, registered from the tests only.

It proves that shared code needs no edit to gain a design: everything below uses only the
public ``Design`` interface and the shared helpers a design package would use (the store,
the verdict record, the generic report, the generic re-analysis). ``docs/architecture.md``
("How to add a design") follows it step by step.

Its one statistic is the number of stored responses per system (those the dilemma loader
stores, as the prompt-variance design reads the QA answers); a system passes when it has
at least the policy's ``[toy] min_responses``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

import pandas as pd
from sqlalchemy.engine import Connection, Engine

from cuegap.audit import save_analysis
from cuegap.designs import AnalyzeOptions, Design, SimulateOptions
from cuegap.designs._verdicts import records_frame
from cuegap.models import PolicyKey, Range
from cuegap.reanalysis import reanalyze_design
from cuegap.reports import generic_report_context, generic_report_data


def toy_fingerprints(engine: Engine) -> dict[str, str]:
    """System -> a fingerprint of its stored responses (their count and newest id)."""
    from sqlalchemy import func, select

    from cuegap.schema import Response, System

    with engine.connect() as conn:
        rows = conn.execute(
            select(System.name, func.count(Response.id), func.max(Response.id))
            .join(Response, Response.system_id == System.id)
            .group_by(System.name)
        ).all()
    return {str(s): f"{n}:{m}" for s, n, m in rows}


class _Quiet:
    def print(self, *args: Any, **kwargs: Any) -> None:
        pass


class ToyDesign(Design):
    """A design whose one statistic is the number of stored responses per system."""

    name = "toy"
    title = "Toy design (tests only)"
    description = "counts responses per system"
    kinds: ClassVar[tuple[str, ...]] = ("toy_count",)
    analyze_options = frozenset({"strategy"})
    policy_sections = ("toy", "data")
    policy_keys: ClassVar[Mapping[str, tuple[PolicyKey, ...]]] = {
        "toy": (PolicyKey("min_responses", 5, Range(1, 10**9), "fewest responses to pass"),)
    }

    def present(self, conn: Connection) -> bool:
        return True

    def analyze(self, engine: Engine, options: AnalyzeOptions, out: Any) -> int:
        counts = toy_fingerprints(engine)
        need = options.policy.min_responses  # the design's own policy key
        verdicts = pd.DataFrame(
            [{"system": s, "verdict": "passed" if int(fp.split(":")[0]) >= need
              else "inconclusive",
              "reason": f"{fp.split(':')[0]} responses stored ({need} needed)",
              "n": float(fp.split(":")[0])} for s, fp in sorted(counts.items())],
            columns=["system", "verdict", "reason", "n"],
        )  # fmt: skip
        out.print(f"toy analysis of {len(counts)} systems")
        digest = hashlib.sha256(json.dumps(counts, sort_keys=True).encode()).hexdigest()
        return save_analysis(
            engine, kind="toy_count", status="ok", data_fingerprint=digest,
            system_fingerprints=counts,
            settings={"strategy": options.get("strategy", "all"),
                      "policy": options.policy.to_dict()},
            tables={"verdicts": verdicts},
        )  # fmt: skip

    def describe(self, kind: str, settings: Mapping[str, Any]) -> dict[str, Any]:
        return {"compared": f"responses ({settings.get('strategy')})", "consequences": "",
                "delta_pp": None, "delta": "5 responses", "sampling": "counted"}  # fmt: skip

    def verdict_records(
        self, kind: str, settings: Mapping[str, Any], tables: Mapping[str, Any], status: str
    ) -> Any:
        return records_frame(
            tables["verdicts"], design=self.name, kind=kind, compared="responses stored",
            estimate="n", low=None, high=None, scale="responses", method="count",
            gate_passed=None, rule="passed when at least [toy] min_responses responses are stored",
            delta=None, probability=None, p_flag=None, p_pass=None,
        )  # fmt: skip

    def report_data(self, engine: Engine, analysis_id: int, progress: Any) -> Any:
        return generic_report_data(engine, self, analysis_id, progress)

    def report_context(self, data: Any) -> tuple[dict[str, Any], str]:
        return generic_report_context(data)

    def reanalyze(self, engine: Engine, out_dir: Path, options: AnalyzeOptions, *,
                  render: bool = True) -> Any:  # fmt: skip
        return reanalyze_design(
            engine, self, out_dir, fingerprints=lambda: toy_fingerprints(engine),
            analyze=lambda: self.analyze(engine, options, _Quiet()), render=render,
        )  # fmt: skip

    def simulate(self, options: SimulateOptions, out: Any) -> None:
        raise NotImplementedError
