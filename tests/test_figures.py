"""Report figures checked on hand-made inputs: what each cell says, and legible labels."""

from __future__ import annotations

import itertools
import re
import warnings

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from cuegap.designs.dilemma._report_figures import (
    _style,
    asymmetry_figure,
    asymmetry_plot,
    intersection_gap_plot,
    rank_figure,
    rank_plot,
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


def test_intersection_heatmap_group_no_system_has_gets_a_dash_and_no_warning() -> None:
    cells = CELLS.copy()
    cells.loc[cells["group"] == "woman × Black", ["gap_pp", "gap_low_pp", "gap_high_pp"]] = np.nan
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # numpy's "Mean of empty slice" included
        svg = intersection_gap_plot(cells, level=0.9)
    names = [t for t, _ in _texts(svg)]
    start = names.index("mean over systems") + 1
    assert names[start : start + 12] == [
        "10", "−4", "0", "–", "6", "2", "0", "–", "8", "−1", "0", "–",
    ]  # fmt: skip


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


def test_rank_plot_gives_tied_systems_their_own_rows_and_intervals() -> None:
    ranks = pd.DataFrame(
        {
            "system": ["c", "a", "b", "d"],
            "direct": [2.0, 2.0, 1.0, 4.0],  # a and c tie at 2
            "puzzled": [4.0, 1.0, 2.0, 4.0],
        }
    )
    for side in ("direct", "puzzled"):
        ranks[f"{side}_low"] = (ranks[side] - 1).clip(lower=1)
        ranks[f"{side}_high"] = (ranks[side] + 1).clip(upper=4)
    fig = rank_figure(ranks)
    try:
        ax = fig.axes[0]
        # rows by Direct rank, ties by Puzzled rank: b (1), a (2, 1), c (2, 4), d (4)
        assert [t.get_text() for t in ax.get_yticklabels()] == ["b", "a", "c", "d"]
        bars = [
            line
            for line in ax.lines
            if len(line.get_xdata()) == 2 and line.get_ydata()[0] == line.get_ydata()[1]
        ]
        rows = sorted(round(float(line.get_ydata()[0]), 2) for line in bars)
        # one Direct bar above and one Puzzled bar below each row, none shared
        assert rows == [-0.18, 0.18, 0.82, 1.18, 1.82, 2.18, 2.82, 3.18]
        c_direct = next(b for b in bars if float(b.get_ydata()[0]) == 2 - 0.18)
        assert list(c_direct.get_xdata()) == [1.0, 3.0]  # c's Direct interval
    finally:
        plt.close(fig)
    svg = rank_plot(ranks)
    for name in "abcd":  # each system named once, however many share its rank
        assert svg.count(f">{name}</text>") == 1


def test_legend_sits_above_the_panels_and_stays_in_the_svg() -> None:
    from cuegap.reports._figure_style import legend_above, to_svg

    with _style():
        fig, axes = plt.subplots(1, 2, figsize=(7.0, 3.0), sharey=True)
        for ax in axes:  # data in every corner, the lower right included
            for x, y in itertools.product((0.02, 0.98), (0.02, 0.98)):
                ax.plot(x, y, "o", label=f"corner {x},{y}")
            ax.set_xlim(0, 1)
            ax.set_ylim(0, 1)
        legend_above(fig, axes[1])
        fig.canvas.draw()
        legend = fig.legends[0].get_window_extent()
        for ax in axes:
            panel = ax.get_window_extent()
            assert legend.y0 >= panel.y1 - 1e-6  # wholly above, so over no data point
        assert legend.x0 < axes[0].get_window_extent().x1 < legend.x1  # centred on the pair
        texts = [t for t, _ in _texts(to_svg(fig, "legend"))]
    assert [t for t in texts if t.startswith("corner")] == [
        f"corner {x},{y}" for x, y in itertools.product((0.02, 0.98), (0.02, 0.98))
    ]
