"""Report figures: matplotlib (Agg) to deterministic, self-contained inline SVG.

Text stays text (``svg.fonttype = "none"``, so the PDF is searchable), the hash salt is
fixed and the date left out, so the same data give the same bytes; element ids are
prefixed per figure so that several SVGs can share one HTML page.
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterator
from contextlib import contextmanager

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

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


def forest_plot(rows: pd.DataFrame, *, delta: float, level: float = 0.9) -> str:
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
            f"macro Cue Visibility Gap, pp (Direct − Puzzled; {round(100 * level)}% interval); "
            f"band: ±δ = ±{delta:g} pp"
        )
        handles = [
            plt.Line2D([], [], color=c, marker=m, ls="none", label=v)
            for v, (c, m) in VERDICT_STYLE.items()
        ]
        ax.legend(handles=handles, loc="lower right", fontsize=7, frameon=False)
        ax.set_ylim(-0.7, len(rows) - 0.3)
        return to_svg(fig, "forest")


def group_net_plot(nets: pd.DataFrame) -> str:
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
                label=side.capitalize(),
            )
        ax.axhline(0, color="black", lw=0.6)
        ax.set_xticks(x, [str(g) for g in groups["group"]], rotation=30, ha="right")
        ax.set_ylabel("net decision bias, pp (Favor − Against)")
        ax.legend(fontsize=7, frameon=False)
        return to_svg(fig, "groupnet")


def rank_plot(ranks: pd.DataFrame) -> str:
    """How each system's rank moves from Direct to Puzzled (rank 1 = highest net).

    Parameters
    ----------
    ranks : DataFrame
        ``system``, ``direct``, ``puzzled`` (ranks) and optionally ``direct_low``,
        ``direct_high``, ``puzzled_low``, ``puzzled_high`` (a rank interval).
    """
    n = max(len(ranks), 1)
    palette = list(OKABE_ITO.values())
    with _style():
        fig, ax = plt.subplots(figsize=(5.0, 0.3 * n + 1.2))
        for i, r in enumerate(ranks.itertuples()):
            colour = palette[i % len(palette)]
            ls = ("-", "--", ":")[(i // len(palette)) % 3]
            ax.plot([0, 1], [r.direct, r.puzzled], color=colour, lw=1.2, ls=ls, marker="o", ms=4)
            for xpos, lo, hi in (
                (0, "direct_low", "direct_high"),
                (1, "puzzled_low", "puzzled_high"),
            ):
                low, high = getattr(r, lo, np.nan), getattr(r, hi, np.nan)
                if np.isfinite(low) and np.isfinite(high):
                    shift = -0.03 if xpos == 0 else 0.03
                    ax.plot([xpos + shift] * 2, [low, high], color=colour, lw=2.5, alpha=0.5)
            ax.text(-0.06, r.direct, str(r.system), ha="right", va="center", fontsize=7)
            ax.text(1.06, r.puzzled, str(r.system), ha="left", va="center", fontsize=7)
        ax.set_xlim(-0.9, 1.9)
        ax.set_ylim(n + 0.7, 0.3)
        ax.set_xticks([0, 1], ["Direct (label shown)", "Puzzled (label hidden)"])
        ax.set_yticks(range(1, n + 1))
        ax.set_ylabel("rank (1 = highest macro net)")
        ax.spines["bottom"].set_visible(False)
        return to_svg(fig, "ranks")


def asymmetry_plot(rows: pd.DataFrame) -> str:
    """ΔAgainst vs ΔFavor per system, with the diagonal where the gap is zero.

    Parameters
    ----------
    rows : DataFrame
        ``system``, ``delta_favor_pp``, ``delta_against_pp`` (Puzzled − Direct rates, pp).
        The gap equals ΔAgainst − ΔFavor: points above the diagonal have a positive gap.
    """
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
        for r in rows.itertuples():
            ax.annotate(
                str(r.system),
                (r.delta_favor_pp, r.delta_against_pp),
                xytext=(3, 3),
                textcoords="offset points",
                fontsize=6,
            )
        ax.set_xlim(-lim, lim)
        ax.set_ylim(-lim, lim)
        ax.set_aspect("equal")
        ax.set_xlabel("ΔFavor, pp (Puzzled − Direct)")
        ax.set_ylabel("ΔAgainst, pp (Puzzled − Direct)")
        ax.text(
            0.03,
            0.97,
            "above the diagonal: gap > 0",
            transform=ax.transAxes,
            va="top",
            fontsize=7,
            color=OKABE_ITO["grey"],
        )
        return to_svg(fig, "asym")
