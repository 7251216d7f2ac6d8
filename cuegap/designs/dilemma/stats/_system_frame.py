"""Checks shared by the system-level statistics (one row per audited system)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd


def _require(df: pd.DataFrame, needed: Sequence[str], what: str) -> None:
    if not isinstance(df, pd.DataFrame):
        raise TypeError(f"{what} must be a pandas DataFrame, but got {type(df).__name__}")
    missing = [c for c in needed if c not in df.columns]
    if missing:
        raise ValueError(
            f"{what} needs columns {', '.join(missing)}; got {', '.join(map(str, df.columns))}"
        )


def _unique_systems(df: pd.DataFrame, what: str) -> None:
    dup = df["system"].duplicated()
    if dup.any():
        raise ValueError(
            f"{what} must have one row per system; repeated: "
            f"{', '.join(map(str, pd.unique(df.loc[dup, 'system'])))}"
        )


def _numeric(series: pd.Series, name: str, what: str) -> np.ndarray:
    try:
        values = pd.to_numeric(series, errors="raise").to_numpy(dtype=float, na_value=np.nan)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"column {name!r} of {what} must be numeric: {exc}") from exc
    if np.isnan(values).any():
        raise ValueError(f"column {name!r} of {what} has missing values")
    return values
