"""Transition counts from per-round opinions (``conv_transition_counts``, seed 003 Eqs. 1-2).

Every expected count below is worked out by hand from the opinion sequences written in
each test (rounds 0, 1, 2; identity agent first, baseline second), using the rule of
seed 003 §4.3: a transition r − 1 → r counts for an agent when the two agents disagreed
in round r − 1, and is a shift when the agent's round r opinion equals the peer's round
r − 1 opinion. The randomised check compares with a plain per-conversation loop written
here from the same rule.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cuegap.designs.conversation.stats import (
    conv_transition_counts,
    simulate_conv_counts,
    simulate_conv_opinions,
)

COUNTS = ["iden_disagree", "iden_shift", "base_disagree", "base_shift"]
KEYS = ["system", "benchmark", "category", "demographics", "persona", "instantiation", "reveal"]


def _conv(cid: str, iden: list, base: list, **keys: str) -> pd.DataFrame:
    """Opinion rows of one conversation, with cell keys (defaults for unnamed ones)."""
    cell = {
        "system": "s",
        "benchmark": "BBQ",
        "category": "age",
        "demographics": "black",
        "persona": "teacher",
        "instantiation": "human",
        "reveal": "anonymous",
        **keys,
    }
    rows = []
    for r, (a, b) in enumerate(zip(iden, base, strict=True)):
        rows.append({"conversation": cid, "round": r, "role": "identity", "opinion": a, **cell})
        rows.append({"conversation": cid, "round": r, "role": "baseline", "opinion": b, **cell})
    return pd.DataFrame(rows)


def _one(iden: list, base: list) -> dict:
    out = conv_transition_counts(_conv("c", iden, base))
    assert len(out) == 1
    return {k: int(out[k].iloc[0]) for k in [*COUNTS, "conversations"]}


def test_identity_takes_baseline_opinion() -> None:
    # r0: A vs B (disagree). r1: identity takes B (shift), baseline keeps B (no shift).
    # r1: B vs B (agree) -> transition 1 -> 2 counts nowhere.
    got = _one(["A", "B", "B"], ["B", "B", "B"])
    assert got == {
        "iden_disagree": 1,
        "iden_shift": 1,
        "base_disagree": 1,
        "base_shift": 0,
        "conversations": 1,
    }


def test_third_option_counts_in_denominator_only() -> None:
    # r0: A vs B. r1: identity moves to C (neither its own nor B), baseline keeps B.
    # r1: C vs B disagree. r2: identity keeps C, baseline moves to C (shift for baseline).
    got = _one(["A", "C", "C"], ["B", "B", "C"])
    assert got["iden_disagree"] == 2 and got["iden_shift"] == 0
    assert got["base_disagree"] == 2 and got["base_shift"] == 1


def test_no_disagreement_gives_no_transition() -> None:
    got = _one(["A", "A", "B"], ["A", "A", "B"])
    assert got == {
        "iden_disagree": 0,
        "iden_shift": 0,
        "base_disagree": 0,
        "base_shift": 0,
        "conversations": 1,
    }


def test_one_round_conversation_has_no_transition() -> None:
    got = _one(["A"], ["B"])
    assert [got[k] for k in COUNTS] == [0, 0, 0, 0]
    assert got["conversations"] == 1


def test_swap_counts_two_shifts_and_keeps_disagreeing() -> None:
    # A tie of moves: both take the other's opinion. r0 A/B -> r1 B/A: both shift; they
    # still disagree, so r1 -> r2 (B/A -> A/B) is another shift for both.
    got = _one(["A", "B", "A"], ["B", "A", "B"])
    assert got == {
        "iden_disagree": 2,
        "iden_shift": 2,
        "base_disagree": 2,
        "base_shift": 2,
        "conversations": 1,
    }


def test_shift_is_to_previous_not_current_opinion() -> None:
    # r0 A/B; r1 identity picks C while the baseline also moves to C: the identity agent
    # matches the baseline's *current* opinion, not its previous one (B): no shift.
    got = _one(["A", "C"], ["B", "C"])
    assert got["iden_shift"] == 0 and got["base_shift"] == 0
    assert got["iden_disagree"] == 1 and got["base_disagree"] == 1


def test_missing_opinions_drop_only_what_they_touch() -> None:
    # r0 A/B; r1 identity missing, baseline takes A (shift). r1 -> r2: identity's r1
    # opinion is missing, so the prior disagreement is unknown: nothing counts.
    got = _one(["A", None, "A"], ["B", "A", "A"])
    assert got == {
        "iden_disagree": 0,
        "iden_shift": 0,
        "base_disagree": 1,
        "base_shift": 1,
        "conversations": 1,
    }


def test_gap_in_rounds_gives_no_transition_across_it() -> None:
    df = _conv("c", ["A", "B", "B"], ["B", "A", "A"])
    df = df[df["round"] != 1]  # rounds 0 and 2 only
    out = conv_transition_counts(df)
    assert out[COUNTS].to_numpy().tolist() == [[0, 0, 0, 0]]


def test_cells_are_summed_and_kept_apart() -> None:
    df = pd.concat(
        [
            _conv("c1", ["A", "B", "B"], ["B", "B", "B"]),  # iden 1/1, base 1/0
            _conv("c2", ["A", "A", "A"], ["B", "A", "A"]),  # iden 1/0, base 1/1
            _conv("c3", ["A", "B", "B"], ["B", "B", "B"], reveal="revealed"),
        ],
        ignore_index=True,
    )
    out = conv_transition_counts(df).set_index("reveal")
    assert out.loc["anonymous", COUNTS].tolist() == [2, 1, 2, 1]
    assert out.loc["anonymous", "conversations"] == 2
    assert out.loc["revealed", COUNTS].tolist() == [1, 1, 1, 0]


def test_conversations_frame_and_null_labels() -> None:
    df = _conv("c1", ["A", "B"], ["B", "B"])[["conversation", "round", "role", "opinion"]]
    convs = pd.DataFrame(
        {
            "conversation": ["c1"],
            "system": ["s"],
            "benchmark": ["BBQ"],
            "category": ["age"],
            "demographics": [None],
            "persona": [np.nan],
            "instantiation": ["ai"],
            "reveal": ["revealed"],
            "question": ["q7"],
        }
    )
    out = conv_transition_counts(df, convs, unit="question")
    assert out[["demographics", "persona", "question"]].iloc[0].tolist() == ["none", "none", "q7"]
    assert out[COUNTS].iloc[0].tolist() == [1, 1, 1, 0]


@pytest.mark.parametrize(
    ("change", "match"),
    [
        (lambda d: d.assign(role=d["role"].replace("baseline", "vanilla")), "role must be"),
        (lambda d: pd.concat([d, d.iloc[:1]]), "repeats"),
        (lambda d: d.assign(round=d["round"] - 1), "non-negative integers"),
        (lambda d: d.drop(columns="opinion"), "needs columns opinion"),
        (
            lambda d: d.assign(persona=["a", "b"] * (len(d) // 2)),
            "more than one configuration",
        ),
    ],
)
def test_bad_input_is_named(change, match) -> None:
    df = _conv("c", ["A", "B"], ["B", "B"])
    with pytest.raises(ValueError, match=match):
        conv_transition_counts(change(df))


def test_conversation_missing_from_configuration_frame() -> None:
    df = _conv("c", ["A", "B"], ["B", "B"])[["conversation", "round", "role", "opinion"]]
    convs = pd.DataFrame({"conversation": ["other"], **{k: ["x"] for k in KEYS}})
    with pytest.raises(ValueError, match="not in conversations"):
        conv_transition_counts(df, convs)


def _reference(opinions: pd.DataFrame, convs: pd.DataFrame) -> pd.DataFrame:
    """Per-conversation loop straight from Eqs. 1-2 (the slow, obvious version)."""
    seq: dict = {}
    for row in opinions.itertuples(index=False):
        seq.setdefault(row.conversation, {}).setdefault(row.round, {})[row.role] = row.opinion
    rows = []
    for cid, rounds in seq.items():
        c = dict.fromkeys(COUNTS, 0)
        for r in sorted(rounds):
            if r - 1 not in rounds:
                continue
            ip, bp = rounds[r - 1].get("identity"), rounds[r - 1].get("baseline")
            ic, bc = rounds[r].get("identity"), rounds[r].get("baseline")
            if ip is None or bp is None or ip == bp:
                continue
            if ic is not None:
                c["iden_disagree"] += 1
                c["iden_shift"] += ic == bp
            if bc is not None:
                c["base_disagree"] += 1
                c["base_shift"] += bc == ip
        rows.append({"conversation": cid, **c})
    per = pd.DataFrame(rows).merge(convs, on="conversation")
    return per.groupby(KEYS, sort=True)[COUNTS].sum().reset_index()


def test_matches_per_conversation_loop_on_simulated_opinions() -> None:
    truth = simulate_conv_counts(seed=3).truth.sample(40, random_state=1)
    opinions, convs = simulate_conv_opinions(truth, conversations=30, rounds=4, seed=5)
    rng = np.random.default_rng(0)
    opinions = opinions.astype({"opinion": object})
    opinions.loc[rng.random(len(opinions)) < 0.05, "opinion"] = None  # some unparsable
    opinions = opinions[rng.random(len(opinions)) > 0.03]  # some messages absent
    got = conv_transition_counts(opinions.sample(frac=1, random_state=2), convs)
    want = _reference(opinions, convs)
    pd.testing.assert_frame_equal(
        got[[*KEYS, *COUNTS]].reset_index(drop=True), want, check_dtype=False
    )
    assert got["iden_disagree"].sum() > 100  # the check is not vacuous


_seq = st.lists(st.sampled_from("ABC"), min_size=1, max_size=5)


@given(st.lists(st.tuples(_seq, _seq), min_size=1, max_size=6))
@settings(max_examples=60, deadline=None)
def test_properties_of_random_sequences(convs: list[tuple[list[str], list[str]]]) -> None:
    """With no missing opinion both agents see the same disagreements; swapping the two
    agents' roles swaps the iden and base counts; shifts never exceed disagreements."""
    frames, swapped = [], []
    for k, (a, b) in enumerate(convs):
        n = min(len(a), len(b))
        frames.append(_conv(f"c{k}", a[:n], b[:n]))
        swapped.append(_conv(f"c{k}", b[:n], a[:n]))
    got = conv_transition_counts(pd.concat(frames, ignore_index=True))
    rev = conv_transition_counts(pd.concat(swapped, ignore_index=True))
    g = got[COUNTS].sum()
    r = rev[COUNTS].sum()
    assert g["iden_disagree"] == g["base_disagree"]
    assert (g["iden_shift"], g["base_shift"]) == (r["base_shift"], r["iden_shift"])
    assert g["iden_shift"] <= g["iden_disagree"] and g["base_shift"] <= g["base_disagree"]
    assert g["iden_disagree"] <= sum(min(len(a), len(b)) - 1 for a, b in convs)
