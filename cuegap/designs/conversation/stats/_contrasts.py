r"""The identity, reveal and instantiation contrasts of seed 003 (§5 and Appendix B).

With λ(d, i, c) the pooled shift rate of :func:`conv_shift_rates` for identity-agent
demographics d (∅ = ``"none"``), instantiation i (``"human"`` / ``"ai"``) and reveal
condition c, persona "[varied]" (pooled), and the reveal contrast
ΔRC λ_base(d, i) = λ_base(d, i, revealed) − λ_base(d, i, anonymous):

===================== ============================================== ==============
``contrast``          definition                                     seed 003
===================== ============================================== ==============
``demo_iden_null``    ΔDemo λ_iden(d, ∅, i) = λ_iden(d, i, anon.)     §5.1.1, Fig. 3,
                      − λ_iden(∅, i, anon.)                          App. B.1
``demo_iden_pair``    ΔDemo λ_iden(d1, d2, i), (d1, d2) = (disadv.,   §5.1.2, Fig. 4
                      adv.): λ_iden(d1, i, anon.) − λ_iden(d2, i,
                      anon.)
``demo_rc_base_pair`` ΔDemoΔRC λ_base(d1, d2, i) = ΔRC λ_base(d1, i)  §5.2.1, Fig. 5
                      − ΔRC λ_base(d2, i), (d1, d2) = (disadv., adv.)
``inst_rc_base``      ΔInstΔRC λ_base(d) = ΔRC λ_base(d, human)       §5.2.2, Fig. 6
                      − ΔRC λ_base(d, AI)
``demo_rc_base_null`` ΔDemoΔRC λ_base(d, ∅, i) = ΔRC λ_base(d, i)     App. B.2
                      − ΔRC λ_base(∅, i)
===================== ============================================== ==============

The self-perspective contrasts fix the reveal condition to anonymous (§5.1); the
other-perspective ones use revealed and anonymous only (MAC-Fairness's partial reveal
conditions are ignored). An *evaluation condition* is (system, benchmark, demographic or
pair, instantiation); for ``inst_rc_base`` it is (system, benchmark, demographic), with
``instantiation`` = ``"human-ai"``. Where a contrast has no reference demographic the
``reference`` column holds ``"-"``.

With ``unit`` (e.g. ``"persona"``) every λ is computed within each level of the unit
column and the contrast is taken within that level: the paired per-unit differences a
one-sample t-test runs over (:func:`conv_tests`). A λ without disagreement is NaN and so
is every contrast that uses it.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from cuegap.designs.conversation.stats._frame import (
    AI,
    ANONYMOUS,
    CELL,
    DEFAULT_PAIRS,
    HUMAN,
    NA,
    NULL,
    REVEALED,
    check_counts,
    check_unit,
)
from cuegap.designs.conversation.stats._rates import pooled_rates

__all__ = ["CONTRASTS", "conv_contrasts"]

#: Contrast names, in the paper's order of presentation.
CONTRASTS = (
    "demo_iden_null",
    "demo_iden_pair",
    "demo_rc_base_pair",
    "inst_rc_base",
    "demo_rc_base_null",
)
#: Key columns of one evaluation condition (before the unit).
CONDITION = ("contrast", "system", "benchmark", "demographic", "reference", "instantiation")


def _wide(rates: pd.DataFrame, idx: list[str], column: str, value: str) -> pd.DataFrame:
    """``value`` indexed by ``idx`` with one column per level of ``column``."""
    if rates.empty:
        return pd.DataFrame(index=pd.MultiIndex.from_tuples([], names=idx))
    return rates.set_index([*idx, column])[value].unstack(column)


def _diffs(
    wide: pd.DataFrame, pairs: Sequence[tuple[str, str]], name: str, inst: str | None
) -> pd.DataFrame:
    """Column differences ``wide[a] − wide[b]`` stacked long, one block per pair."""
    parts = []
    for a, b in pairs:
        if a not in wide.columns or b not in wide.columns:
            continue
        est = (wide[a] - wide[b]).rename("estimate").reset_index()
        est.insert(0, "contrast", name)
        est["demographic"] = a
        est["reference"] = b
        if inst is not None:
            est["instantiation"] = inst
        parts.append(est)
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


def _check_pairs(pairs: Sequence[tuple[str, str]]) -> list[tuple[str, str]]:
    out = []
    for p in pairs:
        if isinstance(p, str) or len(p) != 2 or not all(isinstance(x, str) for x in p):
            raise ValueError(
                f"pairs must hold (disadvantaged, advantaged) pairs of labels, but got {p!r}"
            )
        out.append((p[0], p[1]))
    return out


def conv_contrasts(
    counts: pd.DataFrame,
    *,
    unit: str | None = None,
    pairs: Sequence[tuple[str, str]] = DEFAULT_PAIRS,
    contrasts: Sequence[str] = CONTRASTS,
    inst_null: bool = False,
) -> pd.DataFrame:
    """The ``conv_contrasts`` table: every contrast of seed 003 §5 / App. B.

    Parameters
    ----------
    counts : DataFrame
        The transition count frame (see :mod:`cuegap.designs.conversation.stats`).
    unit : str, optional
        None (default): one pooled contrast per evaluation condition. A column name
        (``"persona"``, ``"question"``, ``"category"``): one contrast per evaluation
        condition and unit level, each from λ's computed within that level.
    pairs : sequence of (str, str), default (("black", "white"), ("older", "young"),
        ("female", "male"))
        (disadvantaged, advantaged) demographic pairs of the ``*_pair`` contrasts. A pair
        with a level absent from the data is skipped.
    contrasts : sequence of str, default all five
        Which contrasts to compute (names in :data:`CONTRASTS`).
    inst_null : bool, default False
        Also compute ``inst_rc_base`` for the null demographic.

    Returns
    -------
    DataFrame
        Columns ``contrast``, ``system``, ``benchmark``, [``unit``], ``demographic``,
        ``reference``, ``instantiation``, ``estimate`` (a difference of shift rates,
        in [−1, 1] or [−2, 2] for the reveal contrasts; NaN where a λ is undefined).

    Raises
    ------
    ValueError
        On a bad count frame, an unknown contrast name, a malformed pair or a ``unit``
        that is not a column.
    """
    unknown = [c for c in contrasts if c not in CONTRASTS]
    if unknown:
        raise ValueError(f"unknown contrast {unknown[0]!r}; known: {', '.join(CONTRASTS)}")
    pairs = _check_pairs(pairs)
    check_unit(unit, counts)
    units = [unit] if unit else []
    keys = [*CELL, *[u for u in units if u not in CELL]]
    counts = check_counts(counts, keys=keys)
    by = ["system", "benchmark", *units, "demographics", "instantiation", "reveal"]
    rates = pooled_rates(counts, by)
    idx = ["system", "benchmark", *units]
    levels = sorted(set(rates["demographics"]) - {NULL})
    null_pairs = [(d, NULL) for d in levels]
    parts = []

    iden = _wide(
        rates[rates["reveal"] == ANONYMOUS], [*idx, "instantiation"], "demographics", "lambda_iden"
    )
    if "demo_iden_null" in contrasts:
        parts.append(_diffs(iden, null_pairs, "demo_iden_null", None))
    if "demo_iden_pair" in contrasts:
        parts.append(_diffs(iden, pairs, "demo_iden_pair", None))

    base = rates[rates["reveal"].isin([REVEALED, ANONYMOUS])]
    rc = _wide(base, [*idx, "demographics", "instantiation"], "reveal", "lambda_base")
    if REVEALED in rc.columns and ANONYMOUS in rc.columns:
        drc = (rc[REVEALED] - rc[ANONYMOUS]).rename("drc").reset_index()
        by_demo = _wide(drc, [*idx, "instantiation"], "demographics", "drc")
        if "demo_rc_base_pair" in contrasts:
            parts.append(_diffs(by_demo, pairs, "demo_rc_base_pair", None))
        if "demo_rc_base_null" in contrasts:
            parts.append(_diffs(by_demo, null_pairs, "demo_rc_base_null", None))
        if "inst_rc_base" in contrasts:
            keep = drc if inst_null else drc[drc["demographics"] != NULL]
            by_inst = _wide(keep, [*idx, "demographics"], "instantiation", "drc")
            est = _diffs(by_inst, [(HUMAN, AI)], "inst_rc_base", f"{HUMAN}-{AI}")
            if not est.empty:
                est["demographic"] = est.pop("demographics")
                est["reference"] = NA
            parts.append(est)

    cols = [*CONDITION[:3], *units, *CONDITION[3:], "estimate"]
    parts = [p for p in parts if not p.empty]
    if not parts:
        return pd.DataFrame(
            {c: pd.Series(dtype=float if c == "estimate" else object) for c in cols}
        )
    out = pd.concat(parts, ignore_index=True)[cols]
    order = {c: i for i, c in enumerate(CONTRASTS)}
    out = out.sort_values([*CONDITION[1:3], *units, *CONDITION[3:]], kind="stable").sort_values(
        "contrast", key=lambda s: s.map(order), kind="stable"
    )
    return out.reset_index(drop=True)
