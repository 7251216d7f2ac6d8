"""Properties of the prompt-variance statistics (hypothesis): row order and the names of
factor levels do not matter; shifting every score leaves η² and the format spread alone;
negating every score keeps |ratio| and the sign-flip flags."""

from __future__ import annotations

import numpy as np
import pandas as pd
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from cuegap.designs.prompt_variance.stats import (
    pv_anova,
    pv_components,
    pv_extremes,
    pv_format_spread,
)

F = ["fmt", "order"]
KEYS = ["system", "category", "metric"]


@st.composite
def score_tables(draw: st.DrawFn) -> pd.DataFrame:
    a = draw(st.integers(2, 4))
    b = draw(st.integers(1, 2))
    r = draw(st.integers(2, 3))
    n = a * b * r
    values = draw(
        st.lists(
            st.floats(-1, 1, allow_nan=False).map(lambda x: round(x, 3)),
            min_size=n,
            max_size=n,
        )
    )
    rows = [
        ("s", "c", "m", f"f{i}", f"o{j}", k) for i in range(a) for j in range(b) for k in range(r)
    ]
    df = pd.DataFrame(rows, columns=[*KEYS, *F, "replicate"])
    df["score"] = values
    return df


def _relabel(df: pd.DataFrame, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    levels = df["fmt"].unique()
    new = dict(zip(levels, [f"z{x}" for x in rng.permutation(len(levels))], strict=True))
    return df.assign(fmt=df["fmt"].map(new)).sample(frac=1, random_state=seed)


@settings(max_examples=25, deadline=None)
@given(score_tables(), st.integers(0, 1000))
def test_order_and_labels_do_not_matter(df: pd.DataFrame, seed: int) -> None:
    # Ties in |mean| are broken by combination order (documented), so leave them out.
    means = df.groupby(F)["score"].mean().round(9)
    assume(means.abs().nunique() == len(means) and means.nunique() == len(means))
    other = _relabel(df, seed)
    cols = ["f", "p", "eta2", "ss_between", "ss_within"]
    a, b = pv_anova(df, factors=F)[cols], pv_anova(other, factors=F)[cols]
    pd.testing.assert_frame_equal(a, b, rtol=1e-9, atol=1e-12)
    cols = ["max_abs", "min_abs", "extremes_flip", "any_flip", "max", "min", "range"]
    pd.testing.assert_frame_equal(
        pv_extremes(df, factors=F)[cols], pv_extremes(other, factors=F)[cols], atol=1e-12
    )
    share = pv_components(df, factors=F)["share"].to_numpy()
    np.testing.assert_allclose(share, pv_components(other, factors=F)["share"], atol=1e-9)


@settings(max_examples=25, deadline=None)
@given(score_tables(), st.floats(-0.5, 0.5, allow_nan=False))
def test_shift_and_negation(df: pd.DataFrame, shift: float) -> None:
    moved = df.assign(score=df["score"] + shift)
    a, b = pv_anova(df, factors=F).iloc[0], pv_anova(moved, factors=F).iloc[0]
    if a["note"] == "" and b["note"] == "":
        assert np.isclose(a["eta2"], b["eta2"], atol=1e-6)
    sa, sb = pv_format_spread(df, factors=F).iloc[0], pv_format_spread(moved, factors=F).iloc[0]
    assert np.isclose(sa["sd_format"], sb["sd_format"], atol=1e-6)
    assert np.isclose(sb["grand_mean"] - sa["grand_mean"], shift, atol=1e-9)
    e = pv_extremes(df, factors=F).iloc[0]
    neg = pv_extremes(df.assign(score=-df["score"]), factors=F).iloc[0]
    assert neg["extremes_flip"] == e["extremes_flip"] and neg["any_flip"] == e["any_flip"]
    if np.isfinite(e["ratio"]):
        assert np.isclose(neg["ratio"], e["ratio"])
    assert np.isclose(neg["range"], e["range"])
