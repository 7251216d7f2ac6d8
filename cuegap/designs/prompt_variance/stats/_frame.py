"""Shared input checks and cell means for the prompt-variance statistics.

Every prompt-variance function takes a tidy score table: one row per run with key columns
(``by``, by default ``system``, ``category``, ``metric``), the caller's factor columns
(e.g. ``choice_format``, ``field_order``), a ``replicate`` column and a numeric value
column (``score`` by default). A *combination* is one tuple of factor levels.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

#: Default keys of one analysed group: one ANOVA, one extremes row, one spread.
BY = ("system", "category", "metric")
#: Separator of factor levels in a combination label, e.g. ``letter_colon/answer_first``.
SEP = "/"


def as_names(value: str | Sequence[str], name: str) -> list[str]:
    """A list of column names from one name or a sequence of names."""
    if isinstance(value, str):
        return [value]
    try:
        names = list(value)
    except TypeError:
        raise TypeError(f"{name} must be a column name or a sequence of column names") from None
    bad = [v for v in names if not isinstance(v, str)]
    if bad:
        raise TypeError(f"{name} must hold column names (str), but got {bad[0]!r}")
    return names


def check_table(
    df: pd.DataFrame,
    *,
    by: Sequence[str],
    factors: Sequence[str],
    value: str,
    what: str,
    replicate: str | None = "replicate",
) -> pd.DataFrame:
    """Validate a score table; return a copy with a float value column.

    Raises
    ------
    TypeError
        If ``df`` is not a DataFrame.
    ValueError
        On no factors, a missing column, a factor that is also a key, missing key or
        factor labels, a non-numeric value, or two rows for the same run.
    """
    if not isinstance(df, pd.DataFrame):
        raise TypeError(f"{what} must be a pandas DataFrame, but got {type(df).__name__}")
    if not factors:
        raise ValueError(f"{what}: factors must name at least one factor column; got none")
    overlap = sorted(set(by) & set(factors))
    if overlap:
        raise ValueError(f"{what}: {', '.join(overlap)} cannot be both a key and a factor")
    needed = [*by, *factors, *([replicate] if replicate else []), value]
    missing = [c for c in needed if c not in df.columns]
    if missing:
        got = ", ".join(map(str, df.columns))
        raise ValueError(f"{what} needs columns {', '.join(missing)}; got {got}")
    out = df.copy()
    for col in (*by, *factors):
        bad = out[col].isna()
        if bad.any():
            idx = bad[bad].index[0]
            raise ValueError(f"{what}: row {idx!r}, column {col!r} is missing; need a label")
    try:
        out[value] = pd.to_numeric(out[value], errors="raise").astype(float)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{what}: column {value!r} must be numeric: {exc}") from exc
    if replicate:
        dup = out.duplicated([*by, *factors, replicate], keep=False)
        if dup.any():
            idx = dup[dup].index[0]
            raise ValueError(
                f"{what}: row {idx!r} repeats a run (same keys, factors and {replicate!r}); "
                "each run must appear once"
            )
    return out


def combination_labels(df: pd.DataFrame, factors: Sequence[str]) -> pd.Series:
    """One label per row joining its factor levels with ``/``."""
    parts = [df[f].astype(str) for f in factors]
    label = parts[0]
    for p in parts[1:]:
        label = label + SEP + p
    return label.rename("combination")


def combination_means(
    df: pd.DataFrame, *, by: Sequence[str], factors: Sequence[str], value: str
) -> pd.DataFrame:
    """Replicate means per (keys, combination): columns ``*by``, ``*factors``,
    ``combination``, ``mean``, ``n`` (non-missing replicates). Cells with no value are
    dropped."""
    ok = df[df[value].notna()]
    g = ok.groupby([*by, *factors], sort=True, observed=True, dropna=False)[value]
    out = g.agg(mean="mean", n="count").reset_index()
    out.insert(len(by) + len(factors), "combination", combination_labels(out, factors))
    return out
