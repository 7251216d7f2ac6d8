"""System-level QA scores, group means, the explicit-implicit cue gap, controls, mitigation.

All functions take tables shaped like :func:`cuegap.designs.qa.stats.qa_scores` output (key columns
plus metric columns) and return tidy DataFrames, so they also work on published per-model
values typed in by hand (the seed-001 tests do exactly that).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from cuegap.designs.qa.stats._scores import METRIC_CONTEXT, METRICS

__all__ = ["qa_controls", "qa_cue_gap", "qa_group_means", "qa_mitigation", "qa_system_scores"]

SYSTEM_KEYS = ("system", "strategy", "cue", "context")
#: Metrics where smaller is fairer: their cue gap is implicit − explicit.
BIAS_METRICS = ("s_dis", "s_amb_raw", "s_amb")
CONTROL_CUES = ("control_neutral", "control_none")


def _need(df: pd.DataFrame, cols: Sequence[str], what: str) -> None:
    if not isinstance(df, pd.DataFrame):
        raise TypeError(f"{what} needs a pandas DataFrame, but got {type(df).__name__}")
    missing = [c for c in cols if c not in df.columns]
    if missing:
        raise ValueError(
            f"{what} needs columns {', '.join(missing)}; got {', '.join(map(str, df.columns))}"
        )


def _metrics_in(df: pd.DataFrame) -> list[str]:
    return [m for m in METRICS if m in df.columns]


def qa_system_scores(scores: pd.DataFrame) -> pd.DataFrame:
    """System-level scores: the unweighted mean over dimensions.

    Parameters
    ----------
    scores : DataFrame
        Per-dimension scores (:func:`qa_scores` with ``by_subgroup=False``, or any table
        with ``system``, ``strategy``, ``cue``, ``context``, ``dimension`` and metric
        columns). A table split by subgroup is refused: average subgroups into dimensions
        first by scoring without ``by_subgroup``.

    Returns
    -------
    DataFrame
        The ``qa_system_scores`` table: one row per system × strategy × cue × context with
        each metric's mean over the dimensions where it is defined, ``dimensions`` (how
        many dimensions the row has) and, when present, the summed counts ``n`` and
        ``n_unparsable``.

    Notes
    -----
    Seed 001, Table 2: a system's score is the average over dimensions, each dimension
    weighted equally whatever its number of items. A dimension whose metric is undefined
    (NaN) is skipped for that metric only.
    """
    _need(scores, [*SYSTEM_KEYS, "dimension"], "qa_system_scores")
    if "subgroup" in scores.columns:
        raise ValueError(
            "qa_system_scores needs per-dimension scores, but got a table split by subgroup; "
            "use qa_scores(counts, by_subgroup=False)"
        )
    dup = scores.duplicated([*SYSTEM_KEYS, "dimension"])
    if dup.any():
        row = scores.loc[dup, [*SYSTEM_KEYS, "dimension"]].iloc[0].to_dict()
        raise ValueError(f"qa_system_scores: more than one row for {row}")
    metrics = _metrics_in(scores)
    grouped = scores.groupby(list(SYSTEM_KEYS), sort=True, dropna=False)
    out = grouped[metrics].mean()
    out.insert(0, "dimensions", grouped["dimension"].nunique())
    sums = [c for c in ("n", "n_unparsable") if c in scores.columns]
    for i, c in enumerate(sums):
        out.insert(i, c, grouped[c].sum().astype("int64"))
    if "n_untargeted" in scores.columns:  # answers to items without a target (accuracy only)
        out["n_untargeted"] = grouped["n_untargeted"].sum().astype("int64")
    return out.reset_index()


def _group_of(systems: pd.Series, groups: Mapping[str, str] | None) -> pd.Series:
    if groups is None:
        return pd.Series("all", index=systems.index)
    unmapped = sorted(set(systems) - set(groups), key=str)
    if unmapped:
        raise ValueError(
            f"groups has no entry for system(s) {', '.join(map(repr, unmapped))}; "
            "map every system to a group"
        )
    return systems.map(groups)


def qa_group_means(
    system_scores: pd.DataFrame, *, groups: Mapping[str, str] | None = None
) -> pd.DataFrame:
    """Mean of each system-level metric over the systems of a group.

    Parameters
    ----------
    system_scores : DataFrame
        :func:`qa_system_scores` output, or per-dimension :func:`qa_scores` output
        (then the means are per dimension, and per subgroup if the table has one).
    groups : mapping of system to group label, optional
        E.g. ``{"Phi-4-mini": "open-weight", "GPT-5-mini": "closed"}``; every system must
        be mapped. None puts every system in one group, ``"all"``.

    Returns
    -------
    DataFrame
        ``group``, ``strategy``, ``cue``, ``context`` (and ``dimension``, ``subgroup`` when
        present), ``systems`` (how many) and the mean
        of each metric over the systems where it is defined (unweighted).
    """
    _need(system_scores, SYSTEM_KEYS, "qa_group_means")
    df = system_scores.assign(group=_group_of(system_scores["system"], groups))
    extra = [k for k in ("dimension", "subgroup") if k in df.columns]
    keys = ["group", "strategy", "cue", "context", *extra]
    grouped = df.groupby(keys, sort=True, dropna=False)
    out = grouped[_metrics_in(df)].mean()
    out.insert(0, "systems", grouped["system"].nunique())
    return out.reset_index()


def qa_cue_gap(
    scores: pd.DataFrame,
    *,
    explicit: str = "explicit",
    implicit: str = "implicit",
) -> pd.DataFrame:
    """The explicit-vs-implicit difference of every metric, signed so that positive = fairer
    under the explicit label.

    Parameters
    ----------
    scores : DataFrame
        :func:`qa_system_scores` output (or :func:`qa_scores` output for per-dimension
        gaps): rows are paired on every key column except ``cue``.
    explicit, implicit : str
        The two cue values compared.

    Returns
    -------
    DataFrame
        The ``qa_cue_gap`` table, long: the pair keys, ``metric``, ``explicit``,
        ``implicit``, ``gap`` and ``direction`` (the formula used). Only pairs present
        under both cues, and only each metric's own context, appear.

    Notes
    -----
    One sign convention across designs: positive means the system looks fairer when the
    identity is stated than when it must be inferred (the dilemma design's
    Net(explicit) − Net(implicit)). For accuracies (higher is fairer) the gap is
    explicit − implicit; for bias scores (closer to 0 from the stereotypical side is
    fairer) it is implicit − explicit. Seed 001, Table 2's arrows: the implicit
    ambiguous-bias rise ↑0.22 of Phi-4-mini is a gap of +0.22, its accuracy drop ↓0.61 a
    gap of +0.61.
    """
    keys = [
        k
        for k in ("system", "strategy", "cue", "context", "dimension", "subgroup")
        if k in scores.columns
    ]
    _need(scores, SYSTEM_KEYS, "qa_cue_gap")
    pair = [k for k in keys if k != "cue"]
    metrics = _metrics_in(scores)
    long = scores[[*keys, *metrics]].melt(id_vars=keys, var_name="metric", value_name="value")
    long = long[long["metric"].map(METRIC_CONTEXT) == long["context"]]
    on = [*pair, "metric"]
    e = long.loc[long["cue"] == explicit].drop(columns="cue")
    i = long.loc[long["cue"] == implicit].drop(columns="cue")
    out = e.merge(i, on=on, suffixes=("_e", "_i")).rename(
        columns={"value_e": "explicit", "value_i": "implicit"}
    )
    bias = out["metric"].isin(BIAS_METRICS)
    out["gap"] = np.where(
        bias, out["implicit"] - out["explicit"], out["explicit"] - out["implicit"]
    )
    out["direction"] = np.where(bias, "implicit - explicit", "explicit - implicit")
    order = {m: k for k, m in enumerate(METRICS)}
    out = out.sort_values(
        [*pair, "metric"], key=lambda c: c.map(order) if c.name == "metric" else c
    )
    return out[[*on, "explicit", "implicit", "gap", "direction"]].reset_index(drop=True)


def qa_controls(system_scores: pd.DataFrame) -> pd.DataFrame:
    """Accuracy (and bias) under the control cues, one row per system × strategy × cue.

    Parameters
    ----------
    system_scores : DataFrame
        :func:`qa_system_scores` output.

    Returns
    -------
    DataFrame
        The ``qa_controls`` table: ``system``, ``strategy``, ``cue`` (``control_neutral``:
        inert cue sentences; ``control_none``: no cue sentences), then the ambiguous
        metrics and the disambiguated metrics side by side. Seed 001, Table 2's control
        columns are ``acc_amb`` and ``acc_dis``.
    """
    _need(system_scores, SYSTEM_KEYS, "qa_controls")
    df = system_scores[system_scores["cue"].isin(CONTROL_CUES)]
    keys = ["system", "strategy", "cue"]
    parts = []
    for context in ("ambiguous", "disambiguated"):
        cols = [m for m in _metrics_in(df) if METRIC_CONTEXT[m] == context]
        parts.append(df.loc[df["context"] == context, [*keys, *cols]])
    out = parts[0].merge(parts[1], on=keys, how="outer")
    return out.sort_values(keys).reset_index(drop=True)


def qa_mitigation(
    system_scores: pd.DataFrame,
    *,
    baseline: str = "zero-shot",
    metrics: Sequence[str] = ("s_amb",),
    groups: Mapping[str, str] | None = None,
) -> pd.DataFrame:
    """Relative reduction of a score by each prompting strategy against the baseline.

    Parameters
    ----------
    system_scores : DataFrame
        :func:`qa_system_scores` output covering the baseline strategy and the others.
    baseline : str, default "zero-shot"
        The strategy every other strategy is compared with.
    metrics : sequence of str, default ("s_amb",)
        Metrics to compare (each in its own context).
    groups : mapping of system to group label, optional
        As in :func:`qa_group_means`; None pools every system as ``"all"``.

    Returns
    -------
    DataFrame
        The ``qa_mitigation`` table. Rows with ``scope`` ``"system"``: ``group``,
        ``system``, ``strategy``, ``cue``, ``context``, ``metric``, ``baseline`` (B of the
        baseline strategy), ``value`` (B of the strategy) and ``reduction``
        = 1 − B_strategy / B_baseline. Rows with ``scope`` ``"group"`` (``system`` empty):
        the means of B over the group's systems present under both strategies, and
        ``reduction`` = 1 − mean(B_strategy) / mean(B_baseline), the ratio of means seed
        001 §5.3 reports; ``systems`` counts them. ``note`` says why a reduction is NaN.

    Notes
    -----
    A reduction of 0.60 means the score fell by 60 %; a negative reduction means the
    strategy raised it. A baseline of exactly 0 leaves the reduction undefined.
    """
    _need(system_scores, SYSTEM_KEYS, "qa_mitigation")
    unknown = [m for m in metrics if m not in METRIC_CONTEXT]
    if unknown:
        raise ValueError(f"metrics must be among {', '.join(METRICS)}, but got {unknown}")
    _need(system_scores, list(metrics), "qa_mitigation")
    if baseline not in set(system_scores["strategy"]):
        raise ValueError(
            f"baseline strategy {baseline!r} is not in the table; strategies: "
            + ", ".join(sorted(map(str, set(system_scores["strategy"]))))
        )
    df = system_scores.assign(group=_group_of(system_scores["system"], groups))
    keys = ["group", "system", "cue", "context"]
    rows = []
    for metric in metrics:
        sub = df[df["context"] == METRIC_CONTEXT[metric]]
        base = sub.loc[sub["strategy"] == baseline, [*keys, metric]]
        other = sub.loc[sub["strategy"] != baseline, [*keys, "strategy", metric]]
        m = other.merge(base, on=keys, suffixes=("", "_base")).rename(
            columns={metric: "value", f"{metric}_base": "baseline"}
        )
        m = m.dropna(subset=["value", "baseline"]).assign(metric=metric)
        rows.append(m.assign(scope="system", systems=1))
        pooled = (
            m.groupby(["group", "strategy", "cue", "context", "metric"], sort=True)
            .agg(
                baseline=("baseline", "mean"),
                value=("value", "mean"),
                systems=("system", "nunique"),
            )
            .reset_index()
            .assign(scope="group", system="")
        )
        rows.append(pooled)
    cols = ["scope", "group", "system", "strategy", "cue", "context", "metric", "baseline", "value"]
    out = (
        pd.concat(rows, ignore_index=True)[[*cols, "systems"]]
        if rows
        else pd.DataFrame(columns=cols)
    )
    with np.errstate(divide="ignore", invalid="ignore"):
        out["reduction"] = np.where(
            out["baseline"] != 0, 1 - out["value"] / out["baseline"], np.nan
        )
    out["note"] = np.where(out["baseline"] == 0, "baseline score is 0: reduction undefined", "")
    out["systems"] = out["systems"].astype("int64")
    return out.sort_values(["scope", "group", "metric", "strategy", "cue", "system"]).reset_index(
        drop=True
    )
