"""The report every design gets before it writes its own: page 1 from the verdict record,
"what changed", the stored result tables, the policy, provenance and the sign-off.

A new design's :meth:`~cuegap.designs.Design.report_data` can return
:func:`generic_report_data` and its :meth:`~cuegap.designs.Design.report_context`
:func:`generic_report_context`; it then renders, registers, signs and verifies like the
built-in designs' reports (``docs/architecture.md``, "How to add a design"). Everything
here only reads the stored analysis. Every value from the store is a plain string left to
autoescape: system names, reasons and table cells are untrusted.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

import pandas as pd
from sqlalchemy.engine import Engine

from cuegap.reports._format import _text, signoff_rows
from cuegap.reports._loader import load_stored, load_verdict_page
from cuegap.reports._rounding import fmt_num

#: Rows of each result table the generic report prints (the export holds them all).
MAX_ROWS = 50


@dataclass
class GenericReportData:
    """What the generic report of one stored analysis shows."""

    design: str
    title: str
    analysis_id: int
    kind: str
    created_at: Any
    settings: dict[str, Any]
    tables: dict[str, pd.DataFrame]
    versions: dict[str, Any]
    provenance: Any
    policy_toml: str
    verdict_page: pd.DataFrame | None = None
    verdict_page_analysis: int | None = None
    changes: pd.DataFrame | None = None
    signoffs: list[dict[str, Any]] = field(default_factory=list)
    #: Tables page 1 already shows (the record itself) are not printed again.
    SKIP: ClassVar[tuple[str, ...]] = ("verdict_records",)


def generic_report_data(
    engine: Engine,
    design: Any,
    analysis_id: int,
    progress: Callable[[str], None] | None = None,
) -> GenericReportData:
    """Load a stored analysis of ``design`` for the generic report.

    Parameters
    ----------
    engine : Engine
    design : Design
        The registered design whose analysis it is.
    analysis_id : int
    progress : callable, optional
        Called with short progress messages.
    """
    from cuegap.designs import policy_from_stored

    label = design.label or design.name
    stored = load_stored(engine, design.report_kind(), analysis_id, label=label,
                         design=design.name, progress=progress)  # fmt: skip
    row = stored.row
    settings = dict(row.settings or {})
    policy = policy_from_stored(settings)
    return GenericReportData(
        design=design.name, title=design.title, analysis_id=int(row.id), kind=row.kind,
        created_at=row.created_at, settings=settings, tables=stored.tables,
        versions=stored.versions, provenance=stored.provenance,
        policy_toml=policy.to_toml(design.policy_sections),
        verdict_page=load_verdict_page(engine, int(row.id)),
        signoffs=stored.signoffs,
    )  # fmt: skip


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return fmt_num(value, 3)
    return _text(value)


def change_rows(changes: pd.DataFrame | None) -> list[dict[str, Any]] | None:
    """The "what changed" rows (``partials/_changes.html.j2``) of a changes table."""
    if changes is None:
        return None
    return [
        {
            "system": _text(r["system"]),
            "old_verdict": _text(r["old_verdict"]),
            "new_verdict": _text(r["new_verdict"]),
            "old_gap": fmt_num(r["old_gap_pp"], 3, signed=True),
            "new_gap": fmt_num(r["new_gap_pp"], 3, signed=True),
            "note": _text(r["note"]),
            "material": bool(r["verdict_changed"] or r["gap_moved"]),
        }
        for _, r in changes.iterrows()
    ]


def generic_report_context(data: GenericReportData) -> tuple[dict[str, Any], str]:
    """The template context of the generic report, and its template."""
    tables = []
    for name, frame in sorted(data.tables.items()):
        if name in data.SKIP or not isinstance(frame, pd.DataFrame):
            continue
        shown = frame.head(MAX_ROWS)
        tables.append({
            "name": _text(name),
            "columns": [_text(c) for c in shown.columns],
            "rows": [[_cell(v) for v in row] for row in shown.itertuples(index=False)],
            "more": max(len(frame) - MAX_ROWS, 0),
        })  # fmt: skip
    prov = data.provenance
    ctx = {
        "title": _text(data.title),
        "design": _text(data.design),
        "analysis_id": data.analysis_id,
        "kind": _text(data.kind),
        "created_at": _text(data.created_at),
        "tables": tables,
        "policy_toml": data.policy_toml,
        "changes": change_rows(data.changes),
        "signoffs": signoff_rows(data.signoffs),
        "changes_gap_label": "estimate",
        "changes_gap_unit": "",
        "versions": [(_text(k), _text(v)) for k, v in sorted(data.versions.items())],
        "files": [
            {
                "path": _text(r.source_path),
                "sha256": _text(r.sha256),
                "format": _text(r.format),
                "status": _text(r.status),
                "read": _text(r.lines_read),
            }
            for r in prov.batches.itertuples()
        ],
        "systems": [_text(s) for s in prov.systems["system"]] if len(prov.systems) else [],
    }
    return ctx, "design_report.html.j2"
