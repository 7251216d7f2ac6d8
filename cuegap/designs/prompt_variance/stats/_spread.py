r"""The spread that prompt construction alone gives a score or gap, and whether a gap
survives it (issue 15, "beyond the paper").

Format spread
-------------
Per group, with combination means ȳ_c (replicate means) over k combinations, the
one-way ANOVA mean squares MS_between, MS_within and n₀ = (N − Σ n_c² / N) / (k − 1)
(= r in a balanced design):

* ``grand_mean`` = mean of the ȳ_c (every combination weighted equally);
* ``sd_format`` = √max(0, (MS_between − MS_within) / n₀): the method-of-moments SD of the
  true combination means, i.e. of prompt construction alone with decoding noise taken
  out (the one-way random-effects ANOVA estimator, truncated at 0);
* ``sd_means``: the SD of the ȳ_c as observed (decoding noise included);
* ``dev_q05``, ``dev_q95``: 5th and 95th percentiles of ȳ_c − grand_mean;
* ``se_sampling`` = √(MS_within · Σ 1/n_c) / k: the standard error of ``grand_mean`` from
  decoding noise alone.

Format sensitivity
------------------
For a gap g (e.g. a cue gap, or any score) with standard error se and format spread
s = ``sd_format``, the gap under a prompt format drawn at random is modelled as
G_f = g + δ_f, δ_f ~ N(0, s²):

* ``p_sign_kept`` = Φ(\|g\| / s): the probability that the format alone leaves the sign
  of the gap as estimated (1 when s = 0 and g ≠ 0; ½ when g = 0);
* ``p_sign_kept_total`` = Φ(\|g\| / √(se² + s²)): the same with the estimation error too;
* ``zone``: where g lies, ``negative`` / ``positive`` (``zero`` if g = 0); with a practical
  threshold δ: ``below`` (g ≤ −δ), ``within`` (\|g\| < δ) or ``above`` (g ≥ δ);
* ``p_same_zone``: P(G_f stays in g's zone): ``p_sign_kept`` without δ (for g = 0: 1 if
  s = 0, else 0); with δ, Φ((\|g\| − δ)/s) outside the band and
  Φ((δ − g)/s) − Φ((−δ − g)/s) inside it;
* ``format_sensitive`` = ``p_same_zone`` < ``level``.

The rule uses the format spread only: estimation error is the verdict's business (a gap
whose sign the data do not settle is *inconclusive*, whatever the formats do). A gap is
format-sensitive when a change of prompt format alone would, with probability
1 − level or more, move it to another verdict zone: across zero (its sign), or, with δ,
across ±δ (a pass that formats can turn into a flag, or the reverse). Missing g or s gives
``format_sensitive`` = <NA>.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
from scipy.stats import norm

from cuegap.designs.prompt_variance.stats._anova import pv_anova
from cuegap.designs.prompt_variance.stats._frame import BY, as_names, check_table, combination_means

__all__ = ["pv_format_sensitivity", "pv_format_spread"]


def pv_format_spread(
    scores: pd.DataFrame,
    *,
    factors: str | Sequence[str],
    by: Sequence[str] = BY,
    value: str = "score",
) -> pd.DataFrame:
    """The spread of a score (or per-run gap) that prompt construction alone produces.

    Parameters
    ----------
    scores : DataFrame
        A per-run table with ``by``, ``factors``, ``replicate`` and ``value`` (e.g.
        ``pv_scores``, or a per-run cue gap).
    factors : str or sequence of str
        Factor columns.
    by : sequence of str, default ("system", "category", "metric")
        One row per distinct value.
    value : str, default "score"
        The score or gap column.

    Returns
    -------
    DataFrame
        ``*by``, ``n_combinations``, ``n_runs``, ``grand_mean``, ``se_sampling``,
        ``sd_means``, ``sd_format``, ``dev_q05``, ``dev_q95``. See the module docstring.
    """
    factors = as_names(factors, "factors")
    by = as_names(by, "by")
    df = check_table(scores, by=by, factors=factors, value=value, what="pv_spread scores")
    means = combination_means(df, by=by, factors=factors, value=value)
    g = means.groupby(by, sort=True, dropna=False)
    out = g.agg(grand_mean=("mean", "mean"), sd_means=("mean", "std"))
    means = means.join(out["grand_mean"], on=by)
    dev = (means["mean"] - means["grand_mean"]).groupby([means[c] for c in by], dropna=False)
    out["dev_q05"] = dev.quantile(0.05)
    out["dev_q95"] = dev.quantile(0.95)
    inv_n = (1.0 / means["n"]).groupby([means[c] for c in by], dropna=False).sum()
    a = pv_anova(df, factors=factors, by=by, value=value, family=None).set_index(by)
    a = a.reindex(out.index)
    k = a["n_combinations"].to_numpy(float)
    n = a["n_runs"].to_numpy(float)
    n_sq = means.assign(_n2=means["n"] ** 2).groupby(by, sort=True, dropna=False)["_n2"].sum()
    with np.errstate(divide="ignore", invalid="ignore"):
        ms_b = a["ss_between"].to_numpy(float) / (k - 1)
        ms_w = a["ss_within"].to_numpy(float) / (n - k)
        n0 = (n - n_sq.reindex(out.index).to_numpy(float) / n) / (k - 1)
        var_f = np.maximum(0.0, (ms_b - ms_w) / n0)
        se = np.sqrt(ms_w * inv_n.reindex(out.index).to_numpy(float)) / k
    ok = (k >= 2) & (n - k >= 1)
    out["sd_format"] = np.where(ok, np.sqrt(var_f), np.nan)
    out["se_sampling"] = np.where(n - k >= 1, se, np.nan)
    out["n_combinations"] = k.astype("int64")
    out["n_runs"] = n.astype("int64")
    cols = [
        "n_combinations",
        "n_runs",
        "grand_mean",
        "se_sampling",
        "sd_means",
        "sd_format",
        "dev_q05",
        "dev_q95",
    ]
    return out[cols].reset_index()


def _phi_ratio(num: np.ndarray, sd: np.ndarray) -> np.ndarray:
    """Φ(num / sd) with sd = 0 read as a point mass: 1 if num > 0, ½ if num = 0."""
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(sd > 0, num / np.where(sd > 0, sd, 1.0), np.sign(num) * np.inf)
    return np.where(np.isnan(num) | np.isnan(sd), np.nan, norm.cdf(z))


def pv_format_sensitivity(
    gaps: pd.DataFrame,
    spread: pd.DataFrame,
    *,
    on: str | Sequence[str] | None = None,
    gap: str = "gap",
    se: str = "se",
    sd: str = "sd_format",
    level: float = 0.95,
    delta: float | None = None,
) -> pd.DataFrame:
    """Whether each gap keeps its sign (and verdict zone) across prompt formats.

    Parameters
    ----------
    gaps : DataFrame
        One row per gap (e.g. per system) with ``gap`` and ``se`` columns.
    spread : DataFrame
        The format spread of the same gaps, with an ``sd`` column (e.g.
        :func:`pv_format_spread` of the per-run gaps).
    on : str or sequence of str, optional
        Join columns; by default the columns the two tables share, apart from
        ``gap``, ``se`` and ``sd``.
    gap, se, sd : str
        Column names of the gap, its standard error and the format spread.
    level : float, default 0.95
        Probability in (0.5, 1) that the verdict zone must keep for the gap not to be
        format-sensitive.
    delta : float, optional
        Practical threshold δ > 0 of the verdict policy (same units as the gap).

    Returns
    -------
    DataFrame
        ``gaps`` joined with ``sd`` and ``p_sign_kept``, ``p_sign_kept_total``, ``zone``,
        ``p_same_zone``, ``format_sensitive`` (nullable boolean). Rule: module docstring.
    """
    for name, t in (("gaps", gaps), ("spread", spread)):
        if not isinstance(t, pd.DataFrame):
            raise TypeError(f"{name} must be a pandas DataFrame, but got {type(t).__name__}")
    if not 0.5 < level < 1:
        raise ValueError(f"level should be in the interval (0.5, 1) but got {level}")
    if delta is not None and not delta > 0:
        raise ValueError(f"delta should be a positive number or None but got {delta}")
    if on is None:
        on = [c for c in gaps.columns if c in spread.columns and c not in (gap, se, sd)]
    on = as_names(on, "on")
    for name, t, need in (("gaps", gaps, [*on, gap, se]), ("spread", spread, [*on, sd])):
        missing = [c for c in need if c not in t.columns]
        if missing:
            raise ValueError(f"{name} needs columns {', '.join(missing)}; got {list(t.columns)}")
    if not on:
        raise ValueError("gaps and spread share no columns to join on; pass on=[...]")
    out = gaps.merge(spread[[*on, sd]], on=on, how="left", validate="many_to_one")
    g = pd.to_numeric(out[gap], errors="raise").to_numpy(float)
    e = pd.to_numeric(out[se], errors="raise").to_numpy(float)
    s = pd.to_numeric(out[sd], errors="raise").to_numpy(float)
    if np.any(e < 0) or np.any(s < 0):
        raise ValueError(f"columns {se!r} and {sd!r} must be non-negative")
    a = np.abs(g)
    out["p_sign_kept"] = _phi_ratio(a, s)
    out["p_sign_kept_total"] = _phi_ratio(a, np.sqrt(e**2 + s**2))
    if delta is None:
        out["zone"] = np.select([g > 0, g < 0, g == 0], ["positive", "negative", "zero"], "")
        # A gap of exactly 0 stays "zero" only if the formats do not move it at all.
        p_zone = np.where(g == 0, np.where(s > 0, 0.0, 1.0), out["p_sign_kept"].to_numpy(float))
        p_zone = np.where(np.isnan(g) | np.isnan(s), np.nan, p_zone)
    else:
        inside = a < delta
        out["zone"] = np.select([inside, g >= delta, g <= -delta], ["within", "above", "below"], "")
        band = _phi_ratio(delta - g, s) - (1 - _phi_ratio(delta + g, s))
        p_zone = np.where(inside, band, _phi_ratio(a - delta, s))
        p_zone = np.where(np.isnan(g) | np.isnan(s), np.nan, p_zone)
    out["p_same_zone"] = p_zone
    flag = pd.array(p_zone < level, dtype="boolean")
    flag[np.isnan(p_zone)] = pd.NA
    out["format_sensitive"] = flag
    return out
