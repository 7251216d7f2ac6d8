"""The house style of report figures, and matplotlib (Agg) to deterministic inline SVG.

Text stays text (``svg.fonttype = "none"``, so the PDF is searchable), the hash salt is
fixed and the date left out, so the same data give the same bytes; element ids are
prefixed per figure so that several SVGs can share one HTML page. Colours are Okabe-Ito,
and a verdict always has a marker as well as a colour.
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterator
from contextlib import contextmanager

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt

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


def legend_above(fig: plt.Figure, ax: plt.Axes, handles: list | None = None, **kw: object) -> None:
    """A one-row legend centred just above the panels, where it cannot hide a data point.

    Parameters
    ----------
    fig : Figure
    ax : Axes
        The panel whose top the legend sits on (and whose labelled artists it lists
        unless ``handles`` are given).
    handles : list, optional
        Artists with labels (e.g. marker-only ``Line2D`` proxies).
    **kw
        Passed to :meth:`Figure.legend` (e.g. ``fontsize``).
    """
    if handles is None:
        handles, _ = ax.get_legend_handles_labels()
    opts = {"fontsize": 7, "frameon": False} | kw
    top = ax.get_position().y1
    fig.legend(handles=handles, loc="lower center", bbox_to_anchor=(0.5, top),
               ncol=len(handles), **opts)  # fmt: skip


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
