"""Figures of the prompt-variance section (seed 003 §3): the η² distribution per metric
and the system rankings across prompt combinations. House style of
:mod:`cuegap.designs.dilemma._report_figures`: Okabe-Ito colours always paired with a marker or line
style, inline SVG, deterministic bytes."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from cuegap.reports import OKABE_ITO, to_svg
from cuegap.reports import figure_style as _style

METRIC_LABELS = {
    "s_bbq_dis": "s_BBQ_dis",
    "s_bbq_amb": "s_BBQ_amb",
    "s_diffaware": "s_DiffAware",
    "s_ctxtaware": "s_CtxtAware",
}
_COLOURS = [c for k, c in OKABE_ITO.items() if k != "yellow"]  # yellow is unreadable on white
_MARKERS = ("o", "s", "D", "^", "v", "P", "X")
_LINES = ("-", "--", ":")


def system_styles(systems: list[str]) -> dict[str, tuple[str, str, str]]:
    """A (colour, marker, line style) per system, in order: the i-th gets colour i mod 7
    and marker (i + i div 7) mod 7, so the first 49 systems differ in colour or marker
    (neighbours in both); the line style changes every 49."""
    n_c, n_m = len(_COLOURS), len(_MARKERS)
    return {
        s: (_COLOURS[i % n_c], _MARKERS[(i + i // n_c) % n_m], _LINES[(i // (n_c * n_m)) % 3])
        for i, s in enumerate(systems)
    }


def pv_eta2_plot(anova: pd.DataFrame) -> str:
    """η² of every system × category, one row per metric: points, and a box from the 25th
    to the 75th percentile with whiskers at the 10th and 90th (seed 003 Table 1's
    percentiles) and the median.

    Parameters
    ----------
    anova : DataFrame
        The ``pv_anova`` table (``metric``, ``eta2``).
    """
    metrics = [m for m in METRIC_LABELS if m in set(anova["metric"])]
    metrics += sorted(set(anova["metric"]) - set(metrics))
    n = max(len(metrics), 1)
    with _style():
        fig, ax = plt.subplots(figsize=(6.5, 0.55 * n + 0.9))
        for i, metric in enumerate(metrics):
            y = n - 1 - i
            vals = anova.loc[anova["metric"] == metric, "eta2"].dropna().to_numpy(float)
            if not len(vals):
                continue
            p10, p25, p50, p75, p90 = np.percentile(vals, [10, 25, 50, 75, 90])
            ax.plot([p10, p25], [y, y], color="black", lw=0.8)
            ax.plot([p75, p90], [y, y], color="black", lw=0.8)
            ax.add_patch(plt.Rectangle((p25, y - 0.22), p75 - p25, 0.44, fill=False, lw=0.9))
            ax.plot([p50, p50], [y - 0.22, y + 0.22], color="black", lw=1.6)
            jitter = (np.arange(len(vals)) % 7 - 3) * 0.045
            ax.plot(vals, y + jitter, "o", ms=2.6, color=OKABE_ITO["blue"], alpha=0.55)
        ax.set_yticks(range(n), [METRIC_LABELS.get(m, m) for m in metrics][::-1])
        ax.set_xlim(0, 1)
        ax.set_ylim(-0.6, n - 0.4)
        ax.set_xlabel("η² = SS between prompt combinations / SS total (per system × category)")
        return to_svg(fig, "pv-eta2")


def pv_rank_plot(ranks: pd.DataFrame, metric: str) -> str | None:
    """Each system's rank under each prompt combination, averaged over categories: one
    line per system (seed 003 Figure 2), labelled at its right end.

    Parameters
    ----------
    ranks : DataFrame
        The ``pv_ranks`` table (``category``, ``metric``, ``system``, ``combination``,
        ``rank``; rank 1 = fairest).
    metric : str
    """
    df = ranks[ranks["metric"] == metric]
    if df.empty:
        return None
    mean = df.groupby(["system", "combination"], as_index=False)["rank"].mean()
    combos = sorted(set(mean["combination"]))
    systems = sorted(set(mean["system"]), key=str)
    styles = system_styles(systems)
    x = {c: i for i, c in enumerate(combos)}
    with _style():
        fig, ax = plt.subplots(figsize=(7.0, 0.22 * len(systems) + 2.6))
        ends = []
        for system in systems:
            sub = mean[mean["system"] == system].sort_values("combination")
            colour, marker, line = styles[system]
            xs = [x[c] for c in sub["combination"]]
            ax.plot(xs, sub["rank"], color=colour, marker=marker, ls=line, lw=1.0, ms=3.5)
            ends.append((float(sub["rank"].iloc[-1]), system, colour))
        # Right-end labels, nudged apart so that ties stay readable.
        ends.sort()
        placed: list[float] = []
        for y, system, colour in ends:
            pos = max(y, placed[-1] + 0.55) if placed else y
            placed.append(pos)
            ax.annotate(
                str(system),
                (len(combos) - 1, y),
                xytext=(len(combos) - 0.6, pos),
                color=colour,
                fontsize=6.5,
                va="center",
                annotation_clip=False,
                arrowprops={"arrowstyle": "-", "color": colour, "lw": 0.4},
            )
        ax.set_xticks(range(len(combos)), combos, rotation=90, fontsize=6)
        ax.set_xlim(-0.5, len(combos) - 0.5)
        ax.set_ylim(len(systems) + 0.5, 0.5)
        ax.set_yticks(range(1, len(systems) + 1))
        ax.set_ylabel(f"rank by {METRIC_LABELS.get(metric, metric)} (1 = fairest)")
        ax.grid(axis="y", lw=0.3, color="#dddddd")
        return to_svg(fig, f"pv-rank-{metric}")
