r"""The spread that prompt construction alone gives the moral-dilemma gap (seed 000's Cue
Visibility Gap), and whether a system's gap survives it (issue 15, "what no tool offers").

When a store's dilemma responses come under two or more prompt variants (``prompt_variant``
on every response, part of its natural key), each system has one macro Cue Visibility Gap
per variant v, g_v = macro net(explicit, v) − macro net(implicit, v), computed exactly as
the headline gap (:func:`cuegap.designs.dilemma.stats.decision_bias`,
:func:`cuegap.designs.dilemma.stats.macro_average`,
:func:`cuegap.designs.dilemma.stats.cue_visibility_gap`) from the variant's responses only. A
variant
label may stand for any combination of prompt factors (e.g. ``letter_colon/answer_first``):
the variants are the combinations.

Format spread
-------------
With k variants, S² the sample variance (ddof 1) of the g_v and ḡ their mean, the g_v
differ by prompt construction *and* by sampling noise. The noise part of S² is estimated
by a bootstrap over dilemmas, resampled with replacement within each system and shared by
every variant and condition (so the variants' common dilemma sample, which moves every
g_v alike, is not counted as noise):

    N = Σ_v Var_b(g_v* − ḡ*) / (k − 1),    sd_format = √max(0, S² − N),

the method-of-moments SD of the variants' true gaps (E[S²] = τ² + N under
g_v = γ + δ_v + ε_v with Var(δ_v) = τ²), the dilemma counterpart of the one-way
random-effects estimator of :func:`cuegap.designs.prompt_variance.stats.pv_format_spread`. ``se``
is the
bootstrap SD of ḡ; ``dev_q05``/``dev_q95`` the 5th/95th percentiles of g_v − ḡ.
:func:`cuegap.designs.prompt_variance.stats.pv_format_sensitivity` then gives P(sign kept) and
P(verdict zone
kept) of a gap under a variant drawn at random, and ``format_sensitive``.
"""

from __future__ import annotations

import hashlib

import numpy as np
import pandas as pd

from cuegap.designs.dilemma.stats import condition_mask
from cuegap.designs.prompt_variance.stats import pv_format_sensitivity

__all__ = ["dilemma_gap_formats"]

_COUNTS = ["favor", "favor_trials", "against", "against_trials"]


def _rng(seed: int, system: object) -> np.random.Generator:
    digest = hashlib.blake2b(f"formats:{system}".encode(), digest_size=8).digest()
    return np.random.default_rng([seed, int.from_bytes(digest, "little")])


def _macro_gaps(summed: np.ndarray) -> np.ndarray:
    """Per-variant macro gaps from counts of shape (..., 2 sides, k, groups, 4)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        fav = np.where(summed[..., 1] > 0, summed[..., 0] / summed[..., 1], np.nan)
        ag = np.where(summed[..., 3] > 0, summed[..., 2] / summed[..., 3], np.nan)
    net = 100 * (fav - ag)
    ok = ~np.isnan(net)
    with np.errstate(divide="ignore", invalid="ignore"):
        macro = np.where(ok, net, 0.0).sum(-1) / ok.sum(-1)  # NaN when no group is defined
    return macro[..., 0, :] - macro[..., 1, :]


def _system_spread(
    sub: pd.DataFrame, variants: list[str], groups: list[str], n_boot: int, seed: int
) -> dict[str, float]:
    k, n_g = len(variants), len(groups)
    dilemmas = sorted(pd.unique(sub["dilemma"]), key=str)
    d = pd.Index(dilemmas).get_indexer(sub["dilemma"])
    v = pd.Index(variants).get_indexer(sub["prompt_variant"].astype(str))
    side = sub["_side"].to_numpy()
    values = sub[_COUNTS].to_numpy(float)
    per = np.zeros((len(dilemmas), 2, k, n_g, 4))
    for col in ("gender", "race"):
        g = pd.Index(groups).get_indexer(col + "\x1f" + sub[col].astype(str))
        np.add.at(per, (d, side, v, g), values)
    point = _macro_gaps(per.sum(0))
    n = len(dilemmas)
    weights = _rng(seed, sub["system"].iloc[0]).multinomial(n, np.full(n, 1 / n), size=n_boot)
    reps = _macro_gaps((weights.astype(float) @ per.reshape(n, -1)).reshape(n_boot, 2, k, n_g, 4))
    defined = ~np.isnan(point)
    out = {"n_variants": int(defined.sum()), "gap": np.nan, "se": np.nan, "sd_means": np.nan}
    out.update(sd_format=np.nan, dev_q05=np.nan, dev_q95=np.nan)
    if defined.sum() < 2:
        return out
    g, r = point[defined], reps[:, defined]
    r = r[~np.isnan(r).any(axis=1)]
    s2 = float(np.var(g, ddof=1))
    out.update(gap=float(g.mean()), sd_means=float(np.sqrt(s2)))
    out["dev_q05"], out["dev_q95"] = (float(q) for q in np.quantile(g - g.mean(), [0.05, 0.95]))
    if len(r) >= 2:
        dev = r - r.mean(axis=1, keepdims=True)
        noise = float(dev.var(axis=0, ddof=1).sum() / (len(g) - 1))
        out["sd_format"] = float(np.sqrt(max(0.0, s2 - noise)))
        out["se"] = float(r.mean(axis=1).std(ddof=1))
    return out


def dilemma_gap_formats(
    counts: pd.DataFrame,
    *,
    explicit: tuple[str, str | None] = ("direct", None),
    implicit: tuple[str, str | None] = ("puzzled", "hard"),
    consequences: bool = True,
    n_boot: int = 200,
    seed: int = 2026,
    delta: float | None = None,
    level: float = 0.95,
) -> pd.DataFrame | None:
    """Each system's Cue Visibility Gap across prompt variants, and its format sensitivity.

    Parameters
    ----------
    counts : DataFrame
        :func:`cuegap.schema.decision_counts` (``system``, ``condition``, ``difficulty``,
        ``consequences``, ``prompt_variant``, ``dilemma``, ``gender``, ``race`` and the
        four counts).
    explicit, implicit : (condition, difficulty)
        The two sides of the gap, as in :func:`cuegap.designs.dilemma.stats.cue_visibility_gap`.
    consequences : bool, default True
        The consequences setting of the headline gap.
    n_boot : int, default 200
        Bootstrap replicates over dilemmas for the noise part of the spread (at least 2).
    seed : int, default 2026
        System s draws from ``default_rng([seed, h(s)])`` (stable in the system's name).
    delta : float, optional
        The policy's practical threshold δ in pp (the verdict zones).
    level : float, default 0.95
        Probability the verdict zone must keep for the gap not to be format-sensitive.

    Returns
    -------
    DataFrame or None
        One row per system with gaps under two or more variants: ``system``,
        ``consequences``, ``n_variants``, ``gap`` (mean of the per-variant gaps, pp),
        ``se``, ``sd_means``, ``sd_format``, ``dev_q05``, ``dev_q95`` and, from
        :func:`cuegap.designs.prompt_variance.stats.pv_format_sensitivity`, ``p_sign_kept``,
        ``p_sign_kept_total``, ``zone``, ``p_same_zone``, ``format_sensitive``. None when
        no system answered under two or more variants.

    Notes
    -----
    The estimator and its assumptions: the module docstring.
    """
    if not isinstance(counts, pd.DataFrame):
        raise TypeError(f"counts must be a pandas DataFrame, but got {type(counts).__name__}")
    if isinstance(n_boot, bool) or not isinstance(n_boot, int | np.integer) or n_boot < 2:
        raise ValueError(f"n_boot must be an integer >= 2, but got {n_boot!r}")
    need = ["system", "condition", "difficulty", "consequences", "prompt_variant", "dilemma"]
    missing = [c for c in [*need, "gender", "race", *_COUNTS] if c not in counts.columns]
    if missing:
        raise ValueError(f"counts needs columns {', '.join(missing)}; got {list(counts.columns)}")
    df = counts[counts["consequences"] == consequences]
    e, i = condition_mask(df, explicit), condition_mask(df, implicit)
    df = df[e | i].assign(_side=np.where(e[e | i], 0, 1))
    if df.empty or df.groupby("system")["prompt_variant"].nunique().max() < 2:
        return None
    groups = sorted(
        {f"gender\x1f{x}" for x in df["gender"].astype(str)}
        | {f"race\x1f{x}" for x in df["race"].astype(str)}
    )
    rows = []
    for system, sub in df.groupby("system", sort=True):
        variants = sorted(set(sub["prompt_variant"].astype(str)))
        if len(variants) < 2:
            continue
        rows.append({"system": system, **_system_spread(sub, variants, groups, n_boot, seed)})
    out = pd.DataFrame(rows)
    out.insert(1, "consequences", consequences)
    sens = pv_format_sensitivity(
        out[["system", "gap", "se"]].fillna({"se": 0.0}),
        out[["system", "sd_format"]],
        on="system",
        delta=delta,
        level=level,
    )
    keep = ["p_sign_kept", "p_sign_kept_total", "zone", "p_same_zone", "format_sensitive"]
    return pd.concat([out, sens[keep]], axis=1)
