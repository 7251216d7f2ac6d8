"""Shift rates λ_iden, λ_base (``conv_shift_rates``, seed 003 Eqs. 1-2).

Hand values: two personas of one condition, identity agent 3 shifts / 10 disagreements
and 1 / 6, so λ_iden = (3 + 1) / (10 + 6) = 0.25 (counts pooled, persona "[varied]");
baseline 2 / 10 and 4 / 6, λ_base = 6 / 16 = 0.375. Wilson intervals against
statsmodels ``proportion_confint(method="wilson")``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from statsmodels.stats.proportion import proportion_confint

from cuegap.designs.conversation.stats import conv_shift_rates

BASE = {
    "system": "s",
    "benchmark": "BBQ",
    "category": "age",
    "demographics": "black",
    "instantiation": "human",
    "reveal": "anonymous",
}


def _counts() -> pd.DataFrame:
    rows = [
        {**BASE, "persona": "teacher", "iden_disagree": 10, "iden_shift": 3,
         "base_disagree": 10, "base_shift": 2},
        {**BASE, "persona": "farmer", "iden_disagree": 6, "iden_shift": 1,
         "base_disagree": 6, "base_shift": 4},
        {**BASE, "persona": None, "demographics": None, "iden_disagree": 0, "iden_shift": 0,
         "base_disagree": 0, "base_shift": 0},
    ]  # fmt: skip
    return pd.DataFrame(rows)


def test_pooled_by_summing_counts() -> None:
    out = conv_shift_rates(_counts()).set_index(["demographics", "agent"])
    assert out.loc[("black", "iden"), "rate"] == pytest.approx(0.25)
    assert out.loc[("black", "base"), "rate"] == pytest.approx(0.375)
    assert out.loc[("black", "iden"), "disagreements"] == 16
    assert out.loc[("black", "base"), "shifts"] == 6
    # the null level is labelled "none"; no disagreement -> rate and interval NaN
    assert np.isnan(out.loc[("none", "iden"), "rate"])
    assert np.isnan(out.loc[("none", "iden"), "lower"])


def test_per_persona_rates() -> None:
    out = conv_shift_rates(_counts(), by=["demographics", "persona"]).set_index(
        ["persona", "agent"]
    )
    assert out.loc[("teacher", "iden"), "rate"] == pytest.approx(0.3)
    assert out.loc[("farmer", "base"), "rate"] == pytest.approx(4 / 6)


@pytest.mark.parametrize("confidence", [0.9, 0.95])
def test_wilson_interval_matches_statsmodels(confidence: float) -> None:
    out = conv_shift_rates(_counts(), confidence=confidence)
    ok = out[out["disagreements"] > 0]
    lo, hi = proportion_confint(
        ok["shifts"], ok["disagreements"], alpha=1 - confidence, method="wilson"
    )
    np.testing.assert_allclose(ok["lower"], lo, rtol=1e-12)
    np.testing.assert_allclose(ok["upper"], hi, rtol=1e-12)


def test_rates_stay_in_unit_interval_and_ignore_row_order() -> None:
    rng = np.random.default_rng(1)
    df = pd.concat([_counts()] * 5, ignore_index=True)
    df["persona"] = [f"p{i}" for i in range(len(df))]
    n = rng.integers(0, 30, len(df))
    df["iden_disagree"], df["base_disagree"] = n, n
    df["iden_shift"] = rng.binomial(n, 0.4)
    df["base_shift"] = rng.binomial(n, 0.2)
    a = conv_shift_rates(df)
    b = conv_shift_rates(df.sample(frac=1, random_state=3))
    pd.testing.assert_frame_equal(a, b)
    r = a["rate"].dropna()
    assert ((r >= 0) & (r <= 1)).all()
    assert (a["lower"].dropna() <= a["rate"].dropna()).all()


@pytest.mark.parametrize(
    ("change", "match"),
    [
        (lambda d: d.assign(iden_shift=[11, 1, 0]), "a shift needs a disagreement"),
        (lambda d: d.assign(base_shift=[1.5, 1, 0]), "non-negative integers"),
        (lambda d: d.assign(iden_disagree=[-1, 6, 0]), "non-negative integers"),
        (lambda d: d.drop(columns="reveal"), "needs columns reveal"),
        (lambda d: d.assign(system=[None, "s", "s"]), "column 'system' is missing"),
    ],
)
def test_bad_counts_are_named(change, match) -> None:
    with pytest.raises(ValueError, match=match):
        conv_shift_rates(change(_counts()))


def test_bad_confidence() -> None:
    with pytest.raises(ValueError, match="confidence must be in"):
        conv_shift_rates(_counts(), confidence=1.5)
    with pytest.raises(TypeError, match="DataFrame"):
        conv_shift_rates([1, 2])  # type: ignore[arg-type]
