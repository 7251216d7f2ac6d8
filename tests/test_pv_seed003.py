"""Seed 003's printed extremes (Table 2, Appendix A Tables 3-23) against ``pv_extremes``.

Fixtures: ``data/pv_seed003/bbq_extremes.csv`` (Tables 2-12, BBQ, 198 rows) and
``da_extremes.csv`` (Tables 13-23, Difference-Awareness, 176 rows), as printed.

The paper computes ratios and gaps from unrounded replicate means and prints them
rounded (scores to 3 decimals, ratios to 2), so a ratio is checked to that precision:
the printed ratio must lie between the ratios at the corners of the rounding boxes
max_abs ± 0.0005, min_abs ± 0.0005 (widened by the ratio's own ± 0.005). Gaps: printed
gap = max − min within 0.0015 (three roundings of 0.0005).

For each printed row a 22-combination × 5-replicate score table is built whose replicate
means are the printed extremes (one combination each) and values strictly between them
(the other 20), so ``pv_extremes`` must find the extremes among the combinations and
average the replicates.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from cuegap.designs.prompt_variance.stats import extreme_ratio, pv_extremes

DATA = Path(__file__).parent / "data" / "pv_seed003"
BBQ = pd.read_csv(
    DATA / "bbq_extremes.csv", comment="#", dtype={"ratio": str}, keep_default_na=False
)
DA = pd.read_csv(DATA / "da_extremes.csv", comment="#")
FORMATS = [f"fmt{i:02d}" for i in range(11)]
ORDERS = ["answer_first", "rationale_first"]
#: Exact binary offsets, so that replicate means of 0 are exactly 0.
OFFSETS = np.array([-2, -1, 0, 1, 2]) / 256
#: Table 2, Sexual orientation, s_BBQ_dis: +0.005 and −32.54× cannot both be rounded from
#: a max of −0.145 (|ratio| ≤ 0.1455 / 0.0045 = 32.33): one printed number is off.
INCONSISTENT = {(2, "Sexual orientation", "s_bbq_dis")}


def _table(max_abs: float, min_abs: float, *, between: str = "same_sign") -> pd.DataFrame:
    """Scores of one (system, category, metric) over 22 combinations × 5 replicates."""
    lo, hi = abs(min_abs), abs(max_abs)
    mags = np.linspace(lo, hi, 22)[1:-1] if hi > lo else np.full(20, lo)
    sign = np.sign(max_abs) or 1.0
    inner = sign * mags if between == "same_sign" else -sign * mags
    means = np.r_[max_abs, inner[:10], min_abs, inner[10:]]
    rows = []
    for k, (f, o) in enumerate((f, o) for o in ORDERS for f in FORMATS):
        for r, off in enumerate(OFFSETS):
            value = means[k] + off if means[k] != 0 else off
            rows.append(("sys", "cat", "m", f, o, r, value))
    cols = ["system", "category", "metric", "choice_format", "field_order", "replicate", "score"]
    return pd.DataFrame(rows, columns=cols)


def _extremes(max_abs: float, min_abs: float, **kw: str) -> pd.Series:
    out = pv_extremes(_table(max_abs, min_abs, **kw), factors=["choice_format", "field_order"])
    assert len(out) == 1
    return out.iloc[0]


def test_fixture_sizes() -> None:
    assert len(BBQ) == 11 * 9 * 2 and BBQ["table"].nunique() == 11
    assert len(DA) == 11 * 8 * 2 and sorted(DA["table"].unique()) == list(range(13, 24))


@pytest.mark.parametrize(
    "row", list(BBQ.itertuples(index=False)), ids=lambda r: f"T{r.table}-{r.category}-{r.metric}"
)
def test_bbq_ratio_and_sign_flip(row) -> None:
    got = _extremes(row.max_abs, row.min_abs)
    assert got["max_abs"] == pytest.approx(row.max_abs, abs=1e-12)
    assert got["min_abs"] == pytest.approx(row.min_abs, abs=1e-12)
    if row.ratio == "N/A":
        # Every combination is 0: ties go to the first combination.
        assert got["max_abs_combination"] == got["min_abs_combination"] == "fmt00/answer_first"
        assert math.isnan(got["ratio"]) and not got["extremes_flip"]
        return
    assert got["max_abs_combination"] == "fmt00/answer_first"
    assert got["min_abs_combination"] == "fmt00/rationale_first"
    if row.ratio == "inf":
        assert got["ratio"] == math.inf and not got["extremes_flip"]
        return
    printed = float(row.ratio)
    # The paper prints a negative ratio exactly when the extremes have opposite signs.
    assert got["extremes_flip"] == (printed < 0)
    assert got["any_flip"] == (printed < 0)
    assert np.sign(got["ratio"]) == np.sign(printed)
    corners = extreme_ratio(
        np.array([row.max_abs - 5e-4, row.max_abs + 5e-4])[:, None],
        np.array([row.min_abs - 5e-4, row.min_abs + 5e-4])[None, :],
    )
    consistent = corners.min() - 0.005 <= printed <= corners.max() + 0.005
    assert consistent != ((row.table, row.category, row.metric) in INCONSISTENT)


def test_named_examples_from_the_issue() -> None:
    """Table 2 Physical appearance −56.63× (a sign flip), Table 2 Age ∞, Table 9 (Phi-4
    14B) Gender identity s_BBQ_amb N/A."""
    phys = _extremes(0.122, -0.002)
    assert phys["extremes_flip"] and phys["any_flip"]
    corners = extreme_ratio([0.1215, 0.1225, 0.1215, 0.1225], [-0.0015, -0.0015, -0.0025, -0.0025])
    assert corners.min() <= -56.63 <= corners.max()
    assert _extremes(0.111, 0.0)["ratio"] == math.inf
    na = _extremes(0.0, 0.0)
    assert math.isnan(na["ratio"]) and not na["extremes_flip"] and not na["any_flip"]


def test_table2_text_claims() -> None:
    """Section 3: for GLM 4.7 Flash the extreme ratio "reaches 57×" and "several
    categories exhibit sign flips"."""
    t2 = BBQ[BBQ["table"] == 2]
    finite = t2[~t2["ratio"].isin(["inf", "N/A"])]["ratio"].astype(float)
    assert round(finite.abs().max()) == 57
    flips = [_extremes(r.max_abs, r.min_abs)["extremes_flip"] for r in t2.itertuples()]
    assert sum(flips) == 4  # Disability, Physical appearance, Sexual orientation (dis); SES (amb)


def test_any_flip_without_extreme_flip() -> None:
    """Extremes of one sign, other combinations of the other: only any_flip is set."""
    got = _extremes(0.2, 0.01, between="other_sign")
    assert got["any_flip"] and not got["extremes_flip"]
    assert got["ratio"] == pytest.approx(20.0)


@pytest.mark.parametrize(
    "row", list(DA.itertuples(index=False)), ids=lambda r: f"T{r.table}-{r.subset}-{r.metric}"
)
def test_difference_awareness_gap(row) -> None:
    got = _extremes(row.max, row.min)
    assert got["max"] == pytest.approx(row.max, abs=1e-12)
    assert got["min"] == pytest.approx(row.min, abs=1e-12)
    assert got["max_combination"] == "fmt00/answer_first"
    assert got["min_combination"] == "fmt00/rationale_first"
    assert abs(got["range"] - row.gap) <= 0.0015
    assert not got["any_flip"]


def test_extreme_ratio_rules() -> None:
    np.testing.assert_array_equal(
        extreme_ratio([0.2, -0.2, 0.2, 0.0, np.nan], [0.05, 0.05, 0.0, 0.0, 0.1]),
        [4.0, -4.0, np.inf, np.nan, np.nan],
    )
