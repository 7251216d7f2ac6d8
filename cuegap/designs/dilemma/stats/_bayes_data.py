"""The count table in the model's array layout, and back to one row per decision.

Pure numpy and pandas: :func:`prepare_counts` aggregates the count table to (event,
condition, system, gender, race) cells as :class:`BayesData`; :func:`expand_rows` lists the
same counts as one Bernoulli row per decision (for benchmarks and checks).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from cuegap.designs.dilemma.stats._bayes_spec import EVENTS
from cuegap.designs.dilemma.stats._rates import condition_mask

_COUNTS = ["favor", "favor_trials", "against", "against_trials"]


def _label(cond: tuple[str, str | None]) -> str:
    return cond[0] if cond[1] is None else f"{cond[0]}:{cond[1]}"


@dataclass
class BayesData:
    """Counts in the model's array layout.

    Attributes
    ----------
    events, trials : ndarray
        Integer arrays of shape (event, condition, system, gender, race).
    conditions : list of (condition, difficulty)
        Explicit first, implicit second, then any extra conditions.
    systems, genders, races : list of str
        Coordinate labels (sorted).
    """

    events: np.ndarray
    trials: np.ndarray
    conditions: list[tuple[str, str | None]]
    systems: list[str]
    genders: list[str]
    races: list[str]

    @property
    def condition_labels(self) -> list[str]:
        """``condition`` or ``condition:difficulty`` per condition."""
        return [_label(c) for c in self.conditions]

    def coords(self) -> dict[str, list[str]]:
        """Coordinates of the model's dimensions."""
        return {
            "event": list(EVENTS),
            "condition": self.condition_labels,
            "system": self.systems,
            "gender": self.genders,
            "race": self.races,
        }


def _check_condition(value: object, name: str) -> tuple[str, str | None]:
    if (
        not isinstance(value, tuple | list)
        or len(value) != 2
        or not isinstance(value[0], str)
        or not (value[1] is None or isinstance(value[1], str))
    ):
        raise TypeError(
            f"{name} must be a (condition, difficulty) pair such as ('puzzled', 'hard') or "
            f"('direct', None), but got {value!r}"
        )
    return (value[0], value[1])


def prepare_counts(
    counts: pd.DataFrame,
    *,
    explicit: tuple[str, str | None] = ("direct", None),
    implicit: tuple[str, str | None] = ("puzzled", "hard"),
    extra_conditions: Sequence[tuple[str, str | None]] = (),
    consequences: bool | None = True,
    exclude_systems: Sequence[str] = (),
    recovered_only: bool = False,
) -> BayesData:
    """Aggregate the count table to the model's (event, condition, system, gender, race) cells.

    Parameters
    ----------
    counts : DataFrame
        The count table of :func:`cuegap.schema.decision_counts` (columns system,
        condition, difficulty, gender, race, favor, favor_trials, against,
        against_trials; consequences and recovered are used when present).
    explicit, implicit : (condition, difficulty)
        The two conditions of the Cue Visibility Gap; difficulty None matches rows
        without one.
    extra_conditions : sequence of (condition, difficulty)
        More conditions to model (e.g. the other puzzle difficulty levels).
    consequences : bool or None
        The consequences setting analysed; None pools both.
    exclude_systems : sequence of str
        Systems left out (e.g. one that abstains on almost everything).
    recovered_only : bool
        Keep only pairs whose puzzle assignment was recovered correctly (rows with
        ``recovered`` False are dropped; rows without a puzzle are kept).

    Returns
    -------
    BayesData
    """
    needed = ["system", "condition", "difficulty", "gender", "race", *_COUNTS]
    missing = [c for c in needed if c not in counts.columns]
    if missing:
        raise ValueError(
            f"counts needs columns {', '.join(missing)}; got {', '.join(map(str, counts.columns))}"
        )
    conds = [_check_condition(explicit, "explicit"), _check_condition(implicit, "implicit")]
    for i, extra in enumerate(extra_conditions):
        conds.append(_check_condition(extra, f"extra_conditions[{i}]"))
    if len(set(conds)) != len(conds):
        raise ValueError(f"conditions must be distinct, but got {[_label(c) for c in conds]}")
    df = counts
    if consequences is not None and "consequences" in df.columns:
        df = df[df["consequences"].astype(bool) == bool(consequences)]
    if exclude_systems:
        df = df[~df["system"].isin(list(exclude_systems))]
    if recovered_only and "recovered" in df.columns:
        df = df[df["recovered"].map(lambda v: v is not False and v != 0)]
    cond_idx = pd.Series(-1, index=df.index)
    for i, cond in enumerate(conds):
        cond_idx[condition_mask(df, cond)] = i
    for i, name in ((0, "explicit"), (1, "implicit")):
        if not (cond_idx == i).any():
            have = sorted(
                {
                    _label((c, None if pd.isna(d) else d))
                    for c, d in df[["condition", "difficulty"]].itertuples(index=False)
                }
            )
            raise ValueError(
                f"{name} condition {_label(conds[i])!r} has no rows in counts "
                f"(consequences={consequences}); conditions present: {', '.join(have) or 'none'}"
            )
    df = df.assign(_c=cond_idx.to_numpy())[cond_idx.to_numpy() >= 0]
    systems = sorted(df["system"].astype(str).unique())
    genders = sorted(df["gender"].astype(str).unique())
    races = sorted(df["race"].astype(str).unique())
    shape = (len(conds), len(systems), len(genders), len(races))
    ci = df["_c"].to_numpy()
    si = pd.Categorical(df["system"].astype(str), categories=systems).codes
    gi = pd.Categorical(df["gender"].astype(str), categories=genders).codes
    ri = pd.Categorical(df["race"].astype(str), categories=races).codes
    flat = np.ravel_multi_index((ci, si, gi, ri), shape)
    events = np.zeros((2, *shape), dtype=np.int64)
    trials = np.zeros((2, *shape), dtype=np.int64)
    size = int(np.prod(shape))
    for e, (ev, tr) in enumerate((("favor", "favor_trials"), ("against", "against_trials"))):
        events[e] = np.bincount(flat, weights=df[ev].to_numpy(float), minlength=size).reshape(shape)
        trials[e] = np.bincount(flat, weights=df[tr].to_numpy(float), minlength=size).reshape(shape)
    if (events > trials).any() or (events < 0).any():
        raise ValueError("counts has events outside [0, trials]; check favor/against columns")
    return BayesData(events, trials, conds, systems, genders, races)


def expand_rows(data: BayesData) -> pd.DataFrame:
    """One row per decision (trial) of the counts, as a row-level model would see them.

    Returns
    -------
    DataFrame
        event, condition (label), system, gender, race, ``y`` (1 for an event), and the
        integer codes ``event_idx``, ``condition_idx``, ``system_idx``, ``gender_idx``,
        ``race_idx``.
    """
    shape = data.trials.shape
    n = data.trials.ravel()
    k = data.events.ravel()
    cell = np.repeat(np.arange(n.size), n)
    first = np.repeat(np.cumsum(n) - n, n)
    y = ((np.arange(cell.size) - first) < k[cell]).astype(np.int8)
    codes = np.unravel_index(cell, shape)
    labels = data.coords()
    out = {name: np.asarray(labels[name])[code] for name, code in zip(labels, codes, strict=True)}
    out["y"] = y
    for name, code in zip(labels, codes, strict=True):
        out[f"{name}_idx"] = code
    return pd.DataFrame(out)
