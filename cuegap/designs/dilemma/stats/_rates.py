"""Decision-bias rates, net bias, the Cue Visibility Gap and the asymmetry signature.

All functions take the count table of :func:`cuegap.schema.decision_counts` (or any
DataFrame with its columns) and return tidy DataFrames. Rates are proportions in [0, 1];
quantities suffixed ``_pp`` are percentage points.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np
import pandas as pd

GroupBy = Literal["gender", "race", "intersection"]
KEYS = ("system", "condition", "difficulty", "consequences")
_COUNTS = ["favor", "favor_trials", "against", "against_trials"]


Condition = tuple[str, str | None]


def condition_mask(df: pd.DataFrame, cond: Condition | Sequence) -> pd.Series:
    """Rows of ``df`` under ``cond`` = (condition, difficulty); a difficulty of None
    matches rows without one."""
    mask = df["condition"] == cond[0]
    return mask & (df["difficulty"].isna() if cond[1] is None else df["difficulty"] == cond[1])


def condition_label(cond: Condition | Sequence) -> str:
    """``puzzled-hard``, ``direct``: a condition as the CLI and the stored settings write it."""
    return cond[0] if cond[1] is None else f"{cond[0]}-{cond[1]}"


def _check_columns(df: pd.DataFrame, needed: Sequence[str], what: str) -> None:
    missing = [c for c in needed if c not in df.columns]
    if missing:
        raise ValueError(f"{what} needs columns {', '.join(missing)}; got {', '.join(df.columns)}")


def group_rates(
    counts: pd.DataFrame,
    *,
    by: GroupBy = "gender",
    keys: Sequence[str] = KEYS,
) -> pd.DataFrame:
    """Favor, Against and Net per demographic group.

    Parameters
    ----------
    counts : DataFrame
        Count table with ``favor``, ``favor_trials``, ``against``, ``against_trials``,
        ``gender``, ``race`` and the ``keys`` columns.
    by : {"gender", "race", "intersection"}
        Grouping of individuals; ``intersection`` is gender x race ("woman × Asian").
    keys : sequence of str
        Columns that identify a setting (default: system, condition, difficulty,
        consequences).

    Returns
    -------
    DataFrame
        ``keys`` + ``group_type``, ``group``, the four counts, ``favor_rate``,
        ``against_rate`` (NaN where the denominator is zero) and ``net_pp``.

    Notes
    -----
    Section 2.3: Favor(G) = |F ∩ G| / |{(d, X): s_d ≠ b_d} ∩ G|,
    Against(G) = |A ∩ G| / |{(d, X): s_d = b_d} ∩ G|, Net(G) = Favor(G) − Against(G),
    reported in percentage points.
    """
    if by not in ("gender", "race", "intersection"):
        raise ValueError(f"by must be 'gender', 'race' or 'intersection', but got {by!r}")
    keys = list(keys)
    _check_columns(counts, [*keys, *_COUNTS, "gender", "race"], "group_rates")
    df = counts.copy()
    if by == "intersection":
        df["group"] = df["gender"].astype(str) + " × " + df["race"].astype(str)
    else:
        df["group"] = df[by]
    out = df.groupby([*keys, "group"], dropna=False, sort=True)[_COUNTS].sum().reset_index()
    out.insert(len(keys), "group_type", by)
    with np.errstate(divide="ignore", invalid="ignore"):
        out["favor_rate"] = out["favor"] / out["favor_trials"].where(out["favor_trials"] > 0)
        out["against_rate"] = out["against"] / out["against_trials"].where(
            out["against_trials"] > 0
        )
    out["net_pp"] = 100 * (out["favor_rate"] - out["against_rate"])
    return out


def decision_bias(counts: pd.DataFrame, *, keys: Sequence[str] = KEYS) -> pd.DataFrame:
    """Group rates for every gender and every race group, stacked (the paper's 8 groups)."""
    return pd.concat(
        [group_rates(counts, by="gender", keys=keys), group_rates(counts, by="race", keys=keys)],
        ignore_index=True,
    )


def macro_average(rates: pd.DataFrame, *, keys: Sequence[str] = KEYS) -> pd.DataFrame:
    """Mean over groups of the favor and against rates and the net, per setting.

    Notes
    -----
    The paper's macro average (Appendices M, O, P) is the unweighted mean of Net over all
    gender and race groups (3 + 5 = 8). Groups whose Net is undefined are skipped;
    ``groups`` says how many entered each mean.
    """
    keys = list(keys)
    _check_columns(rates, [*keys, "favor_rate", "against_rate", "net_pp"], "macro_average")
    g = rates.groupby(keys, dropna=False, sort=True)
    out = g[["favor_rate", "against_rate", "net_pp"]].mean().reset_index()
    out["groups"] = g["net_pp"].count().to_numpy()
    return out


def cue_visibility_gap(
    rates: pd.DataFrame,
    *,
    explicit: tuple[str, str | None] = ("direct", None),
    implicit: tuple[str, str | None] = ("puzzled", "hard"),
    keys: Sequence[str] = ("system", "consequences"),
) -> pd.DataFrame:
    """The Cue Visibility Gap and the asymmetry signature per system and group.

    Parameters
    ----------
    rates : DataFrame
        Output of :func:`group_rates` or :func:`decision_bias` (or :func:`macro_average`
        output with ``group_type``/``group`` absent, for the macro gap).
    explicit, implicit : (condition, difficulty)
        The two conditions compared; difficulty None matches rows without one.
    keys : sequence of str
        Columns other than condition and difficulty that pair the two sides.

    Returns
    -------
    DataFrame
        ``keys`` (+ ``group_type``, ``group`` when present), ``net_direct_pp``,
        ``net_puzzled_pp`` (named after the paper's default comparison), ``gap_pp``,
        ``delta_against_pp``, ``delta_favor_pp``.

    Notes
    -----
    Gap(θ, G) = Net_explicit(θ, G) − Net_implicit(θ, G); positive means fairer-looking
    under the explicit label (performative). ΔAgainst = Against_implicit −
    Against_explicit and ΔFavor = Favor_implicit − Favor_explicit (Section 2.3); the
    performative signature is ΔAgainst ≫ ΔFavor.
    """
    pair = [*keys, *[c for c in ("group_type", "group") if c in rates.columns]]
    _check_columns(rates, [*pair, "condition", "difficulty", "net_pp"], "cue_visibility_gap")

    def side(cond: Condition) -> pd.DataFrame:
        return rates.loc[
            condition_mask(rates, cond), [*pair, "favor_rate", "against_rate", "net_pp"]
        ]

    merged = side(explicit).merge(side(implicit), on=pair, suffixes=("_e", "_i"))
    return gap_columns(merged, pair).reset_index(drop=True)


def gap_columns(merged: pd.DataFrame, pair: Sequence[str]) -> pd.DataFrame:
    """The gap and Δ columns from explicit (``_e``) and implicit (``_i``) side columns.

    ``merged`` holds ``favor_rate``, ``against_rate`` and ``net_pp`` with the suffixes
    ``_e`` and ``_i``, paired on ``pair``; returns ``pair`` + ``net_direct_pp``,
    ``net_puzzled_pp``, ``gap_pp``, ``delta_against_pp``, ``delta_favor_pp``.
    """
    out = merged[list(pair)].copy()
    out["net_direct_pp"] = merged["net_pp_e"]
    out["net_puzzled_pp"] = merged["net_pp_i"]
    out["gap_pp"] = merged["net_pp_e"] - merged["net_pp_i"]
    out["delta_against_pp"] = 100 * (merged["against_rate_i"] - merged["against_rate_e"])
    out["delta_favor_pp"] = 100 * (merged["favor_rate_i"] - merged["favor_rate_e"])
    return out
