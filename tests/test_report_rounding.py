"""Rounding by uncertainty: the rule of cuegap.reports._rounding, checked by hand."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cuegap.reports import decimals_for, fmt_interval, fmt_num, fmt_pm


@pytest.mark.parametrize(
    ("sd", "decimals"),
    [
        (12.0, 0),  # first significant digit at 10^1 -> show units
        (10.0, 0),
        (9.99, 1),
        (1.6, 1),  # the seed paper's "7.4 ± 1.6"
        (1.0, 1),
        (0.99, 2),
        (0.23, 2),
        (0.04, 2),  # capped at max_decimals
        (0.0, 1),  # no uncertainty: default
        (math.nan, 1),
        (None, 1),
        (-1.0, 1),
    ],
)
def test_decimals_follow_the_sd_second_significant_digit(sd, decimals) -> None:
    assert decimals_for(sd) == decimals


def test_decimals_respect_bounds_and_reject_negative_cap() -> None:
    assert decimals_for(0.0004, max_decimals=4) == 4
    assert decimals_for(0.0004, max_decimals=3) == 3
    assert decimals_for(None, default=3, max_decimals=2) == 2
    with pytest.raises(ValueError, match="max_decimals should be >= 0 but got -1"):
        decimals_for(1.0, max_decimals=-1)


def test_formats_by_hand() -> None:
    assert fmt_pm(7.4123, 1.634) == "7.4 ± 1.6"
    assert fmt_pm(31.13, 12.4) == "31 ± 12"
    assert fmt_pm(-2.8149, 0.4, signed=True) == "-2.81 ± 0.40"
    assert fmt_pm(3.0, math.nan) == "3.0"
    assert fmt_pm(math.nan, 1.0) == "–"
    assert fmt_num(-0.04, 1, signed=True) == "+0.0"  # no "-0.0"
    assert fmt_interval(4.41735, 1.93, 6.84, sd=1.5) == "+4.4 [+1.9, +6.8]"
    # no SD: the interval's normal-equivalent SD, (6.84 - 1.93) / 3.29 = 1.49 -> 1 decimal
    assert fmt_interval(4.41735, 1.93, 6.84) == "+4.4 [+1.9, +6.8]"
    assert fmt_interval(10.83, 5.3, 16.3, sd=3.4) == "+10.8 [+5.3, +16.3]"
    assert fmt_interval(2.0, math.nan, math.nan) == "+2.0"


@given(
    x=st.floats(-100, 100, allow_nan=False),
    sd=st.floats(1e-3, 99, allow_nan=False),
)
def test_printed_value_is_within_half_a_last_digit(x: float, sd: float) -> None:
    """The printed estimate differs from the value by at most half of its last digit."""
    text = fmt_pm(x, sd)
    value, printed_sd = text.split(" ± ")
    d = decimals_for(sd)
    assert abs(float(value) - x) <= 0.5 * 10**-d + 1e-9
    shown = len(value.split(".")[1]) if "." in value else 0
    assert shown == d
    assert abs(float(printed_sd) - sd) <= 0.5 * 10**-d + 1e-9
