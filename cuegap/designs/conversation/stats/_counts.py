r"""Transition counts per cell from per-round opinions (seed 003, §4.3, Eqs. 1-2).

A *transition* is a pair of consecutive rounds (r − 1 → r) of one conversation, r ≥ 1,
with both rounds present. Rounds are 0-indexed as MAC-Fairness's ``round_id``
(``schema/2025-12-10/schemas.ts``); round 0 is each agent's independent opinion, and in
round r each agent sees only round r − 1 (seed 003, Appendix C, "Previous-Round-Only
Visibility"), so the transition r − 1 → r is the unit of Eq. 1. With o_a^(r) agent a's
opinion in round r:

* identity agent: the transition counts in ``iden_disagree`` when
  o_iden^(r−1) ≠ o_base^(r−1), and in ``iden_shift`` when moreover
  o_iden^(r) = o_base^(r−1) (it took the baseline's previous opinion);
* baseline agent: symmetrically, ``base_disagree`` when o_base^(r−1) ≠ o_iden^(r−1),
  ``base_shift`` when moreover o_base^(r) = o_iden^(r−1).

So a move to a third option (neither its own nor the peer's previous opinion) counts in
the denominator only; a transition after agreement counts nowhere; a one-round
conversation has no transition. When both agents swap opinions, both shifts count.

Missing opinions (unparsable answers, absent messages; ``None``/NaN) drop a transition
for an agent when any of the three opinions it needs is missing: o_iden^(r−1),
o_base^(r−1) and that agent's o^(r). A missing round r − 1 drops the transition into r
(no cross-round pair with a gap). Opinions are compared as exact labels (e.g. ``"A"``).

Vectorised: one factorisation, one self-join of rounds on (conversation, round − 1),
``numpy.bincount`` per conversation, then one ``groupby`` over cells. No per-row Python.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from cuegap.designs.conversation.stats._frame import CELL, COUNTS, as_list, null_to_label

__all__ = ["conv_transition_counts"]

IDENTITY, BASELINE = "identity", "baseline"
_OPINION_COLS = ("conversation", "round", "role", "opinion")


def _check_opinions(opinions: pd.DataFrame) -> None:
    if not isinstance(opinions, pd.DataFrame):
        raise TypeError(f"opinions must be a pandas DataFrame, but got {type(opinions).__name__}")
    missing = [c for c in _OPINION_COLS if c not in opinions.columns]
    if missing:
        got = ", ".join(map(str, opinions.columns))
        raise ValueError(f"opinions needs columns {', '.join(missing)}; got {got}")
    roles = set(pd.unique(opinions["role"]))
    bad = sorted(map(str, roles - {IDENTITY, BASELINE}))
    if bad:
        raise ValueError(f"opinions: role must be {IDENTITY!r} or {BASELINE!r}, but got {bad[0]!r}")
    rnd = pd.to_numeric(opinions["round"], errors="coerce")
    if rnd.isna().any() or (rnd < 0).any() or (rnd != np.floor(rnd)).any():
        raise ValueError("opinions: round must hold non-negative integers (0-indexed)")
    if opinions["conversation"].isna().any():
        raise ValueError("opinions: conversation is missing on some rows; need an id")
    dup = opinions.duplicated(["conversation", "round", "role"], keep=False)
    if dup.any():
        idx = dup[dup].index[0]
        raise ValueError(
            f"opinions: row {idx!r} repeats (conversation, round, role); each agent has "
            "one opinion per round"
        )


def _conversation_keys(
    opinions: pd.DataFrame,
    conversations: pd.DataFrame | None,
    uniques: pd.Index,
    keys: list[str],
) -> pd.DataFrame:
    """One row of key labels per conversation, in the order of ``uniques``."""
    if conversations is None:
        src = opinions
        missing = [k for k in keys if k not in src.columns]
        if missing:
            raise ValueError(
                f"opinions needs key columns {', '.join(missing)} (or pass conversations)"
            )
        per = src[["conversation", *keys]].drop_duplicates()
        if per["conversation"].duplicated().any():
            cid = per.loc[per["conversation"].duplicated(), "conversation"].iloc[0]
            raise ValueError(
                f"opinions: conversation {cid!r} has more than one configuration; key "
                "columns must be constant within a conversation"
            )
    else:
        if not isinstance(conversations, pd.DataFrame):
            raise TypeError(
                "conversations must be a pandas DataFrame or None, "
                f"but got {type(conversations).__name__}"
            )
        missing = [k for k in ("conversation", *keys) if k not in conversations.columns]
        if missing:
            raise ValueError(f"conversations needs columns {', '.join(missing)}")
        per = conversations[["conversation", *keys]]
        if per["conversation"].duplicated().any():
            cid = per.loc[per["conversation"].duplicated(), "conversation"].iloc[0]
            raise ValueError(f"conversations: conversation {cid!r} appears twice")
    per = per.set_index("conversation").reindex(uniques)
    absent = per.index[per[keys].isna().all(axis=1)] if keys else per.index[:0]
    if conversations is not None and len(absent):
        raise ValueError(
            f"opinions: conversation {absent[0]!r} is not in conversations; every "
            "conversation needs its configuration"
        )
    for k in keys:
        if k in ("demographics", "persona"):
            per[k] = null_to_label(per[k])
    return per.reset_index(drop=True)


def conv_transition_counts(
    opinions: pd.DataFrame,
    conversations: pd.DataFrame | None = None,
    *,
    keys: Sequence[str] = CELL,
    unit: str | Sequence[str] | None = None,
) -> pd.DataFrame:
    """Count cross-round transitions with prior disagreement, and shifts, per cell.

    Parameters
    ----------
    opinions : DataFrame
        Tidy, one row per (conversation, round, agent): ``conversation`` (id),
        ``round`` (0-indexed int), ``role`` (``"identity"`` or ``"baseline"``),
        ``opinion`` (the selected answer label; None/NaN when missing). Without
        ``conversations`` it must also hold the key columns, constant per conversation.
    conversations : DataFrame, optional
        One row per conversation: ``conversation`` and the key (and unit) columns. Cheaper
        than repeating the keys on every opinion row.
    keys : sequence of str, default CELL
        The cell columns: ``system``, ``benchmark``, ``category``, ``demographics``,
        ``persona``, ``instantiation``, ``reveal``. Missing ``demographics`` /
        ``persona`` become the null level ``"none"``.
    unit : str or sequence of str, optional
        Extra key columns to keep, e.g. ``"question"`` for a per-question t-test.

    Returns
    -------
    DataFrame
        One row per cell (keys + unit): ``iden_disagree``, ``iden_shift``,
        ``base_disagree``, ``base_shift`` (int64), ``conversations`` (how many
        conversations the cell holds, including those without a counted transition).

    Notes
    -----
    See the module docstring for the exact transition rule (seed 003, Eqs. 1-2).
    λ_iden = iden_shift / iden_disagree and λ_base = base_shift / base_disagree
    (:func:`conv_shift_rates`).
    """
    _check_opinions(opinions)
    cols = [*as_list(keys, "keys"), *as_list(unit, "unit")]
    conv_code, uniques = pd.factorize(opinions["conversation"], sort=False)
    op_code, _ = pd.factorize(opinions["opinion"], use_na_sentinel=True)
    frame = pd.DataFrame(
        {
            "c": conv_code,
            "r": pd.to_numeric(opinions["round"]).to_numpy(np.int64),
            "o": op_code,
        }
    )
    is_iden = (opinions["role"] == IDENTITY).to_numpy()
    wide = frame[is_iden].merge(frame[~is_iden], on=["c", "r"], how="outer", suffixes=("_i", "_b"))
    wide[["o_i", "o_b"]] = wide[["o_i", "o_b"]].fillna(-1).astype(np.int64)
    prev = wide.assign(r=wide["r"] + 1)
    trans = wide.merge(prev, on=["c", "r"], how="inner", suffixes=("", "_p"))
    ic, bc = trans["o_i"].to_numpy(), trans["o_b"].to_numpy()
    ip, bp = trans["o_i_p"].to_numpy(), trans["o_b_p"].to_numpy()
    prior = (ip >= 0) & (bp >= 0) & (ip != bp)
    iden_dis = prior & (ic >= 0)
    base_dis = prior & (bc >= 0)
    n = len(uniques)
    c = trans["c"].to_numpy()

    def tally(mask: np.ndarray) -> np.ndarray:
        return np.bincount(c[mask], minlength=n).astype(np.int64)

    per = _conversation_keys(opinions, conversations, pd.Index(uniques), cols)
    per["iden_disagree"] = tally(iden_dis)
    per["iden_shift"] = tally(iden_dis & (ic == bp))
    per["base_disagree"] = tally(base_dis)
    per["base_shift"] = tally(base_dis & (bc == ip))
    per["conversations"] = 1
    out = per.groupby(cols, sort=True, observed=True, dropna=False)[
        [*COUNTS, "conversations"]
    ].sum()
    return out.reset_index()
