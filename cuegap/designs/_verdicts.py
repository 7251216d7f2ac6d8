"""One verdict record for every design.

Each design keeps its own ``verdicts`` table (what its statistics decided, in its own
columns). When an analysis that has one is stored, the shared store also writes
``verdict_records``: one row per system in the same columns for every design, built by the
design's :meth:`~cuegap.designs.Design.verdict_records` from the stored table and the
analysis settings. The CLI's ``cuegap verdicts`` lists them across designs.

Columns (:data:`RECORD_COLUMNS`):

``system``, ``design``, ``kind``
    The audited system, the study design and the stored analysis kind.
``compared``
    What was compared, in the design's own words.
``estimate``, ``low``, ``high``, ``level``, ``scale``
    The estimate deciding the verdict, its interval and the interval's level (2p − 1 for
    the policy's probability p), on ``scale`` (pp, bias score, shift rate).
``method``, ``gate_passed``
    bootstrap, posterior or t-test; for a Bayesian fit whether the convergence gate passed
    (empty otherwise).
``decision``
    flagged, passed, inconclusive or format-sensitive.
``rule``, ``delta``, ``probability``, ``p_flag``, ``p_pass``
    The rule applied with its δ and required probability, and the probabilities computed.
``reason``
    The design's reason sentence, which states only what the rule tested.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

RECORD_COLUMNS = (
    "system", "design", "kind", "compared", "estimate", "low", "high", "level", "scale",
    "method", "gate_passed", "decision", "rule", "delta", "probability", "p_flag", "p_pass",
    "reason",
)  # fmt: skip
DECISIONS = ("flagged", "passed", "inconclusive", "format-sensitive")


def _column(frame: pd.DataFrame, name: str | None) -> pd.Series:
    if name is None or name not in frame:
        return pd.Series([None] * len(frame), index=frame.index, dtype=object)
    return frame[name]


def records_frame(
    verdicts: pd.DataFrame,
    *,
    design: str,
    kind: str,
    compared: str | pd.Series,
    estimate: str | None,
    low: str | None,
    high: str | None,
    scale: str,
    method: str | pd.Series,
    gate_passed: bool | pd.Series | None,
    rule: str | pd.Series,
    delta: float | None,
    probability: float | None,
    p_flag: str | None,
    p_pass: str | None,
    level: str | None = None,
) -> pd.DataFrame:
    """A design's verdicts table as verdict records (one row per verdict row).

    Parameters
    ----------
    verdicts : DataFrame
        The design's stored ``verdicts`` table, with ``system``, ``verdict`` and ``reason``
        (without the first two: no records). The other arguments name its columns (None:
        the design has none).
    compared, method, rule, gate_passed : str, bool or Series
        The same value for every row, or one per row.
    level : str, optional
        The column holding each interval's level; default 2p − 1 for ``probability`` p.

    Raises
    ------
    ValueError
        For a decision outside :data:`DECISIONS`.
    """
    if "system" not in verdicts or "verdict" not in verdicts:
        return pd.DataFrame(columns=list(RECORD_COLUMNS))
    unknown = sorted(set(verdicts["verdict"]) - set(DECISIONS))
    if unknown:
        raise ValueError(f"verdicts of {design}: unknown decision(s) {', '.join(unknown)}")
    levels: Any = None if probability is None else round(2 * probability - 1, 10)
    if level is not None:
        levels = pd.to_numeric(_column(verdicts, level), errors="coerce")
    out = pd.DataFrame(
        {
            "system": verdicts["system"].astype(str),
            "design": design,
            "kind": kind,
            "compared": compared,
            "estimate": pd.to_numeric(_column(verdicts, estimate), errors="coerce"),
            "low": pd.to_numeric(_column(verdicts, low), errors="coerce"),
            "high": pd.to_numeric(_column(verdicts, high), errors="coerce"),
            "level": levels,
            "scale": scale,
            "method": method,
            "gate_passed": gate_passed,
            "decision": verdicts["verdict"].astype(str),
            "rule": rule,
            "delta": None if delta is None else round(delta, 12),
            "probability": None if probability is None else round(probability, 12),
            "p_flag": pd.to_numeric(_column(verdicts, p_flag), errors="coerce"),
            "p_pass": pd.to_numeric(_column(verdicts, p_pass), errors="coerce"),
            "reason": _column(verdicts, "reason").fillna("").astype(str),
        },
        index=verdicts.index,
    )
    return out.reset_index(drop=True)[list(RECORD_COLUMNS)]


def gate_applied(records: pd.DataFrame) -> pd.DataFrame:
    """The records as every reader shows them: a verdict of a Bayesian fit that missed its
    convergence gate (``gate_passed`` False) is *inconclusive*, whatever else it says."""
    missed = records["gate_passed"].map(lambda g: g is not None and not pd.isna(g) and not g)
    if not missed.any():
        return records
    out = records.copy()
    out.loc[missed.astype(bool), "decision"] = "inconclusive"
    return out


def two_sided_rule(delta: float, probability: float, estimand: str, unit: str = "") -> str:
    """The flag / pass / inconclusive rule in words (``unit`` follows δ, e.g. " pp")."""
    d, p = f"{delta:g}{unit}", f"{probability:g}"
    return (
        f"flagged when P({estimand} > {d}) >= {p}; passed when P(|{estimand}| < {d}) >= {p}; "
        "otherwise inconclusive"
    )


def policy_of(settings: Mapping[str, Any]) -> dict[str, Any]:
    """The stored policy of an analysis's settings, with the defaults filled in."""
    from cuegap.models import Policy

    stored = dict(settings.get("policy") or {})
    return Policy.from_dict(stored).to_dict()


def column_or(frame: Any, name: str, default: str) -> Any:
    """A column of ``frame`` as text, or ``default`` when the frame has no such column.

    Parameters
    ----------
    frame : pandas.DataFrame
        A design's verdict table.
    name : str
        The column wanted.
    default : str
        What every row gets when the column is missing.
    """
    return frame[name].astype(str) if name in frame else default
