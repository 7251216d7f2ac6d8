"""The board report: one document across every design a store holds.

Page 1 is a systems × designs matrix of the stored verdict records (the analysis each
design's own report shows: :meth:`~cuegap.designs.Design.shown_analysis`), with an overall
line per system under the policy's ``[board]`` rule (:mod:`cuegap.models._board`). Each
design's findings follow, rendered from its own report context
(:meth:`~cuegap.designs.Design.report_sections`), then provenance, data quality and
methods, and the sign-off. Like every report it only reads stored analyses.

The analyses it shows are listed in the HTML with their content digests
(``data-cuegap-analysis``), so that ``cuegap verify`` checks each of them, not only the one
the report is registered under. Every value from the store is a plain string left to
autoescape: system names and reasons are untrusted.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import pandas as pd
from markupsafe import Markup
from sqlalchemy import select
from sqlalchemy.engine import Engine

from cuegap.reports._loader import load_plan, load_verdict_page
from cuegap.reports._plan_section import plan_section
from cuegap.reports._render import _MARKERS, _PLACEHOLDER, environment
from cuegap.reports._rounding import fmt_num
from cuegap.reports._verdict_page import BADGES, verdict_page_context
from cuegap.schema import Analysis


def _text(x: Any) -> str:
    return "" if x is None or (isinstance(x, float) and x != x) or x is pd.NA else str(x)


#: Characters of a record's reason the matrix prints (the design's verdict page, which
#: follows, prints it whole).
REASON_CHARS = 75


@dataclass
class BoardPart:
    """One design in the board report.

    ``analysis_id`` is the analysis its report shows (None: none stored, ``missing`` says
    what to run), ``shown`` the one whose verdict records it prints, ``records`` those
    records (convergence gate applied) and ``data`` its report data.
    """

    design: str
    title: str
    analysis_id: int | None
    shown: int | None = None
    records: pd.DataFrame | None = None
    data: Any = None
    missing: str = ""
    plan: tuple[int | None, Any] = (None, None)


@dataclass
class BoardData:
    """What a board report shows: the designs held, in registry order, and the policy."""

    parts: list[BoardPart]
    policy: Any
    listed: list[dict[str, str]] = field(default_factory=list)
    changes: pd.DataFrame | None = None
    #: Printed in the report id (``CG-board-<analysis>-<hash>``).
    report_id_prefix: str = "CG-board"

    @property
    def analysis_id(self) -> int:
        """The analysis the report is registered under: the newest it shows."""
        ids = [int(a["id"]) for a in self.listed]
        if not ids:
            raise ValueError("the board report shows no stored analysis: run cuegap analyze")
        return max(ids)

    def render_context(self) -> tuple[dict[str, Any], str]:
        """Its template context and template (:func:`board_context`)."""
        return board_context(self), "board_report.html.j2"


def board_report_data(
    engine: Engine,
    designs: list[Any],
    *,
    chosen: dict[str, int] | None = None,
    policy: Any = None,
    progress: Any = None,
) -> BoardData:
    """Read every design's shown analysis for the board report (nothing is analysed).

    Parameters
    ----------
    designs : list of Design
        The designs the store holds, in column order.
    chosen : dict of str to int, optional
        The analysis to show per design name (default: each design's
        :meth:`~cuegap.designs.Design.report_analysis`).
    policy : Policy, optional
        Whose ``[board]`` rule decides the overall line (default: the built-in one).
    """
    from cuegap.designs import gate_applied
    from cuegap.models import DEFAULT_POLICY

    parts = []
    for design in designs:
        part = BoardPart(design.name, design.title, (chosen or {}).get(design.name))
        if part.analysis_id is None:
            try:
                part.analysis_id = design.report_analysis(engine)
            except ValueError as exc:
                part.missing = str(exc)
        if part.analysis_id is not None:
            if progress:
                progress(f"reading the {design.label or design.name} analysis")
            part.data = design.report_data(engine, part.analysis_id, progress)
            part.shown = design.shown_analysis(engine, part.analysis_id)
            stored = load_verdict_page(engine, part.shown)
            part.records = None if stored is None else gate_applied(stored)
            part.plan = load_plan(engine, design.name)  # "What it would take to decide"
        parts.append(part)
    ids = sorted({i for p in parts for i in (p.analysis_id, p.shown) if i is not None})
    with engine.connect() as conn:
        rows = conn.execute(
            select(Analysis.id, Analysis.kind, Analysis.content_digest,
                   Analysis.data_fingerprint, Analysis.created_at).where(Analysis.id.in_(ids))
        ).fetchall()  # fmt: skip
    listed = [{"id": str(r.id), "kind": _text(r.kind), "digest": _text(r.content_digest),
               "fingerprint": _text(r.data_fingerprint), "created": _text(r.created_at)}
              for r in sorted(rows, key=lambda r: r.id)]  # fmt: skip
    return BoardData(parts, policy or _stored_board_policy(engine, ids, DEFAULT_POLICY), listed)


def _stored_board_policy(engine: Engine, ids: list[int], default: Any) -> Any:
    """The ``[board]`` rule the shown analyses were run under (the built-in one for none).

    Raises
    ------
    ValueError
        When they were run under different ``[board]`` rules.
    """
    from cuegap.designs import policy_from_stored
    from cuegap.models import BOARD_KEYS

    keys = [k.name for k in BOARD_KEYS]
    with engine.connect() as conn:
        stored = conn.execute(select(Analysis.id, Analysis.settings).where(Analysis.id.in_(ids)))
        rules = {r.id: tuple(getattr(policy_from_stored(dict(r.settings or {})), k)
                             for k in keys) for r in stored}  # fmt: skip
    found = sorted(set(rules.values()))
    if len(found) > 1:
        seen = "; ".join(f"analysis {i}: " + ", ".join(f"{k} = {v}" for k, v in zip(keys, rule,
                         strict=True)) for i, rule in sorted(rules.items()))  # fmt: skip
        raise ValueError(f"the analyses shown were run under different [board] rules ({seen}): "
                         "give the board's policy with --policy FILE")  # fmt: skip
    return default.replace(**dict(zip(keys, found[0], strict=True))) if found else default


def _short(text: str, limit: int = REASON_CHARS) -> str:
    if len(text) <= limit:
        return text
    cut = text[:limit].rsplit(" ", 1)[0] if " " in text[:limit] else text[:limit]
    return cut.rstrip(" ,;:") + "…"


def _estimate(record: dict[str, Any] | None) -> str:
    """Estimate and interval, without the scale (the column header names it)."""
    if record is None or pd.isna(record.get("estimate")):
        return ""
    digits = 1 if record.get("scale") == "pp" else 3
    text = fmt_num(record["estimate"], digits, signed=True)
    if not (pd.isna(record.get("low")) or pd.isna(record.get("high"))):
        low, high = (fmt_num(record[k], digits, signed=True) for k in ("low", "high"))
        text += f" [{low}, {high}]"
    return text


def _scales(records: pd.DataFrame | None) -> str:
    """The scales of a design's estimates, for its column header."""
    if records is None or "scale" not in records:
        return ""
    return ", ".join(sorted({_text(s) for s in records["scale"] if _text(s)}))


def _badge(decision: str) -> str:
    return decision if decision in BADGES else "unknown"


def matrix(data: BoardData) -> dict[str, Any]:
    """The matrix of page 1: ``columns`` (one per design), ``rows`` (one per system with
    its cells and overall line), ``rule`` and the ``[board]`` policy as TOML."""
    from cuegap.models import board_cells, board_rule, overall_verdicts

    names = [p.design for p in data.parts]
    frames = [p.records for p in data.parts if p.records is not None and len(p.records)]
    records = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(
        columns=["system", "design", "decision"])  # fmt: skip
    cells = board_cells(records, names)
    flag_min, pass_share = data.policy.flag_min_designs, data.policy.pass_min_share
    overall = overall_verdicts(cells, names, flag_min_designs=flag_min,
                               pass_min_share=pass_share).set_index("system")  # fmt: skip
    rows = []
    for system, mine in cells.groupby("system", sort=True):
        shown = []
        for c in mine.itertuples():
            record = c.record if isinstance(c.record, dict) else None
            more = f"{c.same} of {c.records} records {c.decision}" if c.records > 1 else ""
            shown.append({"decision": _text(c.decision), "badge": _badge(str(c.decision)),
                          "estimate": _estimate(record),
                          "reason": _short(_text(record.get("reason"))) if record else "",
                          "more": more})  # fmt: skip
        o = overall.loc[system]
        rows.append({"system": _text(system), "cells": shown, "overall": _text(o["overall"]),
                     "badge": _badge(str(o["overall"])), "reason": _text(o["reason"])})  # fmt: skip
    columns = [{"design": _text(p.design), "title": _text(p.title),
                "analysis": "" if p.shown is None else str(p.shown), "missing": _text(p.missing),
                "scale": _scales(p.records)} for p in data.parts]  # fmt: skip
    counts: dict[str, int] = {}
    for r in rows:
        counts[r["overall"]] = counts.get(r["overall"], 0) + 1
    return {"columns": columns, "rows": rows, "counts": sorted(counts.items()),
            "rule": board_rule(flag_min, pass_share),
            "policy_toml": data.policy.to_toml(("board",))}  # fmt: skip


#: An element id, or a reference to one (``href="#x"``, SVG's ``url(#x)``).
_ID_OR_REF = re.compile(r'(\bid="|href="#|url\(#)([^"#()\s]+)')


def prefixed_ids(html: str, prefix: str) -> str:
    """``html`` with each element id it defines, and every reference to one, prefixed by
    ``prefix`` (so that two designs' sections, or two copies of one partial, can sit in one
    document with unique ids); references to ids it does not define are left alone."""
    own = {m.group(2) for m in _ID_OR_REF.finditer(html) if m.group(1) == 'id="'}

    def swap(m: re.Match[str]) -> str:
        return m.group(1) + prefix + m.group(2) if m.group(2) in own else m.group(0)

    return _ID_OR_REF.sub(swap, html)


def _sections(part: BoardPart, placeholders: dict[str, str],
              store: dict[str, Markup]) -> dict[str, Any]:  # fmt: skip
    """One design's findings and back matter, each partial rendered with its own report
    context (autoescaped there; kept as Markup here), every id prefixed by the design's
    name. The store-wide partials it names are rendered into ``store`` when not yet there,
    and left out of its own partials."""
    from cuegap.designs import get

    sections = get(part.design).report_sections(part.data)
    found, rows = part.plan
    ctx = {**sections.context, **placeholders, "verdict_page": verdict_page_context(part.data),
           "plan_section": plan_section(rows, design=part.design, plan_analysis=found),
           "store_sections_elsewhere": True}  # fmt: skip
    ctx.setdefault("changes", None)
    env = environment()
    prefix = f"{part.design}-"

    def render(names: tuple[str, ...]) -> Markup:
        html = "\n".join(env.get_template(n).render(ctx) for n in names)
        return Markup(prefixed_ids(html, prefix))

    for name in sections.store:
        if name not in store:
            store[name] = Markup(prefixed_ids(env.get_template(name).render(ctx), "store-"))
    changes = ("partials/_changes.html.j2",) if ctx["changes"] is not None else ()
    return {"design": _text(part.design), "title": _text(part.title),
            "findings": render(("partials/_verdict_page.html.j2", *changes,
                                *sections.findings)),
            "back": render(sections.back)}  # fmt: skip


def board_context(data: BoardData) -> dict[str, Any]:
    """The template context of ``board_report.html.j2``."""
    placeholders = {k.replace("-", "_"): _PLACEHOLDER.format(k) for k in _MARKERS}
    store: dict[str, Markup] = {}
    designs = [_sections(p, placeholders, store) for p in data.parts if p.data is not None]
    return {
        "matrix": matrix(data),
        "designs": designs,
        "store_sections": Markup("\n".join(store.values())),
        "listed": data.listed,
        "signoffs": [],  # a fresh render is unsigned: a signed copy fills the block in
        **placeholders,
    }
