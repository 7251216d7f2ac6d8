"""Report figures: matplotlib (Agg) to deterministic, self-contained inline SVG.

Text stays text (``svg.fonttype = "none"``, so the PDF is searchable), the hash salt is
fixed and the date left out, so the same data give the same bytes; element ids are
prefixed per figure so that several SVGs can share one HTML page.
"""

from __future__ import annotations

import io
import logging
import re
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from adjustText import adjust_text

#: Okabe-Ito: distinguishable with the common colour-vision deficiencies.
OKABE_ITO = {
    "orange": "#E69F00",
    "sky": "#56B4E9",
    "green": "#009E73",
    "yellow": "#F0E442",
    "blue": "#0072B2",
    "vermillion": "#D55E00",
    "purple": "#CC79A7",
    "grey": "#7F7F7F",
}
VERDICT_STYLE = {  # colour and marker: never colour alone
    "flagged": (OKABE_ITO["vermillion"], "s"),
    "passed": (OKABE_ITO["green"], "o"),
    "inconclusive": (OKABE_ITO["grey"], "D"),
}
DIRECT_COLOUR, PUZZLED_COLOUR = OKABE_ITO["blue"], OKABE_ITO["orange"]

_RC = {
    "svg.hashsalt": "cuegap",
    "svg.fonttype": "none",
    "text.parse_math": False,  # system names are data: "$" must not start mathtext
    "font.family": "DejaVu Sans",
    "font.size": 8,
    "axes.spines.top": False,
    "axes.spines.right": False,
}


@contextmanager
def _style() -> Iterator[None]:
    with plt.rc_context(_RC):
        yield


def to_svg(fig: plt.Figure, prefix: str) -> str:
    """The figure as an ``<svg>`` element for inlining (no XML prolog, ids prefixed).

    Parameters
    ----------
    fig : Figure
        Closed after rendering.
    prefix : str
        Prepended to every element id (and its references), unique per figure.
    """
    buf = io.StringIO()
    try:
        fig.savefig(buf, format="svg", metadata={"Date": None}, bbox_inches="tight")
    finally:
        plt.close(fig)
    svg = buf.getvalue()
    svg = svg[svg.index("<svg") :]
    ids = set(re.findall(r'\bid="([^"]+)"', svg))
    for name in sorted(ids, key=len, reverse=True):
        new = f"{prefix}-{name}"
        svg = svg.replace(f'id="{name}"', f'id="{new}"')
        svg = svg.replace(f"#{name})", f"#{new})").replace(f'"#{name}"', f'"#{new}"')
    return svg


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
        ax.legend(handles=handles, loc="lower right", fontsize=7, frameon=False)
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


def intersection_gap_plot(
    cells: pd.DataFrame,
    *,
    level: float = 0.9,
    explicit: str = "Direct",
    implicit: str = "Puzzled",
) -> str:
    """Cue Visibility Gap per system and gender × race cell, as an annotated heatmap.

    Parameters
    ----------
    cells : DataFrame
        ``system``, ``group`` ("woman × Asian"), ``gap_pp`` and, when the bootstrap ran,
        ``gap_low_pp`` / ``gap_high_pp``. Cells are grouped by gender, then race; a last row
        gives the mean over systems. A value is bold when its interval excludes zero.
    level : float
        Coverage of the intervals, for the legend.
    """
    cells = cells.copy()
    parts = cells["group"].astype(str).str.split(" × ", n=1, expand=True)
    cells["gender"], cells["race"] = parts[0], parts[1]
    columns = cells[["gender", "race", "group"]].drop_duplicates()
    columns = columns.sort_values(["gender", "race"]).reset_index(drop=True)
    systems = sorted(cells["system"].astype(str).unique())
    grid = cells.pivot_table(index="system", columns="group", values="gap_pp", aggfunc="first")
    grid = grid.reindex(index=systems, columns=columns["group"])
    sure = pd.DataFrame(False, index=grid.index, columns=grid.columns)
    if {"gap_low_pp", "gap_high_pp"} <= set(cells.columns):
        excl = (cells["gap_low_pp"] > 0) | (cells["gap_high_pp"] < 0)
        flag = cells.assign(excl=excl).pivot_table(
            index="system", columns="group", values="excl", aggfunc="first"
        )
        sure = flag.reindex(index=systems, columns=columns["group"]).fillna(False).astype(bool)
    values = np.vstack([grid.to_numpy(float), np.nanmean(grid.to_numpy(float), axis=0)])
    labels = [*systems, "mean over systems"]
    finite = np.abs(values[np.isfinite(values)])
    vmax = float(np.percentile(finite, 98)) if finite.size else 1.0
    vmax = 6 * max(np.ceil(vmax / 6), 1.0)  # 12 colour bins of a whole number of pp
    norm = matplotlib.colors.BoundaryNorm(np.linspace(-vmax, vmax, 13), 256)
    with _style():
        n_rows, n_cols = values.shape
        fig, ax = plt.subplots(figsize=(6.8, 0.24 * n_rows + 1.6))
        # pcolormesh, not imshow: vector cells (imshow and dense colorbars embed a PNG)
        image = ax.pcolormesh(
            np.arange(n_cols + 1) - 0.5,
            np.arange(n_rows + 1) - 0.5,
            np.ma.masked_invalid(values),
            cmap="PuOr_r",
            norm=norm,
        )
        ax.set_xlim(-0.5, n_cols - 0.5)
        ax.set_ylim(n_rows - 0.5, -0.5)
        for i in range(n_rows):
            for j in range(n_cols):
                v = values[i, j]
                if not np.isfinite(v):
                    ax.text(j, i, "–", ha="center", va="center", fontsize=6)
                    continue
                bold = i < len(systems) and bool(sure.iat[i, j])
                ax.text(
                    j,
                    i,
                    "0" if abs(v) < 0.5 else f"{v:.0f}".replace("-", "−"),
                    ha="center",
                    va="center",
                    fontsize=6,
                    fontweight="bold" if bold else "normal",
                    color="white" if abs(v) > 0.6 * vmax else "black",
                )
        ax.axhline(len(systems) - 0.5, color="black", lw=0.8)
        for j in range(1, n_cols):  # a rule between genders
            if columns["gender"].iat[j] != columns["gender"].iat[j - 1]:
                ax.axvline(j - 0.5, color="black", lw=0.8)
        ax.set_yticks(range(n_rows), labels, fontsize=6)
        ax.set_xticks(range(n_cols), [str(r) for r in columns["race"]], rotation=45, ha="right")
        ax.tick_params(axis="x", labelsize=6)
        for g in columns["gender"].unique():  # gender names above their block of races
            js = np.flatnonzero(columns["gender"].to_numpy() == g)
            ax.text(js.mean(), -0.8, str(g), ha="center", va="bottom", fontsize=7)
        ax.spines[:].set_visible(False)
        bar = fig.colorbar(image, ax=ax, fraction=0.04, pad=0.02)
        bar.set_label(f"gap, pp ({explicit} − {implicit} net)", fontsize=7)
        bar.ax.tick_params(labelsize=6)
        if sure.to_numpy().any() or "gap_low_pp" in cells.columns:
            ax.set_xlabel(
                f"bold: the {round(100 * level)}% bootstrap interval excludes zero", fontsize=6
            )
        return to_svg(fig, "intersect")
