"""Format spread (``pv_format_spread``) and the format-sensitivity rule
(``pv_format_sensitivity``), by hand.

Spread, three combinations × two replicates:
  x: 0.0, 0.2 (mean 0.1)   y: 0.3, 0.5 (mean 0.4)   z: 0.6, 0.8 (mean 0.7)
  grand mean 0.4; SD of the means 0.3; MS_within = (3 · 0.02) / 3 = 0.02;
  MS_between = 2 · (0.09 + 0 + 0.09) / 2 = 0.18; n₀ = 2;
  sd_format = √((0.18 − 0.02) / 2) = √0.08; se_sampling = √(0.02 · 3/2) / 3 = √0.03 / 3;
  deviations −0.3, 0, 0.3 → 5th / 95th percentiles (linear) −0.27, 0.27.

Sensitivity: p_sign_kept = Φ(|g| / s); Φ(2) = 0.97725, Φ(1) = 0.84134.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from cuegap.designs.prompt_variance.stats import pv_format_sensitivity, pv_format_spread


def test_spread_by_hand() -> None:
    values = {"x": (0.0, 0.2), "y": (0.3, 0.5), "z": (0.6, 0.8)}
    df = pd.DataFrame(
        [("s", "c", "m", k, i, v) for k, vs in values.items() for i, v in enumerate(vs)],
        columns=["system", "category", "metric", "fmt", "replicate", "score"],
    )
    row = pv_format_spread(df, factors="fmt").iloc[0]
    assert row["grand_mean"] == pytest.approx(0.4)
    assert row["sd_means"] == pytest.approx(0.3)
    assert row["sd_format"] == pytest.approx(math.sqrt(0.08))
    assert row["se_sampling"] == pytest.approx(math.sqrt(0.03) / 3)
    assert (row["dev_q05"], row["dev_q95"]) == pytest.approx((-0.27, 0.27))
    assert (row["n_combinations"], row["n_runs"]) == (3, 6)


def test_spread_is_zero_when_means_agree_within_noise() -> None:
    """Combination means closer than replicate noise implies: the MoM estimate is 0."""
    df = pd.DataFrame(
        {
            "system": "s",
            "category": "c",
            "metric": "m",
            "fmt": list("xxyy"),
            "replicate": [0, 1, 0, 1],
            "score": [0.0, 1.0, 0.1, 0.9],
        }
    )
    row = pv_format_spread(df, factors="fmt").iloc[0]
    assert row["sd_format"] == 0.0 and row["sd_means"] == pytest.approx(0.0)


def _sens(gap: float, sd: float, se: float = 0.01, **kw) -> pd.Series:
    gaps = pd.DataFrame({"system": ["s"], "gap": [gap], "se": [se]})
    spread = pd.DataFrame({"system": ["s"], "sd_format": [sd]})
    return pv_format_sensitivity(gaps, spread, **kw).iloc[0]


def test_sign_rule() -> None:
    far = _sens(0.10, 0.05)
    assert far["p_sign_kept"] == pytest.approx(0.97725, abs=1e-5)
    assert far["p_sign_kept_total"] == pytest.approx(
        0.5 + 0.5 * math.erf(0.1 / math.sqrt(0.0026) / math.sqrt(2))
    )
    assert far["zone"] == "positive" and not far["format_sensitive"]
    near = _sens(-0.05, 0.05)
    assert near["p_sign_kept"] == pytest.approx(0.84134, abs=1e-5)
    assert near["zone"] == "negative" and near["format_sensitive"]
    # No format spread: the sign is kept whatever the estimation error.
    assert _sens(0.001, 0.0, se=0.5)["format_sensitive"] == False  # noqa: E712
    # Exactly zero: kept only if formats do not move it.
    assert _sens(0.0, 0.0)["format_sensitive"] == False  # noqa: E712
    assert _sens(0.0, 0.01)["format_sensitive"] == True  # noqa: E712
    assert pd.isna(_sens(0.1, np.nan)["format_sensitive"])


def test_level_moves_the_boundary() -> None:
    # Φ(1.5) = 0.9332: sensitive at level 0.95, not at 0.90.
    assert _sens(0.15, 0.1, level=0.95)["format_sensitive"]
    assert not _sens(0.15, 0.1, level=0.90)["format_sensitive"]


def test_delta_zones() -> None:
    """With δ = 0.02: a pass whose formats stay inside ±δ is stable; a pass that formats
    push past δ is sensitive; a flag far above δ is stable."""
    inside = _sens(0.0, 0.005, delta=0.02)
    # P(|G| < 0.02) for G ~ N(0, 0.005²) = 2Φ(4) − 1
    assert inside["zone"] == "within"
    assert inside["p_same_zone"] == pytest.approx(2 * 0.9999683 - 1, abs=1e-6)
    assert not inside["format_sensitive"]
    edge = _sens(0.015, 0.005, delta=0.02)
    assert edge["zone"] == "within" and edge["format_sensitive"]  # Φ(1) − Φ(−7) ≈ 0.84
    far = _sens(0.2, 0.05, delta=0.02)
    assert far["zone"] == "above" and not far["format_sensitive"]  # Φ(3.6)
    low = _sens(-0.05, 0.02, delta=0.02)
    assert low["zone"] == "below" and low["format_sensitive"]  # Φ(1.5) = 0.933
    assert low["p_same_zone"] == pytest.approx(0.933193, abs=1e-6)


def test_join_and_errors() -> None:
    gaps = pd.DataFrame({"system": ["a", "b"], "category": "c", "gap": [0.1, 0.2], "se": 0.01})
    spread = pd.DataFrame({"system": ["b", "a"], "category": "c", "sd_format": [0.2, 0.0]})
    out = pv_format_sensitivity(gaps, spread).set_index("system")
    assert out.loc["a", "sd_format"] == 0.0 and out.loc["b", "sd_format"] == 0.2
    with pytest.raises(ValueError, match="level"):
        pv_format_sensitivity(gaps, spread, level=0.4)
    with pytest.raises(ValueError, match="delta"):
        pv_format_sensitivity(gaps, spread, delta=-1.0)
    with pytest.raises(ValueError, match="needs columns se"):
        pv_format_sensitivity(gaps.drop(columns="se"), spread)
    with pytest.raises(ValueError, match="non-negative"):
        pv_format_sensitivity(gaps.assign(se=-1.0), spread)
