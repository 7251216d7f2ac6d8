"""Round each reported number to what its uncertainty supports.

The rule (applied to every ± value and interval in a report)
------------------------------------------------------------
An estimate is shown down to the decimal place of the **second significant digit of its
standard deviation**, and the SD to the same place. With ``k = floor(log10(sd))`` the
position of the SD's first significant digit, the number of decimals is ``1 − k``, clipped
to ``[0, max_decimals]``:

=============  ========  ====================
SD (pp)        decimals  example
=============  ========  ====================
10 – 99.9      0         ``+31 ± 12``
1 – 9.99       1         ``+7.4 ± 1.6``
0.1 – 0.999    2         ``+0.41 ± 0.23``
< 0.1          2 (cap)   ``+0.04 ± 0.01``
=============  ========  ====================

A missing, zero or non-finite SD gives ``default`` decimals (1 for percentage points).
Intervals use the SD when it is known, else a normal-equivalent SD of the interval, its
width / (2 × 1.645) for a 90 % interval.
"""

from __future__ import annotations

import math

_MISSING = "–"


def _finite(x: float | None) -> bool:
    try:
        return x is not None and math.isfinite(float(x))
    except (TypeError, ValueError):
        return False


def decimals_for(sd: float | None, *, default: int = 1, max_decimals: int = 2) -> int:
    """Decimals that a value with standard deviation ``sd`` supports.

    Parameters
    ----------
    sd : float or None
        Standard deviation, in the value's unit.
    default : int
        Decimals when ``sd`` is missing, zero or not finite.
    max_decimals : int
        Upper bound on the decimals (>= 0).

    Returns
    -------
    int
        ``clip(1 − floor(log10(sd)), 0, max_decimals)``: the SD's second significant digit.

    Examples
    --------
    >>> decimals_for(1.6), decimals_for(12.0), decimals_for(0.23), decimals_for(None)
    (1, 0, 2, 1)
    """
    if max_decimals < 0:
        raise ValueError(f"max_decimals should be >= 0 but got {max_decimals}")
    if not _finite(sd) or float(sd) <= 0:  # type: ignore[arg-type]
        return min(default, max_decimals)
    k = math.floor(math.log10(float(sd)))  # type: ignore[arg-type]
    return max(0, min(max_decimals, 1 - k))


def fmt_num(x: float | None, decimals: int, *, signed: bool = False) -> str:
    """A number with a fixed number of decimals; ``–`` for a missing value.

    Negative zero after rounding prints as ``0.0`` (``+0.0`` when signed).
    """
    if not _finite(x):
        return _MISSING
    value = round(float(x), decimals)  # type: ignore[arg-type]
    if value == 0:
        value = 0.0
    return f"{value:+.{decimals}f}" if signed else f"{value:.{decimals}f}"


def fmt_pm(
    x: float | None,
    sd: float | None,
    *,
    signed: bool = False,
    default: int = 1,
    max_decimals: int = 2,
) -> str:
    """``value ± sd``, both rounded by :func:`decimals_for`; the value alone without an SD.

    Examples
    --------
    >>> fmt_pm(7.4123, 1.634)
    '7.4 ± 1.6'
    >>> fmt_pm(-2.81, 0.4, signed=True)
    '-2.81 ± 0.40'
    """
    d = decimals_for(sd, default=default, max_decimals=max_decimals)
    value = fmt_num(x, d, signed=signed)
    if value == _MISSING or not _finite(sd):
        return value
    return f"{value} ± {fmt_num(sd, d)}"


def fmt_interval(
    x: float | None,
    low: float | None,
    high: float | None,
    *,
    sd: float | None = None,
    z: float = 1.6448536269514722,
    signed: bool = True,
    default: int = 1,
    max_decimals: int = 2,
) -> str:
    """``value [low, high]`` rounded by the SD (or the interval's width when no SD).

    Parameters
    ----------
    x, low, high : float
        Estimate and interval bounds.
    sd : float, optional
        Standard deviation of the estimate; by default ``(high − low) / (2 z)``.
    z : float
        Normal quantile of the interval (1.645 for a 90 % interval).

    Examples
    --------
    >>> fmt_interval(4.41735, 1.93, 6.84, sd=1.5)
    '+4.4 [+1.9, +6.8]'
    """
    if sd is None or not _finite(sd):
        sd = (float(high) - float(low)) / (2 * z) if _finite(low) and _finite(high) else None
    d = decimals_for(sd, default=default, max_decimals=max_decimals)
    value = fmt_num(x, d, signed=signed)
    if value == _MISSING or not (_finite(low) and _finite(high)):
        return value
    return f"{value} [{fmt_num(low, d, signed=signed)}, {fmt_num(high, d, signed=signed)}]"
