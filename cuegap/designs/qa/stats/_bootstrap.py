r"""Bootstrap intervals for the QA scores, the system scores and the explicit-implicit gap.

Two resampling units:

* ``unit="answer"`` (default; the count table of the input contract carries no item or
  template identifier): each cell (system, strategy, cue, context, dimension, subgroup,
  polarity, gold) is redrawn as a multinomial sample of its own size from its observed
  answer shares (target, non-target, unknown, unparsable). That is the parametric
  bootstrap of a model where the answers within a cell are exchangeable: it captures the
  sampling noise of the answers, not extra variation between templates of the same cell,
  so with heterogeneous templates its intervals are too narrow.
* ``unit="template"`` (when the counts also carry a ``template`` column): templates are
  resampled with replacement within each system, one set of weights per system shared by
  every strategy, cue and context (as the dilemma bootstrap resamples dilemmas), so
  between-template variation is in the intervals and gaps between settings that share
  templates are paired.

Replicates reuse the point-estimate code (:func:`~cuegap.designs.qa.stats._scores.metrics`) on
resampled feature counts, and the percentile summary and per-system random streams of the
dilemma bootstrap (:mod:`cuegap.designs.dilemma.stats._bootstrap`).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Literal

import numpy as np
import pandas as pd
from scipy import sparse

from cuegap.designs.qa.stats._aggregate import (
    BIAS_METRICS,
    SYSTEM_KEYS,
    qa_cue_gap,
    qa_system_scores,
)
from cuegap.designs.qa.stats._scores import (
    ALL_ANSWERS,
    FEATURES,
    METRICS,
    assemble,
    cell_table,
    check_counts,
    feature_matrix,
    metrics,
    score_keys,
    score_table,
)
from cuegap.models import summarise as _summarise
from cuegap.models import system_rng as _system_rng

__all__ = ["qa_bootstrap"]

_CHUNK = 256


def _attach(table: pd.DataFrame, reps: dict[str, np.ndarray], level: float) -> pd.DataFrame:
    out = table.copy()
    for name, values in reps.items():
        sd, low, high, _ = _summarise(values, level)
        out[f"{name}_sd"], out[f"{name}_low"], out[f"{name}_high"] = sd, low, high
    return out


def _row_index(left: pd.DataFrame, right: pd.DataFrame, keys: list[str]) -> np.ndarray:
    """For every row of ``left``, the position of the row of ``right`` with the same keys."""
    pos = right[keys].assign(_pos=np.arange(len(right)))
    merged = left[keys].merge(pos, on=keys, how="left", validate="many_to_one")
    if merged["_pos"].isna().any():  # pragma: no cover - guards the pairing contract
        raise RuntimeError("QA bootstrap: a row has no partner")
    return merged["_pos"].to_numpy(dtype=np.int64)


def _nanmean_by(values: np.ndarray, member: sparse.csr_array) -> np.ndarray:
    """Mean over the member rows of each output column, skipping NaN: (B, r) -> (B, k).

    ``member`` is the sparse (k, r) indicator of which input column feeds which output.
    """
    ok = ~np.isnan(values)
    total = (member @ np.where(ok, values, 0.0).T).T
    count = (member @ ok.astype(np.float64).T).T
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(count > 0, total / np.where(count > 0, count, 1.0), np.nan)


def _gap_reps(
    gaps: pd.DataFrame, point: pd.DataFrame, reps: dict[str, np.ndarray], keys: list[str]
) -> np.ndarray:
    """Replicates of every gap row: (B, g)."""
    pair = [k for k in keys if k != "cue"]
    e = _row_index(gaps[pair].assign(cue="explicit"), point, keys)
    i = _row_index(gaps[pair].assign(cue="implicit"), point, keys)
    out = np.empty((next(iter(reps.values())).shape[0], len(gaps)))
    for j, metric in enumerate(gaps["metric"]):
        r = reps[metric]
        diff = r[:, i[j]] - r[:, e[j]]
        out[:, j] = diff if metric in BIAS_METRICS else -diff
    return out


def _gap_table(gaps: pd.DataFrame, reps: np.ndarray, level: float, delta: float) -> pd.DataFrame:
    out = _attach(gaps, {"gap": reps}, level)
    valid = ~np.isnan(reps)
    n_valid = valid.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        gt = np.where(valid, reps > delta, False).sum(axis=0) / n_valid
        within = np.where(valid, np.abs(reps) < delta, False).sum(axis=0) / n_valid
    out["p_gap_gt_delta"] = np.where(n_valid > 0, gt, np.nan)
    out["p_abs_lt_delta"] = np.where(n_valid > 0, within, np.nan)
    out["delta"] = float(delta)
    out["n_valid"] = n_valid.astype("int64")
    return out


def _replicates(
    answers: np.ndarray,
    fmap: np.ndarray,
    units: pd.DataFrame,
    take: np.ndarray,
    rng: np.random.Generator,
    n_boot: int,
) -> Iterator[tuple[int, np.ndarray]]:
    """Chunks of replicate feature counts of one system's units: (start, (b, 8, u)).

    Without a ``template`` column in ``units``, each unit (cell) is redrawn as a
    multinomial sample of its answers; with one, templates are resampled with replacement
    and a unit's counts enter a replicate as often as its template was drawn.
    """
    base = np.einsum("ca,caf->fc", answers.astype(np.float64), fmap)  # (8, u)
    if "template" in units.columns:
        _, tcode = np.unique(units["template"].to_numpy()[take].astype(str), return_inverse=True)
        n_t = int(tcode.max()) + 1
        for start in range(0, n_boot, _CHUNK):
            b = min(_CHUNK, n_boot - start)
            weights = rng.multinomial(n_t, np.full(n_t, 1.0 / n_t), size=b).astype(np.float64)
            yield start, weights[:, None, tcode] * base[None]
        return
    # Without answers to items lacking a target, draw over the first four answers only: the
    # random stream, and so every replicate, is then what it was before those answers existed.
    k = answers.shape[1] if answers[:, 4:].any() else 4
    size = answers.sum(axis=1)
    p = np.where(size[:, None] > 0, answers[:, :k] / np.maximum(size, 1)[:, None], 1 / k)
    for start in range(0, n_boot, _CHUNK):
        b = min(_CHUNK, n_boot - start)
        draws = rng.multinomial(size, p, size=(b, len(size))).astype(np.float64)
        yield start, np.einsum("bca,caf->bfc", draws, fmap[:, :k])


def _check(n_boot: object, level: object, delta: object) -> None:
    if isinstance(n_boot, bool) or not isinstance(n_boot, int | np.integer) or n_boot < 2:
        raise ValueError(f"n_boot must be an integer >= 2, but got {n_boot!r}")
    if isinstance(level, bool) or not (isinstance(level, float | int) and 0 < level < 1):
        raise ValueError(f"The value of level should be in the interval (0, 1) but got {level!r}")
    if isinstance(delta, bool) or not (isinstance(delta, float | int) and 0 <= delta <= 2):
        raise ValueError(f"delta is on the bias-score scale and must be in [0, 2], got {delta!r}")


def qa_bootstrap(
    counts: pd.DataFrame,
    *,
    n_boot: int = 1000,
    seed: int = 2026,
    level: float = 0.9,
    delta: float = 0.05,
    by_subgroup: bool = False,
    unit: Literal["answer", "template"] = "answer",
) -> dict[str, pd.DataFrame]:
    r"""Percentile intervals and verdict probabilities for every QA table.

    Parameters
    ----------
    counts : DataFrame
        The QA count table (:mod:`cuegap.designs.qa.stats`).
    n_boot : int, default 1000
        Replicates (at least 2).
    seed : int, default 2026
        Seed. System *s* draws from ``numpy.random.default_rng([seed, h(s)])`` with ``h`` a
        stable hash of its name, as the dilemma bootstrap does: a system's replicates do not
        depend on the other systems present or on the row order.
    level : float, default 0.9
        Coverage of the central percentile intervals.
    delta : float, default 0.05
        Practical threshold δ for ``p_gap_gt_delta`` and ``p_abs_lt_delta``, on the scale of
        the scores (a bias score runs from −1 to 1).
    by_subgroup : bool, default False
        Give the ``"scores"`` table per subgroup as well (system scores always average the
        per-dimension scores).
    unit : {"answer", "template"}, default "answer"
        Resampling unit (module docstring); ``"template"`` needs a ``template`` column.

    Returns
    -------
    dict of str to DataFrame
        Every table keeps its point columns (equal to the plain functions' output) and adds,
        per statistic ``<m>``, ``<m>_sd`` (SD over the replicates where it is defined,
        ``ddof=1``), ``<m>_low`` and ``<m>_high`` (the central ``level`` percentile
        interval).

        ``"scores"``
            :func:`qa_scores` with intervals for the six metrics.
        ``"system_scores"``
            :func:`qa_system_scores` of the per-dimension scores, with intervals.
        ``"cue_gap"``
            :func:`qa_cue_gap` of the system scores, with ``gap_sd``, ``gap_low``,
            ``gap_high``, ``p_gap_gt_delta`` = P*(gap > δ), ``p_abs_lt_delta``
            = P*(|gap| < δ) (shares of the valid replicates), ``delta``, ``n_valid``, and
            ``n_explicit``/``n_implicit`` (parsable answers on each side).
        ``"dimension_gap"``
            The same per dimension.

    Notes
    -----
    With ``unit="answer"``, for cell *c* with answer counts :math:`a_c`
    (:math:`n_c = \sum a_c`), replicate *b* draws
    :math:`a^{(b)}_c \sim \mathrm{Multinomial}(n_c, a_c / n_c)` independently per cell. With
    ``unit="template"``, a system's *T* templates get weights
    :math:`w_b \sim \mathrm{Multinomial}(T, (1/T, \dots, 1/T))` and
    :math:`a^{(b)}_c = \sum_t w_{bt} a_{ct}`.
    Everything downstream (feature counts, the six metrics, the means over dimensions, the
    gap with its sign convention) is recomputed from :math:`a^{(b)}` with the point-estimate
    code. A statistic undefined in a replicate (e.g. no non-unknown answers drawn) is left
    out of that statistic's summary only. The gap probabilities are the replicate shares;
    :func:`qa_verdicts` uses them when its δ equals ``delta``.
    """
    _check(n_boot, level, delta)
    if unit not in ("answer", "template"):
        raise ValueError(f"unit must be 'answer' or 'template', but got {unit!r}")
    df = check_counts(counts)
    if df.empty:
        raise ValueError("counts is empty: there is nothing to resample")
    if unit == "template":
        if "template" not in df.columns:
            raise ValueError("unit='template' needs a 'template' column in the counts")
        if df["template"].isna().any():
            row = df.index[df["template"].isna()][0]
            raise ValueError(f"qa counts: row {row!r}, column 'template': missing value")
    cells = cell_table(df)
    answers = cells[list(ALL_ANSWERS)].to_numpy(dtype=np.int64)
    fmap = feature_matrix(*(cells[c].to_numpy() for c in ("polarity", "gold", "context")))
    levels = {"dimension": score_keys(False)}
    if by_subgroup:
        levels["subgroup"] = score_keys(True)
    tables, codes, reps = {}, {}, {}
    for name, keys in levels.items():
        rows, code = score_table(cells, keys)
        feat = np.zeros((len(rows), len(FEATURES)))
        np.add.at(feat, code, np.einsum("ca,caf->cf", answers.astype(np.float64), fmap))
        tables[name], codes[name] = assemble(rows, feat), code
        reps[name] = {m: np.full((n_boot, len(rows)), np.nan) for m in METRICS}

    units = cells if unit == "answer" else cell_table(df, ["template"])
    u_answers = units[list(ALL_ANSWERS)].to_numpy(dtype=np.int64)
    u_fmap = feature_matrix(*(units[c].to_numpy() for c in ("polarity", "gold", "context")))
    u_codes = {name: _row_index(units, tables[name], keys) for name, keys in levels.items()}
    systems = units["system"].to_numpy()
    for system in sorted(pd.unique(systems), key=str):
        take = np.flatnonzero(systems == system)
        rng = _system_rng(seed, system)
        # Per level: the system's score rows, and a one-hot map from its units to them.
        maps = {}
        for name in levels:
            code = u_codes[name][take]
            out_rows = np.unique(code)
            member = np.zeros((len(take), len(out_rows)))
            member[np.arange(len(take)), np.searchsorted(out_rows, code)] = 1.0
            amb = tables[name]["context"].to_numpy()[out_rows] == "ambiguous"
            maps[name] = (out_rows, member, amb)
        for start, feats in _replicates(u_answers[take], u_fmap[take], units, take, rng, n_boot):
            for name, (out_rows, member, amb) in maps.items():
                feat = np.swapaxes(feats @ member, 1, 2)  # (b, rows, features)
                for m, values in metrics(feat, amb).items():
                    reps[name][m][start : start + len(feat), out_rows] = values

    main = "subgroup" if by_subgroup else "dimension"
    scores = _attach(tables[main], reps[main], level)
    dim = tables["dimension"]
    sys_point = qa_system_scores(dim)
    target = _row_index(dim, sys_point, list(SYSTEM_KEYS))
    member = sparse.csr_array(
        (np.ones(len(dim)), (target, np.arange(len(dim)))), shape=(len(sys_point), len(dim))
    )
    sys_reps = {m: _nanmean_by(reps["dimension"][m], member) for m in METRICS}
    system_scores = _attach(sys_point, sys_reps, level)

    out = {"scores": scores, "system_scores": system_scores}
    for name, point, r, keys in (
        ("cue_gap", sys_point, sys_reps, list(SYSTEM_KEYS)),
        ("dimension_gap", dim, reps["dimension"], score_keys(False)),
    ):
        gaps = qa_cue_gap(point)
        table = _gap_table(gaps, _gap_reps(gaps, point, r, keys), level, delta)
        parsed = point.assign(_parsed=point["n"] - point["n_unparsable"])
        pair = [k for k in keys if k != "cue"]
        for side in ("explicit", "implicit"):
            idx = _row_index(gaps[pair].assign(cue=side), parsed, keys)
            table[f"n_{side}"] = parsed["_parsed"].to_numpy()[idx].astype("int64")
        out[name] = table
    return out
