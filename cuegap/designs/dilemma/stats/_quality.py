"""Data quality and auxiliary rates: abstention, exclusion, puzzle recovery, status bias.

Each function takes one of the count tables of :mod:`cuegap.schema` (or any DataFrame with
its columns) and returns a tidy DataFrame; rates are proportions in [0, 1] unless their
name ends in ``_pct``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from cuegap.designs.dilemma.stats._rates import GroupBy


def _rate(num: pd.Series, den: pd.Series) -> pd.Series:
    with np.errstate(divide="ignore", invalid="ignore"):
        return num / den.where(den > 0)


def abstention_rates(abstention: pd.DataFrame) -> pd.DataFrame:
    """Abstention and parse-failure rates per system, condition, difficulty and probe.

    Parameters
    ----------
    abstention : DataFrame
        Output of :func:`cuegap.schema.abstention_counts`.

    Returns
    -------
    DataFrame
        The input columns plus ``abstention_rate`` (abstained / responses) and
        ``parse_failure_rate`` ((invalid + empty) / responses).

    Notes
    -----
    Appendix C, Table 8 of the seed paper reports the abstention rate of the Could-be and
    What-if probes per condition; answers outside the valid set are abstentions.
    """
    out = abstention.copy()
    out["abstention_rate"] = _rate(out["abstained"], out["responses"])
    out["parse_failure_rate"] = _rate(out["invalid"] + out["empty"], out["responses"])
    return out


def exclusions(
    abstention: pd.DataFrame,
    *,
    max_abstention: float,
    probe: str = "what_if",
    conditions: Sequence[tuple[str, str | None]] = (("direct", None), ("puzzled", "hard")),
    consequences: bool | None = True,
) -> pd.DataFrame:
    """Which systems the abstention policy leaves out of the bias tables, and why.

    Parameters
    ----------
    abstention : DataFrame
        Output of :func:`cuegap.schema.abstention_counts` (or :func:`abstention_rates`).
    max_abstention : float
        Largest abstention rate (0-1) of ``probe`` tolerated in any of ``conditions``.
    probe : str
        The probe whose answers the bias statistics use (What-if).
    conditions : sequence of (condition, difficulty)
        The conditions compared by the analysis.
    consequences : bool or None
        Restrict to one consequences setting; None pools both.

    Returns
    -------
    DataFrame
        One row per system: ``system``, ``worst_condition``, ``abstention_rate`` (the
        largest over ``conditions``), ``excluded`` (bool) and ``reason`` (a sentence, empty
        when kept).

    Notes
    -----
    The seed paper leaves out Command-R7B at 91.3% Direct What-if abstention (Table 3's
    caption); the threshold here is a policy setting, never hard-coded.
    """
    if not 0 <= max_abstention <= 1:
        raise ValueError(f"max_abstention must be in [0, 1], but got {max_abstention}")
    df = abstention[abstention["probe"] == probe]
    if consequences is not None:
        df = df[df["consequences"] == consequences]
    rows = []
    for system, sdf in df.groupby("system", sort=True):
        worst, worst_rate = None, np.nan
        for cond, diff in conditions:
            m = sdf["condition"] == cond
            m &= sdf["difficulty"].isna() if diff is None else sdf["difficulty"] == diff
            n = int(sdf.loc[m, "responses"].sum())
            if n == 0:
                continue
            rate = sdf.loc[m, "abstained"].sum() / n
            if worst is None or rate > worst_rate:
                worst, worst_rate = cond if diff is None else f"{cond}-{diff}", rate
        excluded = bool(worst is not None and worst_rate > max_abstention)
        reason = (
            f"{100 * worst_rate:.1f}% {probe.replace('_', '-')} abstention under {worst} "
            f"exceeds the policy maximum of {100 * max_abstention:.1f}%"
            if excluded
            else ""
        )
        rows.append((system, worst, worst_rate, excluded, reason))
    return pd.DataFrame(
        rows, columns=["system", "worst_condition", "abstention_rate", "excluded", "reason"]
    )


def recovery_accuracy(
    recovery: pd.DataFrame,
    *,
    keys: Sequence[str] = ("system", "condition", "difficulty", "consequences"),
) -> pd.DataFrame:
    """Puzzle-recovery accuracy and parsability per setting (Tables 5 and 6).

    Parameters
    ----------
    recovery : DataFrame
        Output of :func:`cuegap.schema.recovery_counts`.
    keys : sequence of str
        Columns to group by; the other count rows are summed.

    Returns
    -------
    DataFrame
        ``keys`` + ``responses``, ``slots``, ``parsable``, ``correct``, ``incorrect``
        (parsable but wrong), ``accuracy`` (correct / slots) and ``parsability``
        (parsable / slots).
    """
    keys = list(keys)
    cols = ["responses", "slots", "parsable", "correct"]
    out = recovery.groupby(keys, dropna=False, sort=True)[cols].sum().reset_index()
    out["incorrect"] = out["parsable"] - out["correct"]
    out["accuracy"] = _rate(out["correct"], out["slots"])
    out["parsability"] = _rate(out["parsable"], out["slots"])
    return out


def status_bias(
    status: pd.DataFrame,
    *,
    by: GroupBy = "gender",
    keys: Sequence[str] = ("system", "condition", "difficulty", "consequences"),
) -> pd.DataFrame:
    """How often each group is identified as the described person, by that person's status.

    Parameters
    ----------
    status : DataFrame
        Output of :func:`cuegap.schema.status_counts`.
    by : {"gender", "race", "intersection"}
        Grouping of individuals.
    keys : sequence of str
        Columns that identify a setting.

    Returns
    -------
    DataFrame
        ``keys`` + ``person_status``, ``group_type``, ``group``, ``yes``, ``trials`` and
        ``rate`` (yes / trials).

    Notes
    -----
    Appendix K, Table 24 of the seed paper: a higher rate under *bad* status means the
    system attaches that group to the negatively framed role more often.
    """
    if by not in ("gender", "race", "intersection"):
        raise ValueError(f"by must be 'gender', 'race' or 'intersection', but got {by!r}")
    keys = [*keys, "person_status"]
    df = status.copy()
    df["group"] = (
        df["gender"].astype(str) + " × " + df["race"].astype(str)
        if by == "intersection"
        else df[by]
    )
    out = df.groupby([*keys, "group"], dropna=False, sort=True)[["yes", "trials"]].sum()
    out = out.reset_index()
    out.insert(len(keys), "group_type", by)
    out["rate"] = _rate(out["yes"], out["trials"])
    return out
