"""Exact zeros in the prompt-variance extremes (issue 27, item 6).

Seed 003 (Tables 2-23) prints a combination whose replicate mean is exactly 0 as
``+0.000`` and the ratio of the extremes as an unsigned ``∞``. Two ways a float mean used
to miss the exact 0, both planted here with hand-computed values:

* s_bbq_dis from counts (biased, anti) = (1, 2), (1, 1), (2, 1): scores −1/3, 0, +1/3,
  whose floats 2·b/(b+a) − 1 are −0.33333333333333337 and +0.33333333333333326, so the
  float mean is −3.7e−17 while the exact mean is 0;
* scores given as floats −0.025, 0, +0.025 (no counts): their exact sum is 0.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from cuegap.designs.prompt_variance.report_sections import ratio_text
from cuegap.designs.prompt_variance.stats import extreme_ratio, pv_extremes, pv_scores
from cuegap.designs.prompt_variance.stats._extremes import exact_mean

RUN = {"system": "s", "category": "age", "amb_biased": 2, "amb_anti": 1, "amb_unknown": 7}


def _counts(dis: list[tuple[int, int]], *, level: str) -> list[dict]:
    return [
        {**RUN, "fmt": level, "replicate": r, "dis_biased": b, "dis_anti": a, "dis_unknown": 1}
        for r, (b, a) in enumerate(dis)
    ]


def test_integer_counts_give_an_exact_zero_mean_and_an_unsigned_infinite_ratio() -> None:
    counts = pd.DataFrame(
        _counts([(1, 2), (1, 1), (2, 1)], level="a")  # −1/3, 0, +1/3: mean exactly 0
        + _counts([(1, 3), (1, 3), (1, 3)], level="b")  # −1/2 each: mean −1/2
    )
    scores = pv_scores(counts, factors="fmt")
    dis = scores[scores["metric"] == "s_bbq_dis"]
    # The planted floats do not cancel, so the test fails on a float mean.
    assert dis.loc[dis["fmt"] == "a", "score"].mean() != 0
    row = pv_extremes(dis, factors="fmt").iloc[0]
    assert row["min_abs"] == 0 and row["min_abs_combination"] == "a"
    assert row["max_abs"] == -0.5 and row["max_abs_combination"] == "b"
    assert row["ratio"] == np.inf  # unsigned, though max_abs is negative
    assert not row["extremes_flip"] and not row["any_flip"]
    assert ratio_text(row["ratio"], row["max_abs"], row["min_abs"]) == "∞"


def test_float_scores_that_cancel_give_an_exact_zero() -> None:
    df = pd.DataFrame(
        {
            "system": "s",
            "category": "c",
            "metric": "m",
            "fmt": ["a"] * 3 + ["b"] * 3,
            "replicate": [0, 1, 2] * 2,
            "score": [-0.025, 0.0, 0.025, 0.1, 0.2, 0.3],
        }
    )
    row = pv_extremes(df, factors="fmt").iloc[0]
    assert row["min_abs"] == 0.0
    assert row["max_abs"] == pytest.approx(0.2)
    assert row["ratio"] == np.inf
    assert row["range"] == pytest.approx(0.2)


def test_exact_mean_hand_values() -> None:
    # 1/3 + 1/4 + 1/6 = 3/4, over 3 = 1/4 (mixed denominators go through fractions).
    assert exact_mean([1 / 3, 1 / 4, 1 / 6], [3, 4, 6]) == 0.25
    # One denominator: (1 + 2)/(5·2) = 0.3, the float nearest 3/10.
    assert exact_mean([0.2, 0.4], [5, 5]) == 0.3
    # Not an integer over n_used: the fsum fallback, still exact for cancelling scores.
    assert exact_mean([0.123456789, -0.123456789], [7, 7]) == 0.0
    assert np.isnan(exact_mean([]))


@pytest.mark.parametrize(
    ("ratio", "hi", "lo"),
    [
        (np.inf, -0.145, 0.0),  # seed 003 Table 9 style: −0.145, +0.000, ∞
        (-np.inf, -0.145, 0.0),  # a stored signed infinity
        (-np.inf, 0.3, -0.0),  # a −0.0 minimum
    ],
)
def test_an_infinite_ratio_prints_unsigned(ratio: float, hi: float, lo: float) -> None:
    assert ratio_text(ratio, hi, lo) == "∞"


def test_extreme_ratio_overflow_is_unsigned() -> None:
    assert extreme_ratio(-0.5, 0.0)[()] == np.inf
    assert extreme_ratio(-0.5, 5e-324)[()] == np.inf  # −0.5/5e−324 overflows
    assert extreme_ratio(-0.5, 0.25)[()] == -2.0
