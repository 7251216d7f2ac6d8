"""Count tables shaped the same on every backend: row order and column types."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd


def _in_key_order(df: pd.DataFrame, keys: Sequence[str]) -> pd.DataFrame:
    """Rows sorted by their group keys, NULLs first, text by code point (as SQLite groups).

    GROUP BY promises no order, and PostgreSQL's hash aggregation returns groups in any
    order (and sorts text by its collation): sorting here makes every backend return the
    same table, row for row.
    """
    if df.empty:
        return df.reset_index(drop=True)
    return df.sort_values(list(keys), na_position="first", kind="stable").reset_index(drop=True)


def _types(df: pd.DataFrame, *, ints: Sequence[str], bools: Sequence[str]) -> pd.DataFrame:
    for col in ints:
        df[col] = df[col].astype("int64")
    for col in bools:
        df[col] = df[col].astype(bool)
    return df
