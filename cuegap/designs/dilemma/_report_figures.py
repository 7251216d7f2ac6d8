"""Report figures: matplotlib (Agg) to deterministic, self-contained inline SVG.

Text stays text (``svg.fonttype = "none"``, so the PDF is searchable), the hash salt is
fixed and the date left out, so the same data give the same bytes; element ids are
prefixed per figure so that several SVGs can share one HTML page.

Here: the forest plot of the macro gap and the group nets. The style and SVG conversion
are in :mod:`cuegap.reports._figure_style`, the per-system rank and asymmetry figures in
:mod:`cuegap.designs.dilemma._report_system_figures`, the gender × race heatmap in
:mod:`cuegap.designs.dilemma._report_heatmap`; every name stays importable from here.
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from cuegap.designs.dilemma._report_heatmap import intersection_gap_plot
from cuegap.designs.dilemma._report_system_figures import (
    _quiet_adjust_text,  # noqa: F401
    asymmetry_figure,
    asymmetry_plot,
    rank_figure,
    rank_plot,
)
from cuegap.reports import (
    DIRECT_COLOUR,
    OKABE_ITO,
    PUZZLED_COLOUR,
    VERDICT_STYLE,
    legend_above,
    to_svg,
)
from cuegap.reports import figure_style as _style


def forest_plot(
    rows: pd.DataFrame,
    *,
    delta: float,
    level: float = 0.9,
    explicit: str = "Direct",
    implicit: str = "Puzzled",
) -> str:
    """The macro Cue Visibility Gap per system with its interval and the ±δ band.

    Parameters
    ----------
    rows : DataFrame
        ``system``, ``gap_pp``, ``gap_low_pp``, ``gap_high_pp``, ``verdict``; rows with a
        missing gap are listed with "no estimate".
    delta : float
        The policy's practical threshold (pp).
    """
    rows = rows.reset_index(drop=True)
    n = max(len(rows), 1)
    with _style():
        fig, ax = plt.subplots(figsize=(6.4, 0.32 * n + 1.0))
        ax.axvspan(-delta, delta, color=OKABE_ITO["sky"], alpha=0.18, lw=0)
        ax.axvline(0, color="black", lw=0.6)
        for d in (-delta, delta):
            ax.axvline(d, color=OKABE_ITO["blue"], lw=0.6, ls="--")
        y = np.arange(len(rows))[::-1]
        for yi, r in zip(y, rows.itertuples(), strict=True):
            colour, marker = VERDICT_STYLE.get(str(r.verdict), VERDICT_STYLE["inconclusive"])
            if np.isfinite(r.gap_pp):
                if np.isfinite(r.gap_low_pp) and np.isfinite(r.gap_high_pp):
                    ax.plot([r.gap_low_pp, r.gap_high_pp], [yi, yi], color=colour, lw=1.4)
                ax.plot(r.gap_pp, yi, marker=marker, color=colour, ms=5, ls="none")
            else:
                ax.text(0, yi, "no estimate", ha="center", va="center", color=colour)
        ax.set_yticks(y, [str(s) for s in rows["system"]])
        ax.set_xlabel(
            f"macro Cue Visibility Gap, pp ({explicit} − {implicit}; "
            f"{round(100 * level)}% interval); "
            f"band: ±δ = ±{delta:g} pp"
        )
        handles = [
            plt.Line2D([], [], color=c, marker=m, ls="none", label=v)
            for v, (c, m) in VERDICT_STYLE.items()
        ]
        legend_above(fig, ax, handles)
        ax.set_ylim(-0.7, len(rows) - 0.3)
        return to_svg(fig, "forest")


def group_net_plot(
    nets: pd.DataFrame, *, explicit: str = "Direct", implicit: str = "Puzzled"
) -> str:
    """Direct vs Puzzled net per group, averaged over systems (like the seed's Figure 2).

    Parameters
    ----------
    nets : DataFrame
        ``group_type``, ``group``, ``side`` (``direct`` / ``puzzled``), ``net_pp`` (mean
        over systems) and ``sd_pp`` (mean within-system bootstrap SD, may be NaN).
    """
    groups = nets[["group_type", "group"]].drop_duplicates().reset_index(drop=True)
    x = np.arange(len(groups))
    width = 0.38
    with _style():
        fig, ax = plt.subplots(figsize=(6.4, 2.8))
        for offset, side, colour, hatch in (
            (-width / 2, "direct", DIRECT_COLOUR, None),
            (width / 2, "puzzled", PUZZLED_COLOUR, "///"),
        ):
            sub = groups.merge(nets[nets["side"] == side], on=["group_type", "group"], how="left")
            err = sub["sd_pp"].to_numpy(float)
            ax.bar(
                x + offset,
                sub["net_pp"].to_numpy(float),
                width,
                color=colour,
                hatch=hatch,
                edgecolor="white",
                yerr=None if np.all(np.isnan(err)) else np.nan_to_num(err),
                error_kw={"lw": 0.8, "capsize": 2},
                label=explicit if side == "direct" else implicit,
            )
        ax.axhline(0, color="black", lw=0.6)
        ax.set_xticks(x, [str(g) for g in groups["group"]], rotation=30, ha="right")
        ax.set_ylabel("net decision bias, pp (Favor − Against)")
        ax.legend(fontsize=7, frameon=False)
        return to_svg(fig, "groupnet")


__all__ = [
    "DIRECT_COLOUR",
    "OKABE_ITO",
    "PUZZLED_COLOUR",
    "VERDICT_STYLE",
    "asymmetry_figure",
    "asymmetry_plot",
    "forest_plot",
    "group_net_plot",
    "intersection_gap_plot",
    "rank_figure",
    "rank_plot",
    "to_svg",
]
