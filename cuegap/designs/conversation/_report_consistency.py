"""The conversation report's cross-benchmark consistency section (seed 003 §5).

Seed 003 counts cross-dataset evidence only when it is significant on every dataset, so a
store with one benchmark can hold no cross-benchmark finding: the section says so, and
lists the conditions significant on that benchmark alone under that name. Each cell shows
one estimate, the unit mean the t-test tested, with its own sign, interval and p (never
the pooled contrast beside the unit mean's p). Every value is a plain string; names are
escaped by the template.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from cuegap.designs.conversation.stats._verdict import CONTRAST_NAMES, condition_label
from cuegap.reports import fmt_num
from cuegap.reports import fmt_p as _p
from cuegap.reports import fmt_text as _text

__all__ = ["consistency_context"]


def _test_cells(data: Any) -> dict[tuple, dict[str, str]]:
    """Per (contrast, system, demographic, reference, instantiation, benchmark): the tested
    unit mean with its own sign, (1 − α) t-interval and p (from ``conv_tests``, so a table
    stored before the intervals were kept reads the same)."""
    t = data.tables.get("conv_tests", pd.DataFrame())
    if t.empty:
        return {}
    alpha = float(data.settings.get("alpha", 0.05))
    if "low" in t.columns:
        low, high = t["low"], t["high"]
    else:
        df = t["df"].where(t["df"] > 0)
        half = stats.t.ppf(1 - alpha / 2, df) * t["sd"] / np.sqrt(t["n_units"].clip(lower=1))
        low, high = t["mean"] - half, t["mean"] + half
    cells = {}
    keys = t[["contrast", "system", "demographic", "reference", "instantiation", "benchmark"]]
    for key, m, lo, hi, p in zip(
        keys.itertuples(index=False, name=None), t["mean"], low, high, t["p"], strict=True
    ):
        cells[key] = {
            "mean": fmt_num(m, 3, signed=True),
            "ci": f"[{fmt_num(lo, 3, signed=True)}, {fmt_num(hi, 3, signed=True)}]",
            "p": f"p {_p(p)}",
        }
    return cells


def _few_df(data: Any) -> dict[str, Any] | None:
    """The t-tests over fewer units than the policy's ``min_unit_df`` allows, or None."""
    t = data.tables.get("conv_tests", pd.DataFrame())
    if t.empty or "df_ok" not in t.columns:
        return None
    few = t[~t["df_ok"].astype(bool) & (t["n_units"] >= 2)]
    if few.empty:
        return None
    policy = data.settings.get("policy", {})
    return {
        "n": len(few), "of": len(t),
        "min_df": int(policy.get("min_unit_df", few["min_df"].iloc[0])),
        "unit": _text(data.settings.get("unit", "persona")),
        "reasons": [_text(r) for r in sorted(set(few["note"].astype(str)))][:5],
    }  # fmt: skip


def consistency_context(data: Any) -> dict[str, Any]:
    """The report's cross-benchmark consistency section: the summary per contrast, the
    conditions significant with one sign on every benchmark (each cell the tested unit
    mean with its own sign, interval and p), the benchmark when the store holds only one
    (then no cross-benchmark finding is possible), and the t-tests over too few units.

    Parameters
    ----------
    data : ConvReportData
        The report data (``tables``, ``settings``, ``bayes``).

    Returns
    -------
    dict
        ``summary``, ``findings``, ``benchmarks``, ``bayes``, ``single`` (the one
        benchmark, or None), ``few_df`` (None, or ``n``, ``of``, ``min_df``, ``unit``,
        ``reasons``).
    """
    summary = [
        {"contrast": CONTRAST_NAMES.get(str(r.contrast), _text(r.contrast)),
         "instantiation": _text(r.instantiation), "conditions": int(r.conditions),
         "findings": int(r.findings), "negative": int(r.negative), "positive": int(r.positive)}
        for r in data.tables.get("conv_consistency_summary", pd.DataFrame()).itertuples()
    ]  # fmt: skip
    cons = data.tables.get("conv_consistency", pd.DataFrame())
    prefix = "mean_" if any(c.startswith("mean_") for c in cons.columns) else "estimate_"
    benches = sorted(c[len(prefix) :] for c in cons.columns if c.startswith(prefix))
    same = None
    if data.bayes:
        same = data.bayes["conv_bayes_consistency"].set_index(
            ["contrast", "system", "demographic", "reference", "instantiation"]
        )["p_same_sign"]
    cells = _test_cells(data)
    every = "all_significant" if "all_significant" in cons.columns else "finding"
    findings = []
    for r in cons[cons[every].astype(bool)].itertuples() if len(cons) else []:
        key = (r.contrast, r.system, r.demographic, r.reference, r.instantiation)
        findings.append({
            "contrast": CONTRAST_NAMES.get(str(r.contrast), _text(r.contrast)),
            "system": _text(r.system),
            "condition": condition_label(r.demographic, r.reference, r.instantiation),
            "direction": "−" if r.direction < 0 else "+",
            "cells": [cells.get((*key, b), {"mean": "–", "ci": "", "p": ""}) for b in benches],
            "same_sign": fmt_num(same.get(key, np.nan), 2) if same is not None else "",
        })  # fmt: skip
    rates = data.tables.get("conv_shift_rates", pd.DataFrame())
    held = sorted(map(str, set(rates["benchmark"]))) if len(rates) else benches
    return {"summary": summary, "findings": findings, "benchmarks": benches,
            "bayes": same is not None,
            "single": _text(held[0]) if len(held) == 1 else None,
            "few_df": _few_df(data)}  # fmt: skip
