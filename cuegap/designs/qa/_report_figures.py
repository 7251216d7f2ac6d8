"""Figures of the QA-design report (seed 001): explicit vs implicit per system, the gap
per dimension, and the prompting strategies. Same house style as the dilemma figures
(:mod:`cuegap.designs.dilemma._report_figures`): Okabe-Ito colours with distinct markers, inline
SVG,
deterministic bytes."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from cuegap.reports import OKABE_ITO, VERDICT_STYLE, legend_above, to_svg
from cuegap.reports import figure_style as _style

CUE_STYLE = {  # colour and marker: never colour alone
    "explicit": (OKABE_ITO["blue"], "o", "explicit label"),
    "implicit": (OKABE_ITO["orange"], "s", "implicit cue"),
}
PANELS = (
    ("acc_amb", "ambiguous accuracy (Unknown chosen)", (0.0, 1.0)),
    ("s_amb", "ambiguous bias score S_amb", (-1.0, 1.0)),
)


def _interval(ax, lo: float, hi: float, y: float, colour: str) -> None:
    if np.isfinite(lo) and np.isfinite(hi):
        ax.plot([lo, hi], [y, y], color=colour, lw=1.3)


def qa_cue_plot(system_scores: pd.DataFrame, systems: list[str], strategy: str) -> str:
    """Ambiguous accuracy and bias per system under explicit and implicit cues.

    Parameters
    ----------
    system_scores : DataFrame
        The ``qa_system_scores`` table (``acc_amb``/``s_amb`` with ``_low``/``_high``).
    systems : list of str
        Row order (top to bottom).
    strategy : str
        The prompting strategy shown.
    """
    df = system_scores[
        (system_scores["strategy"] == strategy) & (system_scores["context"] == "ambiguous")
    ]
    n = max(len(systems), 1)
    with _style():
        fig, axes = plt.subplots(1, 2, figsize=(7.0, 0.36 * n + 1.1), sharey=True)
        y = np.arange(n)[::-1].astype(float)
        for ax, (metric, label, lim) in zip(axes, PANELS, strict=True):
            if metric == "s_amb":
                ax.axvline(0, color="black", lw=0.6)
            for offset, (cue, (colour, marker, name)) in zip(
                (0.14, -0.14), CUE_STYLE.items(), strict=True
            ):
                sub = df[df["cue"] == cue].set_index("system")
                for yi, system in zip(y, systems, strict=True):
                    if system not in sub.index:
                        continue
                    r = sub.loc[system]
                    value = float(r[metric])
                    if not np.isfinite(value):
                        continue
                    lo = float(r.get(f"{metric}_low", np.nan))
                    hi = float(r.get(f"{metric}_high", np.nan))
                    _interval(ax, lo, hi, yi + offset, colour)
                    ax.plot(value, yi + offset, marker=marker, color=colour, ms=4.5, ls="none")
                ax.plot([], [], marker=marker, color=colour, ls="none", label=name)
            ax.set_xlim(*lim)
            ax.set_xlabel(f"{label}, 90% interval")
        axes[0].set_yticks(y, [str(s) for s in systems])
        axes[0].set_ylim(-0.7, n - 0.3)
        legend_above(fig, axes[1])
        return to_svg(fig, "qa-cue")


def qa_gap_forest(verdicts: pd.DataFrame, delta: float) -> str:
    """The deciding gap (implicit − explicit S_amb) per system with its interval, ±δ band
    and verdict markers."""
    rows = verdicts.reset_index(drop=True)
    n = max(len(rows), 1)
    with _style():
        fig, ax = plt.subplots(figsize=(6.4, 0.32 * n + 1.0))
        ax.axvspan(-delta, delta, color=OKABE_ITO["sky"], alpha=0.18, lw=0)
        ax.axvline(0, color="black", lw=0.6)
        y = np.arange(len(rows))[::-1]
        for yi, r in zip(y, rows.itertuples(), strict=True):
            colour, marker = VERDICT_STYLE.get(str(r.verdict), VERDICT_STYLE["inconclusive"])
            gap, lo, hi = (float(v) for v in (r.gap, r.gap_low, r.gap_high))
            if np.isfinite(gap):
                _interval(ax, lo, hi, yi, colour)
                ax.plot(gap, yi, marker=marker, color=colour, ms=5, ls="none")
            else:
                ax.text(0, yi, "no estimate", ha="center", va="center", color=colour)
        ax.set_yticks(y, [str(s) for s in rows["system"]])
        ax.set_xlabel(f"S_amb(implicit) − S_amb(explicit), 90% interval; band: ±δ = ±{delta:g}")
        handles = [
            plt.Line2D([], [], color=c, marker=m, ls="none", label=v)
            for v, (c, m) in VERDICT_STYLE.items()
        ]
        legend_above(fig, ax, handles)
        ax.set_ylim(-0.7, len(rows) - 0.3)
        return to_svg(fig, "qa-forest")


def qa_dimension_heatmap(
    dimension_gap: pd.DataFrame, systems: list[str], strategy: str, metric: str = "s_amb"
) -> str | None:
    """Heatmap of the explicit-vs-implicit gap per system × dimension (values printed in
    each cell, so the figure does not rely on colour). None when there is nothing to show."""
    df = dimension_gap[
        (dimension_gap["strategy"] == strategy) & (dimension_gap["metric"] == metric)
    ]
    if df.empty:
        return None
    grid = df.pivot_table(index="system", columns="dimension", values="gap", aggfunc="first")
    grid = grid.reindex([s for s in systems if s in grid.index])
    values = grid.to_numpy(dtype=float)
    bound = max(float(np.nanmax(np.abs(values))) if np.isfinite(values).any() else 0, 0.05)
    with _style():
        fig, ax = plt.subplots(figsize=(0.75 * grid.shape[1] + 2.6, 0.32 * grid.shape[0] + 1.2))
        # pcolormesh, not imshow: vector cells (a raster would be a data: image, which
        # the report's fetcher refuses); no colour bar, the values are printed instead.
        rows, cols = values.shape
        ax.pcolormesh(
            np.arange(cols + 1) - 0.5, np.arange(rows + 1) - 0.5, np.ma.masked_invalid(values),
            cmap="PuOr_r", vmin=-bound, vmax=bound, edgecolors="white", linewidth=0.5,
        )  # fmt: skip
        ax.invert_yaxis()
        for (i, j), v in np.ndenumerate(values):
            text = "–" if not np.isfinite(v) else f"{v:+.2f}"
            dark = np.isfinite(v) and abs(v) > 0.6 * bound
            ax.text(j, i, text, ha="center", va="center", fontsize=6.5,
                    color="white" if dark else "black")  # fmt: skip
        ax.set_xticks(range(grid.shape[1]), [str(c) for c in grid.columns], rotation=30)
        ax.set_yticks(range(grid.shape[0]), [str(s) for s in grid.index])
        ax.set_title("S_amb(implicit) − S_amb(explicit); orange = more stereotyped when implied",
                     fontsize=7.5)  # fmt: skip
        return to_svg(fig, "qa-heatmap")


def qa_strategy_plot(system_scores: pd.DataFrame, systems: list[str]) -> str | None:
    """Implicit-cue ambiguous bias per prompting strategy, one line per system."""
    df = system_scores[
        (system_scores["cue"] == "implicit") & (system_scores["context"] == "ambiguous")
    ]
    strategies = list(dict.fromkeys(df["strategy"]))
    if len(strategies) < 2:
        return None
    order = sorted(strategies, key=lambda s: (s != "zero-shot", s))
    colours = list(OKABE_ITO.values())
    markers = "osD^vP*X<>"
    with _style():
        fig, ax = plt.subplots(figsize=(6.4, 2.8))
        x = np.arange(len(order))
        for k, system in enumerate(systems):
            sub = df[df["system"] == system].set_index("strategy").reindex(order)
            ax.plot(x, sub["s_amb"].to_numpy(dtype=float), marker=markers[k % len(markers)],
                    color=colours[k % len(colours)], lw=1, ms=4, label=str(system))  # fmt: skip
        ax.axhline(0, color="black", lw=0.6)
        ax.set_xticks(x, order)
        ax.set_ylabel("implicit S_amb")
        ax.legend(fontsize=6.5, frameon=False, loc="upper left", bbox_to_anchor=(1.0, 1.0))
        return to_svg(fig, "qa-strategy")
