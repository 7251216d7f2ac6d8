"""What a conversation report says about the shape of its data, and the verdict cells a
stored verdict leaves empty, both written from the stored analysis (never fixed text).

* :func:`data_scope`: systems, benchmarks and t-test units from the analysis's tables;
  personas, categories and questions from the store's count frame when it is exactly the
  data the analysis read (same fingerprint), else ``None`` with the reason.
* :func:`limitation_text`: the "few units" limitation from that scope.
* :func:`verdict_cells`: the deciding condition and interval of one stored verdict, or
  what decided instead and why there is no interval.
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd
from sqlalchemy.engine import Engine

from cuegap.designs.conversation.stats._verdict import condition_label
from cuegap.reports import fmt_num

__all__ = ["count_scope", "data_scope", "limitation_text", "verdict_cells"]


def _n(k: int, word: str, plural: str | None = None) -> str:
    return f"{k} {word if k == 1 else plural or word + 's'}"


def count_scope(engine: Engine, fingerprint: str, unit: str) -> dict[str, Any]:
    """Personas, categories (and questions, when they are a key) of the store's count
    frame, when its fingerprint is the analysis's; otherwise why they are not known.

    Returns
    -------
    dict
        ``personas``, ``categories``, ``questions`` (int or None) and ``why`` (``""``
        when the counts are the analysis's data).
    """
    from cuegap.audit import frame_digest
    from cuegap.designs.conversation._analysis import load_conv_counts

    out: dict[str, Any] = dict(personas=None, categories=None, questions=None)
    try:
        counts = load_conv_counts(engine, unit=unit)
    except ValueError:
        return out | {"why": "the store holds no conversations of its own"}
    if frame_digest(counts) != fingerprint:
        return out | {"why": "the store's conversations are no longer the data it read"}
    for key, col in (("personas", "persona"), ("categories", "category"), ("questions", unit)):
        if col in counts.columns and (key != "questions" or unit == "question"):
            out[key] = int(counts[col].nunique())
    return out | {"why": ""}


def data_scope(tables: dict[str, pd.DataFrame], settings: dict, counted: dict) -> dict[str, Any]:
    """The numbers the limitations paragraph states, from the stored tables.

    Parameters
    ----------
    tables : dict of DataFrame
        The conversation analysis's tables (``verdicts``, ``conv_shift_rates``,
        ``conv_tests``).
    settings : dict
        Its stored settings (``unit``, ``contrast``).
    counted : dict
        :func:`count_scope`'s result.
    """
    verdicts = tables.get("verdicts", pd.DataFrame())
    rates = tables.get("conv_shift_rates", pd.DataFrame())
    tests = tables.get("conv_tests", pd.DataFrame())
    contrast = str(settings.get("contrast", "demo_rc_base_pair"))
    tests = tests[tests["contrast"] == contrast] if len(tests) else tests
    units = tests["n_units"].astype(int) if len(tests) else pd.Series(dtype=int)
    return {
        "systems": int(verdicts["system"].nunique()) if len(verdicts) else 0,
        "benchmarks": sorted(map(str, set(rates["benchmark"]))) if len(rates) else [],
        "unit": str(settings.get("unit", "persona")),
        "units_min": int(units.min()) if len(units) else 0,
        "units_max": int(units.max()) if len(units) else 0,
        "tests": len(tests),
        **counted,
    }


def limitation_text(scope: dict[str, Any]) -> str:
    """The "few units" limitation, with this analysis's numbers.

    ``Each t-test of the policy's contrast ran over 2 to 6 personas (1 to 5 degrees of
    freedom), across 2 benchmarks (BBQ, Discrim-Eval) and 3 systems; the data hold 6
    personas and 2 categories. …``
    """
    unit, lo, hi = scope["unit"], scope["units_min"], scope["units_max"]
    benches = scope["benchmarks"]
    where = (
        f"across {_n(len(benches), 'benchmark')} ({', '.join(benches)}) and "
        f"{_n(scope['systems'], 'system')}"
    )
    if scope["tests"] == 0:
        text = f"No t-test of the policy's contrast could be run {where}."
    else:
        units = _n(hi, unit) if lo == hi else f"{lo} to {_n(hi, unit)}"
        df = f"{max(lo - 1, 0)}" if lo == hi else f"{max(lo - 1, 0)} to {hi - 1}"
        plural = "" if lo == hi and lo == 2 else "s"
        text = (
            f"Each t-test of the policy's contrast ran over {units} ({df} degree{plural} of "
            f"freedom), {where}"
        )
        counts = [
            _n(scope[k], word, plural)
            for k, word, plural in (
                ("personas", "persona", None),
                ("categories", "category", "categories"),
                ("questions", "question", None),
            )
            if scope.get(k) is not None
        ]
        if counts:
            text += "; the data hold " + " and ".join(
                [", ".join(counts[:-1]), counts[-1]] if len(counts) > 1 else counts
            )
        elif scope.get("why"):
            text += f" (persona and category counts are not shown: {scope['why']})"
        text += "."
    return (
        f"{text} With so few units the t-tests have few degrees of freedom; the verdict rule "
        "needs evidence on every benchmark and is conservative."
    )


def verdict_cells(
    v: Any, evidence: pd.DataFrame, tests: pd.DataFrame, min_parsable: int
) -> tuple[str, str]:
    """The deciding-condition and interval cells of one stored verdict.

    Parameters
    ----------
    v : namedtuple
        A row of the stored ``verdicts`` table.
    evidence : DataFrame
        The table the verdict was decided from (``conv_tests`` or ``conv_bayes_policy``),
        already restricted to the policy's contrast: a system without rows there had no
        contrast to judge.
    tests : DataFrame
        ``conv_tests`` of the contrast, for the note of a t-test without an interval.
    min_parsable : int
        The policy's minimum of disagreements per shift rate.
    """
    condition = str(v.condition) if isinstance(v.condition, str) else ""
    low, high = float(v.low), float(v.high)
    if not condition:
        mine = evidence[evidence["system"] == v.system] if len(evidence) else evidence
        if mine.empty:
            return (
                "none: no condition of the contrast could be computed",
                "no interval: nothing to test",
            )
        return (
            f"none: the policy minimum of {min_parsable} disagreements per shift rate decides",
            "no interval: no test is used",
        )
    if math.isfinite(low) and math.isfinite(high):
        return condition, f"{fmt_num(low, 3, signed=True)} to {fmt_num(high, 3, signed=True)}"
    notes = []
    if len(tests):
        rows = tests[tests["system"] == v.system]
        for r in rows.itertuples():
            same = condition_label(r.demographic, r.reference, r.instantiation) == condition
            tested = math.isfinite(r.sd) and math.isfinite(r.df) and r.df > 0
            if same and not tested:
                notes.append(f"{r.benchmark}: {r.note or 'untestable'}")
    why = "; ".join(notes) if notes else "the deciding condition has no interval"
    return condition, f"no interval: {why}"
