"""Shared labels and input checks for the conversation statistics (seed 003, §4-5).

The count frame every conversation function takes has one row per cell: the key columns
``system``, ``benchmark``, ``category``, ``demographics``, ``persona``, ``instantiation``
and ``reveal`` (plus an optional ``question`` or other unit column) and four counts
``iden_disagree``, ``iden_shift``, ``base_disagree``, ``base_shift``. See
:mod:`cuegap.designs.conversation.stats` for the contract.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

#: Key columns of one configuration cell of the count frame.
CELL = (
    "system",
    "benchmark",
    "category",
    "demographics",
    "persona",
    "instantiation",
    "reveal",
)
#: The four transition counts of a cell.
COUNTS = ("iden_disagree", "iden_shift", "base_disagree", "base_shift")
#: The label of a null attribute (the paper's ∅) in ``demographics`` and ``persona``.
NULL = "none"
#: Instantiation labels: MAC-Fairness ``if_as_human`` true / false.
HUMAN, AI = "human", "ai"
#: Reveal labels: MAC-Fairness ``identity_reveal_config`` all true / all false
#: (stair-lab/mac-fairness ``script/consolidate_2agent.py``, ``extract_identity``).
REVEALED, ANONYMOUS = "revealed", "anonymous"
#: (disadvantaged, advantaged) pairs of seed 003 §5.1.2 and §5.2.1, in MAC-Fairness's
#: lower-case demographic labels (``config/colm_exp_configs/*2agent*.yaml``).
DEFAULT_PAIRS = (("black", "white"), ("older", "young"), ("female", "male"))
#: Unit columns a t-test can run over.
UNITS = ("persona", "question", "category")
#: Label in ``reference`` / ``instantiation`` where a contrast has no such argument.
NA = "-"


def as_list(value: str | Sequence[str] | None, name: str) -> list[str]:
    """A list of column names from ``None``, one name or a sequence of names."""
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    names = list(value)
    bad = [v for v in names if not isinstance(v, str)]
    if bad:
        raise TypeError(f"{name} must hold column names (str), but got {bad[0]!r}")
    return names


def null_to_label(s: pd.Series) -> pd.Series:
    """Missing values (None, NaN) of an attribute column become :data:`NULL`."""
    if isinstance(s.dtype, pd.CategoricalDtype):
        s = s.astype(object)
    return s.where(s.notna(), NULL).astype(str)


def check_counts(
    counts: pd.DataFrame, *, keys: Sequence[str], what: str = "counts"
) -> pd.DataFrame:
    """Validate a count frame; return a copy with int64 counts and string keys.

    Missing ``demographics`` / ``persona`` labels are read as the null level
    :data:`NULL`; any other missing key is an error.

    Raises
    ------
    TypeError
        If ``counts`` is not a DataFrame.
    ValueError
        On a missing column, a missing key label, a non-integer or negative count, or
        more shifts than disagreements.
    """
    if not isinstance(counts, pd.DataFrame):
        raise TypeError(f"{what} must be a pandas DataFrame, but got {type(counts).__name__}")
    missing = [c for c in (*keys, *COUNTS) if c not in counts.columns]
    if missing:
        got = ", ".join(map(str, counts.columns))
        raise ValueError(f"{what} needs columns {', '.join(missing)}; got {got}")
    out = counts.loc[:, [*keys, *COUNTS]].copy()
    for col in keys:
        if col in ("demographics", "persona"):
            out[col] = null_to_label(out[col])
            continue
        bad = out[col].isna()
        if bad.any():
            idx = bad[bad].index[0]
            raise ValueError(f"{what}: row {idx!r}, column {col!r} is missing; need a label")
        out[col] = out[col].astype(str)
    for col in COUNTS:
        vals = pd.to_numeric(out[col], errors="coerce")
        bad = vals.isna() | (vals < 0) | (vals != np.floor(vals))
        if bad.any():
            idx = bad[bad].index[0]
            raise ValueError(
                f"{what}: column {col!r} must hold non-negative integers, "
                f"but row {idx!r} has {out.at[idx, col]!r}"
            )
        out[col] = vals.astype("int64")
    for agent in ("iden", "base"):
        over = out[f"{agent}_shift"] > out[f"{agent}_disagree"]
        if over.any():
            idx = over[over].index[0]
            raise ValueError(
                f"{what}: row {idx!r} has {agent}_shift {out.at[idx, f'{agent}_shift']} > "
                f"{agent}_disagree {out.at[idx, f'{agent}_disagree']}; a shift needs a "
                "disagreement"
            )
    return out


def check_unit(unit: str | None, counts: pd.DataFrame) -> None:
    """Raise ValueError unless ``unit`` is None or a column of ``counts``."""
    if unit is None:
        return
    if not isinstance(unit, str):
        raise TypeError(f"unit must be a column name or None, but got {type(unit).__name__}")
    if unit not in counts.columns:
        raise ValueError(
            f"unit {unit!r} is not a column of counts; use one of {', '.join(UNITS)} "
            "(question needs a 'question' column) or None"
        )
