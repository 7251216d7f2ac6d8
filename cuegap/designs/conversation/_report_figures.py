"""Figures of the conversation report (seed 003 §4-5): shift rates per demographic and
instantiation, and contrast forest plots with one panel per benchmark. House style of
:mod:`cuegap.designs.dilemma._report_figures`: Okabe-Ito colours always paired with a marker, inline
SVG, deterministic bytes. System and demographic names are drawn as text by matplotlib
(never markup) and the SVG is escaped by it."""

from __future__ import annotations

import hashlib

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from scipy import stats

from cuegap.reports import OKABE_ITO, legend_above, to_svg
from cuegap.reports import figure_style as _style

#: (instantiation, reveal) -> (colour, marker, label): never colour alone.
SERIES = {
    ("human", "revealed"): (OKABE_ITO["blue"], "o", "human, revealed"),
    ("human", "anonymous"): (OKABE_ITO["sky"], "^", "human, anonymous"),
    ("ai", "revealed"): (OKABE_ITO["vermillion"], "s", "AI, revealed"),
    ("ai", "anonymous"): (OKABE_ITO["orange"], "D", "AI, anonymous"),
}
AGENTS = (("iden", "λ_iden (identity agent moves)"), ("base", "λ_base (baseline moves)"))


def _tag(text: str) -> str:
    """A stable id fragment for untrusted text (Python's ``hash`` changes per process)."""
    return hashlib.sha256(str(text).encode("utf-8")).hexdigest()[:10]


def _wilson(k: np.ndarray, n: np.ndarray, level: float = 0.9) -> tuple[np.ndarray, np.ndarray]:
    z = stats.norm.ppf(0.5 + level / 2)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = k / n
        centre = (p + z**2 / (2 * n)) / (1 + z**2 / n)
        half = z * np.sqrt(p * (1 - p) / n + z**2 / (4 * n**2)) / (1 + z**2 / n)
    return centre - half, centre + half


def conv_rates_plot(rates: pd.DataFrame, system: str) -> str | None:
    """λ_iden and λ_base of one system per demographic, instantiation and reveal condition,
    benchmarks pooled (counts summed), with 90% Wilson intervals.

    Parameters
    ----------
    rates : DataFrame
        The ``conv_shift_rates`` table.
    system : str
    """
    df = rates[rates["system"] == system]
    if df.empty:
        return None
    keys = ["demographics", "instantiation", "reveal", "agent"]
    g = df.groupby(keys, as_index=False)[["disagreements", "shifts"]].sum()
    k, n = g["shifts"].to_numpy(float), g["disagreements"].to_numpy(float)
    g["rate"] = np.where(n > 0, k / np.where(n > 0, n, 1), np.nan)
    g["lo"], g["hi"] = _wilson(k, n)
    demos = sorted(set(g["demographics"]), key=lambda d: (d != "none", str(d)))
    bounds = g[["lo", "hi"]].to_numpy(float)
    bounds = bounds[np.isfinite(bounds)]
    lims = (0.0, 1.0)
    if bounds.size:  # zoom to the data, in steps of 0.1, within [0, 1]
        lims = (max(0.0, np.floor(bounds.min() * 10 - 0.5) / 10),
                min(1.0, np.ceil(bounds.max() * 10 + 0.5) / 10))  # fmt: skip
    y0 = {d: len(demos) - 1 - i for i, d in enumerate(demos)}
    with _style():
        fig, axes = plt.subplots(1, 2, figsize=(7.0, 0.42 * len(demos) + 1.3), sharey=True)
        for ax, (agent, label) in zip(axes, AGENTS, strict=True):
            for j, ((inst, reveal), (colour, marker, name)) in enumerate(SERIES.items()):
                sub = g[(g["agent"] == agent) & (g["instantiation"] == inst)
                        & (g["reveal"] == reveal)]  # fmt: skip
                off = 0.27 - 0.18 * j
                for r in sub.itertuples():
                    if not np.isfinite(r.rate):
                        continue
                    y = y0[r.demographics] + off
                    ax.plot([r.lo, r.hi], [y, y], color=colour, lw=1.1)
                    ax.plot(r.rate, y, marker=marker, color=colour, ms=4, ls="none")
                ax.plot([], [], marker=marker, color=colour, ls="none", label=name)
            ax.set_xlabel(f"{label}, 90% interval")
            ax.set_xlim(*lims)
        axes[0].set_yticks(range(len(demos)), [str(d) for d in demos][::-1])
        axes[0].set_ylim(-0.6, len(demos) - 0.4)
        legend_above(fig, axes[1], fontsize=6.5)
        return to_svg(fig, f"conv-rates-{_tag(system)}")


def conv_forest_plot(rows: pd.DataFrame, *, delta: float, title: str) -> str | None:
    """One contrast per benchmark side by side: estimate and interval per (system,
    condition), the ±δ band, filled markers where the test or posterior supports a sign.

    Parameters
    ----------
    rows : DataFrame
        ``system``, ``condition`` (label), ``benchmark``, ``estimate``, ``low``, ``high``,
        ``significant`` (bool).
    delta : float
        The policy's δ (drawn as a band).
    title : str
        The contrast's name (x-axis label).
    """
    if rows.empty:
        return None
    benches = sorted(set(rows["benchmark"]), key=str)
    labels = rows[["system", "condition"]].drop_duplicates().sort_values(["system", "condition"])
    ys = {(r.system, r.condition): len(labels) - 1 - i for i, r in enumerate(labels.itertuples())}
    finite = rows[["low", "high", "estimate"]].to_numpy(float)
    span = np.nanmax(np.abs(finite)) if np.isfinite(finite).any() else 0.1
    lim = max(span * 1.1, 2 * delta)
    with _style():
        fig, axes = plt.subplots(
            1, len(benches), figsize=(7.0, 0.2 * len(labels) + 1.2), sharey=True, squeeze=False
        )
        for ax, bench in zip(axes[0], benches, strict=True):
            ax.axvspan(-delta, delta, color="#eeeeee", lw=0)
            ax.axvline(0, color="black", lw=0.6)
            for r in rows[rows["benchmark"] == bench].itertuples():
                y = ys[(r.system, r.condition)]
                colour = OKABE_ITO["vermillion"] if r.significant else OKABE_ITO["grey"]
                if np.isfinite(r.low) and np.isfinite(r.high):
                    ax.plot([r.low, r.high], [y, y], color=colour, lw=1.0)
                if np.isfinite(r.estimate):
                    face = colour if r.significant else "white"
                    ax.plot(r.estimate, y, "o", ms=3.5, color=colour, mfc=face, ls="none")
            ax.set_title(str(bench), fontsize=8)
            ax.set_xlim(-lim, lim)
            ax.tick_params(axis="x", labelsize=6.5)
        names = [f"{s}: {c}" for s, c in labels[["system", "condition"]].itertuples(index=False)]
        axes[0][0].set_yticks(range(len(labels)), names[::-1], fontsize=6)
        axes[0][0].set_ylim(-0.7, len(labels) - 0.3)
        fig.supxlabel(f"{title}; grey band ±δ = {delta:g}; filled = significant", fontsize=7)
        return to_svg(fig, f"conv-forest-{_tag(title)}")
