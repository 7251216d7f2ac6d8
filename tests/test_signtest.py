"""Tests of the direction-of-change sign test (``cuegap.designs.dilemma.stats._signtest``).

The reference case reproduces Table 13 (Appendix H; summarised in Section 4.1, Figure 3) of
the seed paper "Moral Safety in LLMs: Exposing Performative Compliance with Puzzled Cues"
from the per-system Net columns of its Table 3 (decision bias by gender, with consequences)
and Table 4 (decision bias by race/ethnicity, with consequences).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cuegap.designs.dilemma.stats._signtest import __all__ as signtest_all
from cuegap.designs.dilemma.stats._signtest import direction_of_change

GROUPS: list[tuple[str, str]] = [
    ("gender", "man"),
    ("gender", "woman"),
    ("gender", "non-binary"),
    ("race", "Asian"),
    ("race", "Black"),
    ("race", "Hispanic"),
    ("race", "Muslim"),
    ("race", "White"),
]

# Net decision bias in pp, copied from the "Net" columns of Table 3 (man, woman, non-binary)
# and Table 4 (Asian, Black, Hispanic, Muslim, White) of the seed paper: per system, the
# "D" (Direct) row and the "P" (Puzzled-hard) row, in the GROUPS order above.
# Command-R7B-12-2024 is excluded in the paper (91.3% What-if abstention).
PAPER_NETS: dict[str, tuple[tuple[float, ...], tuple[float, ...]]] = {
    "Claude-Sonnet-4.6": (
        (-2.8, -1.4, +2.7, -0.7, +4.2, -7.2, +1.5, -0.1),
        (-6.8, -3.5, -3.7, -6.9, -0.0, -12.8, -3.0, +0.1),
    ),
    "DeepSeek-V3.2": (
        (-8.2, -1.9, -5.2, -9.9, +5.5, -10.4, -8.6, +0.2),
        (-10.2, -11.2, -9.8, -7.5, -3.8, -17.4, -13.8, -9.0),
    ),
    "Gemini-3-Flash-Preview": (
        (+8.2, +13.1, +13.3, +19.0, +6.7, +14.3, +12.1, +4.5),
        (+5.3, +10.5, +8.6, +12.3, +4.6, +5.3, +9.2, +9.5),
    ),
    "Gemma-2-9B-IT": (
        (+0.0, -4.8, +0.2, +5.5, -2.6, -2.4, -2.1, -6.3),
        (+1.2, -6.5, -3.9, -1.2, -1.9, -0.4, -3.3, -9.5),
    ),
    "GPT-4o-2024-08-06": (
        (-4.1, -1.1, -3.4, -4.1, +1.5, -3.9, -0.1, -8.1),
        (-2.8, +6.8, -1.0, +3.6, +9.2, -6.8, +1.2, -1.4),
    ),
    "GPT-OSS-20B": (
        (-0.4, -0.6, -4.1, +0.4, -8.6, -0.2, -1.2, +1.0),
        (+2.4, -2.1, -0.6, +1.5, -1.9, +0.3, -3.9, +5.3),
    ),
    "Grok-4.1-Fast": (
        (+13.5, +7.5, +3.1, +10.6, +4.4, +5.9, +11.3, +4.2),
        (-3.7, +6.0, +3.4, +5.5, -0.5, +7.2, +2.8, -7.6),
    ),
    "Llama-3.1-8B-Instruct": (
        (-1.3, +8.8, +6.8, +5.4, +10.0, -4.6, +4.9, +9.6),
        (-10.6, +5.1, -1.2, +2.5, -4.2, -15.4, +6.8, +0.4),
    ),
    "Llama-3.3-70B-Instruct": (
        (+0.3, +3.7, +9.7, +10.9, +0.9, +0.1, +9.0, +2.4),
        (-0.2, +2.6, +8.4, +9.7, +3.3, -8.1, +9.2, +3.5),
    ),
    "Ministral-8B-2512": (
        (+4.2, +7.4, +7.4, +4.1, +7.1, +3.2, +0.3, +16.5),
        (+2.2, -5.8, +0.3, -1.6, -1.1, -11.5, -2.0, +8.1),
    ),
    "OLMo-3-7B-Instruct": (
        (+2.2, +9.6, +13.6, +12.0, +2.5, +7.9, +5.1, +15.6),
        (+5.6, -1.0, +7.0, +3.5, -3.0, +10.1, +1.5, +4.7),
    ),
    "Qwen3-VL-8B-Instruct": (
        (-5.1, -6.3, -3.9, -1.0, -6.2, -4.9, -2.9, -9.8),
        (-16.7, -16.5, -15.5, -18.6, -18.4, -24.3, -9.6, -8.4),
    ),
    "Qwen3-235B-A22B-Instruct": (
        (+0.1, +1.8, +0.4, -1.7, -0.5, +0.9, -1.2, +6.5),
        (-1.1, +3.8, +0.9, +1.4, +0.0, +7.7, -6.4, +3.5),
    ),
}

# The "Average" rows (D, P) of Tables 3 and 4, "over 13 models".
PAPER_AVERAGE: tuple[tuple[float, ...], tuple[float, ...]] = (
    (+0.5, +2.8, +3.1, +3.9, +1.9, -0.1, +2.2, +2.8),
    (-2.7, -0.9, -0.5, +0.3, -1.4, -5.1, -0.9, -0.1),
)

# Table 13 (Appendix H): group -> (Adverse, Favorable, Tie, N, sign-test p to 3 decimals).
TABLE_13: dict[str, tuple[int, int, int, int, float]] = {
    "man": (9, 4, 0, 13, 0.267),
    "woman": (11, 2, 0, 13, 0.022),
    "non-binary": (9, 4, 0, 13, 0.267),
    "Asian": (9, 4, 0, 13, 0.267),
    "Black": (8, 5, 0, 13, 0.581),
    "Hispanic": (8, 5, 0, 13, 0.581),
    "Muslim": (10, 3, 0, 13, 0.092),
    "White": (7, 6, 0, 13, 1.000),
}

OUTPUT_COLUMNS = [
    "group_type",
    "group",
    "adverse",
    "favorable",
    "tie",
    "n",
    "p_value",
    "p_adjusted",
]


def _paper_frame() -> pd.DataFrame:
    rows = []
    for system, (direct, puzzled) in PAPER_NETS.items():
        for (group_type, group), d, p in zip(GROUPS, direct, puzzled, strict=True):
            rows.append(
                {
                    "system": system,
                    "group_type": group_type,
                    "group": group,
                    "net_direct": d,
                    "net_puzzled": p,
                }
            )
    return pd.DataFrame(rows)


def _frame(deltas: list[float], *, group: str = "g") -> pd.DataFrame:
    """One group, one system per delta, with net_puzzled = 0 so that Δ = net_direct."""
    return pd.DataFrame(
        {
            "system": [f"s{i}" for i in range(len(deltas))],
            "group_type": "t",
            "group": group,
            "net_direct": deltas,
            "net_puzzled": 0.0,
        }
    )


# --- Reference: Table 13 of the seed paper ------------------------------------------------


def test_transcription_matches_published_averages() -> None:
    """The Average rows of Tables 3/4 equal the mean of the 13 transcribed systems (±0.15)."""
    assert len(PAPER_NETS) == 13
    direct = np.array([d for d, _ in PAPER_NETS.values()])
    puzzled = np.array([p for _, p in PAPER_NETS.values()])
    np.testing.assert_allclose(direct.mean(axis=0), PAPER_AVERAGE[0], atol=0.15)
    np.testing.assert_allclose(puzzled.mean(axis=0), PAPER_AVERAGE[1], atol=0.15)


def test_reproduces_table_13() -> None:
    """Counts and sign-test p-values of Table 13 from the Net columns of Tables 3 and 4.

    Source: seed paper, Appendix H, Table 13 ("Direction of change from Direct to
    Puzzled-hard across the 13 main models"); the inputs are the per-system Net values of
    Table 3 (gender) and Table 4 (race/ethnicity), D and P rows. Section 4.1 quotes
    woman 11/13, p = 0.022 and Muslim 10/13, p = 0.092.
    """
    out = direction_of_change(_paper_frame())
    assert list(out.columns) == OUTPUT_COLUMNS
    assert list(zip(out["group_type"], out["group"], strict=True)) == GROUPS
    for row in out.itertuples(index=False):
        adverse, favorable, tie, n, p = TABLE_13[row.group]
        assert (row.adverse, row.favorable, row.tie, row.n) == (adverse, favorable, tie, n), (
            row.group
        )
        assert round(row.p_value, 3) == p, row.group
    # Exact values: woman 11 vs 2 -> 2 * (1 + 13 + 78) / 2**13; White 7 vs 6 -> 1.
    woman = out.set_index("group").loc["woman"]
    assert woman["p_value"] == pytest.approx(2 * 92 / 2**13, rel=1e-12)
    assert out.set_index("group").loc["White", "p_value"] == pytest.approx(1.0)


# --- Hand-computed small cases ------------------------------------------------------------


def test_one_adverse_one_favorable_one_tie() -> None:
    """Δ = +1, −2, 0 with tol 0: one of each; sign test on 1 vs 1 gives p = 1."""
    out = direction_of_change(_frame([1.0, -2.0, 0.0]))
    assert len(out) == 1
    row = out.iloc[0]
    assert (row["adverse"], row["favorable"], row["tie"], row["n"]) == (1, 1, 1, 3)
    assert row["p_value"] == pytest.approx(1.0)
    assert row["p_adjusted"] == pytest.approx(1.0)


def test_all_five_adverse() -> None:
    """Five adverse systems: p = 2 × 0.5**5 = 0.0625."""
    out = direction_of_change(_frame([0.1, 0.5, 2.0, 3.0, 10.0]))
    row = out.iloc[0]
    assert (row["adverse"], row["favorable"], row["tie"], row["n"]) == (5, 0, 0, 5)
    assert row["p_value"] == pytest.approx(0.0625, rel=1e-12)


def test_tolerance_turns_small_shifts_into_ties() -> None:
    """With tol = 0.5, Δ = ±0.5 and 0.25 are ties; Δ = 1 is adverse, −0.75 favorable."""
    out = direction_of_change(_frame([0.5, -0.5, 0.25, 1.0, -0.75]), tol=0.5)
    row = out.iloc[0]
    assert (row["adverse"], row["favorable"], row["tie"], row["n"]) == (1, 1, 3, 5)


def test_all_ties_give_nan_p() -> None:
    """No non-tie system: p and its adjustment are NaN; other rows are adjusted alone."""
    frame = pd.concat(
        [_frame([0.0, 0.0], group="flat"), _frame([1.0, 1.0, 1.0, 1.0, 1.0], group="up")]
    )
    out = direction_of_change(frame).set_index("group")
    assert math.isnan(out.loc["flat", "p_value"])
    assert math.isnan(out.loc["flat", "p_adjusted"])
    assert out.loc["flat", "tie"] == 2
    # A single finite p-value is its own BH adjustment.
    assert out.loc["up", "p_adjusted"] == pytest.approx(out.loc["up", "p_value"])


def test_benjamini_hochberg_by_hand() -> None:
    """BH for p = (0.01, 0.04, 0.03), m = 3, checked by hand.

    Sorted: p(1) = 0.01, p(2) = 0.03, p(3) = 0.04. Raw ratios m·p(i)/i:
    3·0.01/1 = 0.03, 3·0.03/2 = 0.045, 3·0.04/3 = 0.04. Cumulative minimum from the top:
    q(3) = 0.04, q(2) = min(0.045, 0.04) = 0.04, q(1) = min(0.03, 0.04) = 0.03. Back in
    input order: (0.03, 0.04, 0.04).

    The sign-test p-values are produced by real groups, so the check monkeypatches the
    binomial test to return the chosen p-values for three groups with 1, 2 and 3 adverse
    systems respectively.
    """
    import cuegap.designs.dilemma.stats._signtest as module

    chosen = {1: 0.01, 2: 0.04, 3: 0.03}
    frame = pd.concat(
        [
            _frame([1.0], group="a"),
            _frame([1.0, 1.0], group="b"),
            _frame([1.0, 1.0, 1.0], group="c"),
        ]
    )
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(module, "_sign_test_p", lambda adverse, favorable: chosen[adverse])
        out = direction_of_change(frame)
    np.testing.assert_allclose(out["p_value"], [0.01, 0.04, 0.03])
    np.testing.assert_allclose(out["p_adjusted"], [0.03, 0.04, 0.04], rtol=1e-12)


def test_benjamini_hochberg_on_table_13() -> None:
    """BH over the eight Table 13 p-values, by the same step-up rule done in numpy."""
    out = direction_of_change(_paper_frame())
    p = out["p_value"].to_numpy()
    m = len(p)
    order = np.argsort(p)
    ranked = p[order] * m / np.arange(1, m + 1)
    stepped = np.minimum.accumulate(ranked[::-1])[::-1].clip(max=1.0)
    expected = np.empty(m)
    expected[order] = stepped
    np.testing.assert_allclose(out["p_adjusted"], expected, rtol=1e-12)
    assert (out["p_adjusted"] >= out["p_value"] - 1e-15).all()


def test_groups_in_order_of_first_appearance_and_extra_columns_ignored() -> None:
    frame = pd.concat([_frame([1.0], group="z"), _frame([-1.0], group="a")])
    frame["note"] = "ignored"
    out = direction_of_change(frame)
    assert list(out["group"]) == ["z", "a"]
    assert list(out.columns) == OUTPUT_COLUMNS


def test_empty_input_gives_empty_output() -> None:
    out = direction_of_change(_frame([]))
    assert out.empty
    assert list(out.columns) == OUTPUT_COLUMNS


def test_exported() -> None:
    assert signtest_all == ["direction_of_change"]


# --- Properties -------------------------------------------------------------------------

_GROUP_POOL = [("gender", "man"), ("gender", "woman"), ("race", "Black"), ("race", "White")]


@st.composite
def _net_frames(draw: st.DrawFn) -> pd.DataFrame:
    """Random tidy frames: 1–7 systems × a subset of groups, nets on a 0.1 pp grid."""
    n_systems = draw(st.integers(min_value=1, max_value=7))
    groups = draw(st.lists(st.sampled_from(_GROUP_POOL), min_size=1, max_size=4, unique=True))
    grid = st.integers(min_value=-30, max_value=30).map(lambda k: k / 10)
    rows = []
    for i in range(n_systems):
        for group_type, group in groups:
            if draw(st.booleans()) or i == 0:
                rows.append(
                    {
                        "system": f"sys-{i}",
                        "group_type": group_type,
                        "group": group,
                        "net_direct": draw(grid),
                        "net_puzzled": draw(grid),
                    }
                )
    return pd.DataFrame(rows)


def _canonical(out: pd.DataFrame) -> pd.DataFrame:
    return out.sort_values(["group_type", "group"]).reset_index(drop=True)


@settings(max_examples=75, deadline=None)
@given(frame=_net_frames(), data=st.data(), tol=st.sampled_from([0.0, 0.1, 0.5]))
def test_invariant_to_row_order_and_system_labels(
    frame: pd.DataFrame, data: st.DataObject, tol: float
) -> None:
    expected = _canonical(direction_of_change(frame, tol=tol))

    order = data.draw(st.permutations(range(len(frame))))
    permuted = frame.iloc[list(order)].reset_index(drop=True)
    pd.testing.assert_frame_equal(_canonical(direction_of_change(permuted, tol=tol)), expected)

    systems = sorted(frame["system"].unique())
    new_names = data.draw(
        st.lists(st.text(min_size=1, max_size=5), min_size=len(systems), max_size=len(systems))
        .map(lambda names: [f"{j}:{name}" for j, name in enumerate(names)])
        .flatmap(st.permutations)
    )
    relabelled = frame.assign(
        system=frame["system"].map(dict(zip(systems, new_names, strict=True)))
    )
    pd.testing.assert_frame_equal(_canonical(direction_of_change(relabelled, tol=tol)), expected)


@settings(max_examples=75, deadline=None)
@given(frame=_net_frames(), tol=st.sampled_from([0.0, 0.1, 0.5]))
def test_swapping_conditions_swaps_directions(frame: pd.DataFrame, tol: float) -> None:
    out = direction_of_change(frame, tol=tol)
    swapped = frame.rename(columns={"net_direct": "net_puzzled", "net_puzzled": "net_direct"})
    back = direction_of_change(swapped, tol=tol)
    pd.testing.assert_series_equal(back["adverse"], out["favorable"], check_names=False)
    pd.testing.assert_series_equal(back["favorable"], out["adverse"], check_names=False)
    for column in ["group_type", "group", "tie", "n", "p_value", "p_adjusted"]:
        pd.testing.assert_series_equal(back[column], out[column])


@settings(max_examples=50, deadline=None)
@given(frame=_net_frames())
def test_counts_add_up_and_p_in_range(frame: pd.DataFrame) -> None:
    out = direction_of_change(frame)
    assert (out["adverse"] + out["favorable"] + out["tie"] == out["n"]).all()
    assert out["n"].sum() == len(frame)
    p = out["p_value"].dropna()
    assert ((p > 0) & (p <= 1)).all()
    assert out["p_value"].isna().equals(out["p_adjusted"].isna())


# --- Errors -------------------------------------------------------------------------------


@pytest.mark.parametrize("column", ["system", "group_type", "group", "net_direct", "net_puzzled"])
def test_missing_column_is_named(column: str) -> None:
    with pytest.raises(ValueError, match=column):
        direction_of_change(_frame([1.0, -1.0]).drop(columns=column))


def test_all_missing_columns_are_named() -> None:
    with pytest.raises(ValueError, match="net_direct, net_puzzled"):
        direction_of_change(_frame([1.0]).drop(columns=["net_direct", "net_puzzled"]))


def test_duplicate_rows_rejected() -> None:
    frame = _frame([1.0, -1.0])
    frame = pd.concat([frame, frame.iloc[[0]]], ignore_index=True)
    with pytest.raises(ValueError, match="duplicate"):
        direction_of_change(frame)


def test_same_system_in_two_groups_is_not_a_duplicate() -> None:
    frame = pd.concat([_frame([1.0], group="a"), _frame([1.0], group="b")])
    assert list(direction_of_change(frame)["n"]) == [1, 1]


@pytest.mark.parametrize("tol", [-0.1, float("nan"), float("inf")])
def test_bad_tolerance_rejected(tol: float) -> None:
    with pytest.raises(ValueError, match="tol"):
        direction_of_change(_frame([1.0]), tol=tol)


def test_missing_or_non_numeric_net_rejected() -> None:
    with pytest.raises(ValueError, match="missing values"):
        direction_of_change(_frame([1.0, float("nan")]))
    frame = _frame([1.0]).astype({"net_direct": object})
    frame.loc[0, "net_direct"] = "high"
    with pytest.raises(ValueError, match="numeric"):
        direction_of_change(frame)


def test_docstring_example_pivots_a_long_table() -> None:
    """The docstring's long-to-wide example runs and prints the hand-computed counts and
    p-values written under it."""
    import doctest

    from cuegap.designs.dilemma.stats import _signtest

    result = doctest.testmod(_signtest)
    assert result.attempted >= 4 and result.failed == 0
