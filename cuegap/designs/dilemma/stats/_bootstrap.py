"""Bootstrap standard deviations by resampling decision items (dilemmas), vectorised.

The seed paper's ± values are bootstrap SDs of Favor, Against and Net per (system,
condition, group), with dilemmas as the resampling unit. Every replicate here is a vector
of multinomial resampling weights over one system's dilemmas; the weighted count table of
a replicate is one matrix product, so a thousand replicates cost a handful of BLAS calls
instead of a thousand pandas group-bys.

References
----------
Seed paper, "Moral Safety in LLMs: Exposing Performative Compliance with Puzzled Cues":
Section 2.3 (Favor, Against, Net, the Cue Visibility Gap and ΔAgainst/ΔFavor), Tables 3-4
(± = bootstrap SD), footnote 4 of Section 4.1 (bootstrap SD of Net by resampling decision
items, per system and group).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from cuegap.designs.dilemma.stats._rates import (
    KEYS,
    condition_mask,
    gap_columns,
    group_rates,
    macro_average,
)
from cuegap.models import summarise as _summarise
from cuegap.models import system_rng as _system_rng

__all__ = ["bootstrap"]

_COUNTS = ["favor", "favor_trials", "against", "against_trials"]
_GROUP_TYPES = ("gender", "race", "intersection")
_SIDE_KEYS = ("condition", "difficulty")


def _group_labels(counts: pd.DataFrame, by: str) -> pd.Series:
    """The group label of every count row, exactly as :func:`group_rates` builds it."""
    if by == "intersection":
        return counts["gender"].astype(str) + " × " + counts["race"].astype(str)
    return counts[by]


def _attach(
    table: pd.DataFrame, stats: dict[str, np.ndarray], level: float, valid_from: str
) -> pd.DataFrame:
    """Add ``<name>_sd_pp``, ``<name>_low_pp``, ``<name>_high_pp`` and ``n_valid`` columns."""
    out = table.copy()
    for name, reps in stats.items():
        sd, low, high, n_valid = _summarise(reps, level)
        out[f"{name}_sd_pp"] = sd
        out[f"{name}_low_pp"] = low
        out[f"{name}_high_pp"] = high
        if name == valid_from:
            out["n_valid"] = n_valid.astype("int64")
    return out


def _pair(
    table: pd.DataFrame,
    pair: list[str],
    explicit: tuple[str, str | None],
    implicit: tuple[str, str | None],
) -> pd.DataFrame:
    """Merge explicit and implicit rows of ``table`` (which has a ``_row`` column) on ``pair``.

    Mirrors :func:`cuegap.designs.dilemma.stats.cue_visibility_gap` (same sides, same inner merge
    and row
    order) and keeps each side's ``_row`` so that replicate columns can be paired.
    """
    cols = [*pair, "favor_rate", "against_rate", "net_pp", "_row"]
    merged = table.loc[condition_mask(table, explicit), cols].merge(
        table.loc[condition_mask(table, implicit), cols], on=pair, suffixes=("_e", "_i")
    )
    out = gap_columns(merged, pair)
    out["_row_e"] = merged["_row_e"].to_numpy()
    out["_row_i"] = merged["_row_i"].to_numpy()
    return out.reset_index(drop=True)


def _gap_reps(
    pairs: pd.DataFrame, fav: np.ndarray, ag: np.ndarray, net: np.ndarray
) -> dict[str, np.ndarray]:
    e = pairs["_row_e"].to_numpy(dtype=np.int64)
    i = pairs["_row_i"].to_numpy(dtype=np.int64)
    return {
        "gap": net[:, e] - net[:, i],
        "delta_against": 100 * (ag[:, i] - ag[:, e]),
        "delta_favor": 100 * (fav[:, i] - fav[:, e]),
    }


def _check(counts: pd.DataFrame, keys: list[str], n_boot: int, level: float) -> None:
    if not isinstance(counts, pd.DataFrame):
        raise TypeError(f"counts must be a pandas DataFrame, but got {type(counts).__name__}")
    needed = [*keys, "dilemma", "gender", "race", *_COUNTS]
    missing = [c for c in dict.fromkeys(needed) if c not in counts.columns]
    if missing:
        raise ValueError(
            f"bootstrap needs columns {', '.join(missing)}; got {', '.join(counts.columns)}"
        )
    for k in ("system", *_SIDE_KEYS):
        if k not in keys:
            raise ValueError(f"keys must include {k!r}, but got {keys}")
    if counts.empty:
        raise ValueError("counts is empty: there is nothing to resample")
    if counts["dilemma"].isna().any():
        raise ValueError("column 'dilemma' has missing values; every count row needs its item")
    if isinstance(n_boot, bool) or not isinstance(n_boot, int | np.integer) or n_boot < 2:
        raise ValueError(f"n_boot must be an integer >= 2, but got {n_boot!r}")
    if not (isinstance(level, float | int) and 0 < level < 1):
        raise ValueError(f"The value of level should be in the interval (0, 1) but got {level!r}")


def bootstrap(
    counts: pd.DataFrame,
    *,
    n_boot: int = 1000,
    seed: int = 2026,
    keys: Sequence[str] = KEYS,
    explicit: tuple[str, str | None] = ("direct", None),
    implicit: tuple[str, str | None] = ("puzzled", "hard"),
    level: float = 0.9,
) -> dict[str, pd.DataFrame]:
    r"""Bootstrap SDs and percentile intervals of rates, macro averages and gaps.

    Dilemmas (decision items) are resampled with replacement within each system. One set
    of resampling weights per system is shared by every setting (condition, difficulty,
    consequences) of that system, so differences between settings (the Cue Visibility Gap,
    ΔAgainst, ΔFavor) get their paired uncertainty.

    Parameters
    ----------
    counts : DataFrame
        The count table of :func:`cuegap.schema.decision_counts`: one row per dilemma and
        cell, with ``dilemma``, ``gender``, ``race``, ``favor``, ``favor_trials``,
        ``against``, ``against_trials`` and the ``keys`` columns. Other columns
        (``prompt_variant``, ``topic_group``, ``recovered``, ...) are summed over, as in
        :func:`cuegap.designs.dilemma.stats.group_rates`; filter the table first to condition on
        them.
    n_boot : int, default 1000
        Number of bootstrap replicates (at least 2).
    seed : int, default 2026
        Seed. System *s* draws its weights from
        ``numpy.random.default_rng([seed, h(s)])`` with ``h`` a stable 64-bit hash of the
        system's name, so a system's replicates do not depend on the other systems present
        or on the row order.
    keys : sequence of str
        Columns identifying a setting; must include ``system``, ``condition`` and
        ``difficulty``. The gap pairs the two sides on the remaining keys (by default
        ``system`` and ``consequences``).
    explicit, implicit : (condition, difficulty)
        The two sides of the gap; difficulty None matches rows without one.
    level : float, default 0.9
        Coverage of the percentile intervals, in (0, 1).

    Returns
    -------
    dict of str to DataFrame
        Every table keeps its point-estimate columns (computed from the full data, equal to
        the corresponding :mod:`cuegap.designs.dilemma.stats._rates` output) and adds, for each
        bootstrapped
        statistic ``<s>``, in percentage points:

        ``<s>_sd_pp``
            SD (``ddof=1``) over the replicates where the statistic is defined.
        ``<s>_low_pp``, ``<s>_high_pp``
            The central ``level`` percentile interval over those replicates.

        and ``n_valid``, the number of replicates in which the table's main statistic
        (``net`` or ``gap``) is defined.

        ``"group_rates"``
            :func:`decision_bias` rows (gender and race) followed by intersection rows
            (``group_type`` ``"intersection"``, groups ``"woman × Asian"``): ``keys``,
            ``group_type``, ``group``, the four counts, ``favor_rate``, ``against_rate``,
            ``net_pp``; statistics ``favor``, ``against``, ``net``.
        ``"macro"``
            :func:`macro_average` of the gender and race rows (the paper's 3 + 5 groups):
            ``keys``, ``favor_rate``, ``against_rate``, ``net_pp``, ``groups``; statistics
            ``favor``, ``against``, ``net``.
        ``"gap"``
            :func:`cue_visibility_gap` of the group rows (all three group types): pair keys,
            ``group_type``, ``group``, ``net_direct_pp``, ``net_puzzled_pp``, ``gap_pp``,
            ``delta_against_pp``, ``delta_favor_pp``; statistics ``gap``,
            ``delta_against``, ``delta_favor``.
        ``"macro_gap"``
            The same for the macro rows: pair keys, the five point columns and the three
            statistics.

    Raises
    ------
    TypeError
        If ``counts`` is not a DataFrame.
    ValueError
        If a column is missing, ``keys`` lacks system/condition/difficulty, the table is
        empty, a dilemma id is missing, ``n_boot < 2`` or ``level`` is outside (0, 1).

    Notes
    -----
    For system *s* with dilemmas :math:`d = 1..n`, replicate *b* draws
    :math:`w_b \sim \mathrm{Multinomial}(n, (1/n, \dots, 1/n))`, i.e. the multiplicity of each
    dilemma in a resample of *n* dilemmas with replacement. With :math:`C_d` the per-dilemma
    counts of a (setting, group) cell,

    .. math::

        \mathrm{Favor}_b = \frac{\sum_d w_{bd} F_d}{\sum_d w_{bd} T^F_d}, \qquad
        \mathrm{Against}_b = \frac{\sum_d w_{bd} A_d}{\sum_d w_{bd} T^A_d},

    computed for all cells at once as ``W @ C`` (``W`` of shape ``(n_boot, n)``).
    ``Net_b = 100 (Favor_b − Against_b)``; the macro Net of a replicate is the mean over the
    gender and race groups whose Net is defined in that replicate (as
    :func:`macro_average` does for the point estimate); the gap of a replicate is
    ``Net_explicit,b − Net_implicit,b`` with the same ``w_b`` on both sides.

    A cell whose denominator is zero in a replicate (every dilemma that carries its trials
    was left out) has an undefined rate in that replicate. Such replicates are dropped for
    that statistic only: its SD and interval are taken over the remaining replicates
    (``n_valid`` says how many), which is the bootstrap distribution conditional on the
    rate being defined. The SD is NaN with fewer than 2 such replicates.

    Worked example (one group, two dilemmas; d1: 1 favor event in 2 favor trials, d2: 0 in
    2): the three distinct resamples (d1, d1), (d1, d2), (d2, d2) have probabilities 1/4,
    1/2, 1/4 and Favor 2/4, 1/4, 0, so the ideal bootstrap SD is
    :math:`\sqrt{(1/4)(0.25)^2 + (1/4)(0.25)^2} = 0.177`, i.e. 17.7 pp; ``favor_sd_pp``
    converges to it as ``n_boot`` grows.
    """
    keys = list(keys)
    _check(counts, keys, n_boot, level)
    pair = [k for k in keys if k not in _SIDE_KEYS]

    # Point tables and, for every count row, its output row in each group type.
    tables, row_of, offset = [], [], 0
    for by in _GROUP_TYPES:
        table = group_rates(counts, by=by, keys=keys)
        labelled = counts[keys].assign(group=_group_labels(counts, by))
        code = labelled.groupby([*keys, "group"], dropna=False, sort=True).ngroup().to_numpy()
        if code.max() + 1 != len(table):  # pragma: no cover - guards the ordering contract
            raise RuntimeError("group codes do not match group_rates rows")
        tables.append(table)
        row_of.append(code + offset)
        offset += len(table)
    rates = pd.concat(tables, ignore_index=True)
    n_rows = len(rates)
    row_of_all = np.concatenate(row_of)
    values = np.tile(counts[_COUNTS].to_numpy(dtype=np.float64), (len(_GROUP_TYPES), 1))
    systems = counts["system"].to_numpy()
    dilemmas = counts["dilemma"].to_numpy()
    system_all = np.tile(systems, len(_GROUP_TYPES))
    dilemma_all = np.tile(dilemmas, len(_GROUP_TYPES))

    fav = np.full((n_boot, n_rows), np.nan)
    ag = np.full((n_boot, n_rows), np.nan)
    rate_system = rates["system"].to_numpy()
    for system in sorted(pd.unique(systems), key=str):
        take = system_all == system
        ids = sorted(pd.unique(dilemmas[systems == system]), key=str)
        d_code = pd.Index(ids).get_indexer(dilemma_all[take])
        out_rows = np.flatnonzero(rate_system == system)
        local = pd.Index(out_rows).get_indexer(row_of_all[take])
        per_item = np.zeros((len(ids), len(out_rows), 4))
        np.add.at(per_item, (d_code, local), values[take])
        full = rates.loc[out_rows, _COUNTS].to_numpy(dtype=np.float64)
        if not np.array_equal(per_item.sum(axis=0), full):  # pragma: no cover - a guard
            raise RuntimeError(f"per-dilemma counts of system {system!r} do not add up")
        n = len(ids)
        weights = _system_rng(seed, system).multinomial(n, np.full(n, 1.0 / n), size=n_boot)
        summed = (weights.astype(np.float64) @ per_item.reshape(n, -1)).reshape(n_boot, -1, 4)
        with np.errstate(divide="ignore", invalid="ignore"):
            fav[:, out_rows] = np.where(summed[..., 1] > 0, summed[..., 0] / summed[..., 1], np.nan)
            ag[:, out_rows] = np.where(summed[..., 3] > 0, summed[..., 2] / summed[..., 3], np.nan)
    net = 100 * (fav - ag)

    rates["_row"] = np.arange(n_rows)
    group_table = _attach(
        rates.drop(columns="_row"),
        {"favor": 100 * fav, "against": 100 * ag, "net": net},
        level,
        "net",
    )

    # Macro: mean over the gender and race rows of each setting, skipping undefined groups.
    gr = rates[rates["group_type"].isin(["gender", "race"])]
    macro = macro_average(gr, keys=keys)
    setting = gr.groupby(keys, dropna=False, sort=True).ngroup().to_numpy()
    member = np.zeros((len(gr), len(macro)))
    member[np.arange(len(gr)), setting] = 1.0
    gr_rows = gr["_row"].to_numpy()

    def macro_mean(reps: np.ndarray) -> np.ndarray:
        sub = reps[:, gr_rows]
        ok = ~np.isnan(sub)
        with np.errstate(divide="ignore", invalid="ignore"):
            return (np.where(ok, sub, 0.0) @ member) / (ok.astype(np.float64) @ member)

    m_fav, m_ag, m_net = macro_mean(fav), macro_mean(ag), macro_mean(net)
    macro_table = _attach(
        macro, {"favor": 100 * m_fav, "against": 100 * m_ag, "net": m_net}, level, "net"
    )

    pairs = _pair(rates, [*pair, "group_type", "group"], explicit, implicit)
    gap_table = _attach(
        pairs.drop(columns=["_row_e", "_row_i"]),
        _gap_reps(pairs, fav, ag, net),
        level,
        "gap",
    )
    macro["_row"] = np.arange(len(macro))
    macro_pairs = _pair(macro, pair, explicit, implicit)
    macro_gap_table = _attach(
        macro_pairs.drop(columns=["_row_e", "_row_i"]),
        _gap_reps(macro_pairs, m_fav, m_ag, m_net),
        level,
        "gap",
    )
    return {
        "group_rates": group_table,
        "macro": macro_table,
        "gap": gap_table,
        "macro_gap": macro_gap_table,
    }
