"""Report figures checked on hand-made inputs: what each cell says, and legible labels."""

from __future__ import annotations

import itertools
import re

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from cuegap.reports._figures import (
    _style,
    asymmetry_figure,
    asymmetry_plot,
    intersection_gap_plot,
)

CELLS = pd.DataFrame(
    {
        "system": ["s1"] * 4 + ["s2"] * 4,
        "group": ["man × Asian", "man × Black", "woman × Asian", "woman × Black"] * 2,
        "gap_pp": [10, -4, 0.3, 25, 6, 2, -0.2, np.nan],
        "gap_low_pp": [2, -9, -5, -1, -3, -4, -6, np.nan],
        "gap_high_pp": [18, 1, 6, 51, 15, 8, 5, np.nan],
    }
)


def _texts(svg: str) -> list[tuple[str, bool]]:
    """(text, is bold) of every <text> element, in document order."""
    return [
        (body, "font-weight: 700" in style)
        for style, body in re.findall(r'<text[^>]*style="([^"]*)"[^>]*>([^<]*)</text>', svg)
    ]


def test_intersection_heatmap_cells_means_and_bold_where_the_interval_excludes_zero() -> None:
    svg = intersection_gap_plot(CELLS, level=0.9)
    texts = _texts(svg)
    names = [t for t, _ in texts]
    # rows s1, s2, then the mean over systems; columns man × (Asian, Black), woman × (...)
    start = names.index("mean over systems") + 1
    cells = texts[start : start + 12]
    assert [t for t, _ in cells] == [
        "10", "−4", "0", "25",  # s1
        "6", "2", "0", "–",  # s2: a missing cell is a dash, not a colour
        "8", "−1", "0", "25",  # hand-computed means over the systems that have the cell
    ]  # fmt: skip
    # only s1's man × Asian interval (2, 18) excludes zero; means are never bold
    assert [bold for _, bold in cells] == [True] + [False] * 11
    assert "bold: the 90% bootstrap interval excludes zero" in names
    assert {"man", "woman"} <= set(names)
    assert "<image" not in svg  # vector cells: the PDF fetcher refuses embedded PNGs
    assert svg == intersection_gap_plot(CELLS, level=0.9)  # deterministic bytes


def test_intersection_heatmap_without_bootstrap_columns_bolds_nothing() -> None:
    svg = intersection_gap_plot(CELLS[["system", "group", "gap_pp"]])
    assert not any(bold for _, bold in _texts(svg))
    assert "interval excludes zero" not in svg


def _overlaps(fig: plt.Figure, texts: list) -> int:
    renderer = fig.canvas.get_renderer()
    boxes = [t.get_window_extent(renderer) for t in texts]
    return sum(a.overlaps(b) for a, b in itertools.combinations(boxes, 2))


def test_asymmetry_labels_are_moved_apart_when_systems_crowd_together() -> None:
    rng = np.random.default_rng(3)
    rows = pd.DataFrame(
        {
            "system": [f"sim-system-{i:02d}" for i in range(1, 15)],
            "delta_favor_pp": rng.uniform(-2, 1, 14),
            "delta_against_pp": rng.uniform(0, 4, 14),
        }
    )
    rows.loc[0, ["delta_favor_pp", "delta_against_pp"]] = (-4.0, 9.0)  # sets the scale
    # the test can fail: labels left at their points collide
    with _style():
        fig, ax = plt.subplots(figsize=(4.6, 4.2))
        ax.set_xlim(-10, 10)
        ax.set_ylim(-10, 10)
        ax.set_aspect("equal")
        naive = [
            ax.text(r.delta_favor_pp, r.delta_against_pp, r.system, fontsize=6)
            for r in rows.itertuples()
        ]
        assert _overlaps(fig, naive) > 5
        plt.close(fig)
    fig = asymmetry_figure(rows)
    try:
        labels = [t for t in fig.axes[0].texts if t.get_text().startswith("sim-system-")]
        assert len(labels) == 14
        assert _overlaps(fig, labels) == 0
    finally:
        plt.close(fig)
    assert asymmetry_plot(rows) == asymmetry_plot(rows)  # label placement is deterministic
