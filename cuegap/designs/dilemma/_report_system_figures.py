"""How each system moves between the two conditions: rank movement, and ΔAgainst vs ΔFavor.

Each ``*_plot`` returns inline SVG; its ``*_figure`` returns the matplotlib figure (for
tests that read positions and labels).
"""

from __future__ import annotations

import logging
import warnings
from typing import Any

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from adjustText import adjust_text

from cuegap.reports import DIRECT_COLOUR, OKABE_ITO, PUZZLED_COLOUR, to_svg
from cuegap.reports import figure_style as _style


def rank_plot(ranks: pd.DataFrame, *, explicit: str = "Direct", implicit: str = "Puzzled") -> str:
    """How each system's rank moves from Direct to Puzzled (rank 1 = highest net).

    Parameters
    ----------
    ranks : DataFrame
        ``system``, ``direct``, ``puzzled`` (ranks) and optionally ``direct_low``,
        ``direct_high``, ``puzzled_low``, ``puzzled_high`` (a rank interval).
    """
    with _style():
        return to_svg(rank_figure(ranks, explicit=explicit, implicit=implicit), "ranks")


def rank_figure(
    ranks: pd.DataFrame, *, explicit: str = "Direct", implicit: str = "Puzzled"
) -> plt.Figure:
    """The figure of :func:`rank_plot`: one row per system, so ties and intervals never
    draw over each other. Rows run by Direct rank (ties by Puzzled rank, then name); an
    arrow goes from the Direct rank (circle) to the Puzzled rank (square), and each rank's
    interval, when given, is a bar just above (Direct) or below (Puzzled) the row."""
    rows = ranks.copy()
    rows["system"] = rows["system"].astype(str)
    rows = rows.sort_values(["direct", "puzzled", "system"], na_position="last")
    rows = rows.reset_index(drop=True)
    n = max(len(rows), 1)
    top = max(float(np.nanmax(rows[["direct", "puzzled"]].to_numpy(float), initial=1)), n)
    with _style():
        fig, ax = plt.subplots(figsize=(5.6, 0.3 * n + 1.2))
        for y, r in enumerate(rows.itertuples()):
            d, p = float(r.direct), float(r.puzzled)
            for side, offset, colour in (
                ("direct", -0.18, DIRECT_COLOUR),
                ("puzzled", 0.18, PUZZLED_COLOUR),
            ):
                low = float(getattr(r, f"{side}_low", np.nan))
                high = float(getattr(r, f"{side}_high", np.nan))
                if np.isfinite(low) and np.isfinite(high):
                    ax.plot([low, high], [y + offset] * 2, color=colour, lw=2.2, alpha=0.45)
            if np.isfinite(d) and np.isfinite(p) and d != p:
                ax.annotate(
                    "",
                    xy=(p, y),
                    xytext=(d, y),
                    arrowprops={"arrowstyle": "->", "color": OKABE_ITO["grey"], "lw": 0.8},
                )
            ax.plot(p, y, marker="s", mec=PUZZLED_COLOUR, mfc="none", mew=1.4, ms=7, ls="none")
            ax.plot(d, y, marker="o", color=DIRECT_COLOUR, ms=4, ls="none")
        ax.set_yticks(range(len(rows)), list(rows["system"]))
        ax.set_ylim(len(rows) - 0.5, -0.5)
        ax.set_xlim(0.5, top + 0.5)
        ax.set_xticks(range(1, int(top) + 1))
        ax.set_xlabel("rank by macro net (1 = highest)")
        ax.grid(axis="x", color=OKABE_ITO["grey"], lw=0.3, alpha=0.4)
        handles = [
            plt.Line2D([], [], color=DIRECT_COLOUR, marker="o", ls="none", label=explicit),
            plt.Line2D(
                [],
                [],
                mec=PUZZLED_COLOUR,
                mfc="none",
                mew=1.4,
                marker="s",
                ls="none",
                label=implicit,
            ),
        ]
        ax.legend(
            handles=handles,
            loc="lower center",
            bbox_to_anchor=(0.5, 1.0),
            ncol=2,
            fontsize=7,
            frameon=False,
        )
        return fig


def _quiet_adjust_text(texts: list, **kwargs: Any) -> None:
    """``adjust_text`` without its log lines (e.g. "labels too long") on the user's stderr."""
    log = logging.getLogger("adjustText")
    level = log.level
    log.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # its own use of Logger.warn
            adjust_text(texts, **kwargs)
    finally:
        log.setLevel(level)


def asymmetry_plot(
    rows: pd.DataFrame, *, explicit: str = "Direct", implicit: str = "Puzzled"
) -> str:
    """ΔAgainst vs ΔFavor per system, with the diagonal where the gap is zero.

    Parameters
    ----------
    rows : DataFrame
        ``system``, ``delta_favor_pp``, ``delta_against_pp`` (Puzzled − Direct rates, pp).
        The gap equals ΔAgainst − ΔFavor: points above the diagonal have a positive gap.
    """
    with _style():
        return to_svg(asymmetry_figure(rows, explicit=explicit, implicit=implicit), "asym")


def asymmetry_figure(
    rows: pd.DataFrame, *, explicit: str = "Direct", implicit: str = "Puzzled"
) -> plt.Figure:
    """The figure of :func:`asymmetry_plot`, labels already moved apart (for tests)."""
    rows = rows.dropna(subset=["delta_favor_pp", "delta_against_pp"])
    with _style():
        fig, ax = plt.subplots(figsize=(4.6, 4.2))
        vals = np.concatenate([rows["delta_favor_pp"], rows["delta_against_pp"], [-1, 1]])
        lim = float(np.nanmax(np.abs(vals))) * 1.15
        ax.plot([-lim, lim], [-lim, lim], color="black", lw=0.7, ls="--")
        ax.axhline(0, color=OKABE_ITO["grey"], lw=0.5)
        ax.axvline(0, color=OKABE_ITO["grey"], lw=0.5)
        ax.scatter(
            rows["delta_favor_pp"],
            rows["delta_against_pp"],
            color=OKABE_ITO["vermillion"],
            s=18,
            zorder=3,
        )
        ax.set_xlim(-lim, lim)
        ax.set_ylim(-lim, lim)
        ax.set_aspect("equal")
        labels = [
            ax.text(r.delta_favor_pp, r.delta_against_pp, str(r.system), fontsize=6)
            for r in rows.itertuples()
        ]
        if labels:  # move labels off each other and off the points, with a leader line
            _quiet_adjust_text(
                labels,
                x=rows["delta_favor_pp"].to_numpy(float),
                y=rows["delta_against_pp"].to_numpy(float),
                ax=ax,
                arrowprops={"arrowstyle": "-", "color": OKABE_ITO["grey"], "lw": 0.4},
            )
        ax.set_xlabel(f"ΔFavor, pp ({implicit} − {explicit})")
        ax.set_ylabel(f"ΔAgainst, pp ({implicit} − {explicit})")
        ax.text(
            0.03,
            0.97,
            "above the diagonal: gap > 0",
            transform=ax.transAxes,
            va="top",
            fontsize=7,
            color=OKABE_ITO["grey"],
        )
        return fig
