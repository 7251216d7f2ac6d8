"""The Cue Visibility Gap per system and gender × race cell, as an annotated heatmap."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from cuegap.reports import figure_style as _style
from cuegap.reports import to_svg


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
    gaps = grid.to_numpy(float)
    counted = np.isfinite(gaps).sum(axis=0)  # a group no system has a gap for: no mean
    mean = np.where(counted > 0, np.nansum(gaps, axis=0) / np.maximum(counted, 1), np.nan)
    values = np.vstack([gaps, mean])
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
