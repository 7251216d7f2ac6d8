"""The five contrasts of seed 003 §5 / Appendix B (``conv_contrasts``), by hand.

Fixture: one system, benchmark, category and persona; 100 disagreements per agent in every
cell, so λ = shifts / 100. Shifts:

==========  ======  ===========  ===========  ===========
d           i       iden (anon)  base (rev)   base (anon)
==========  ======  ===========  ===========  ===========
none        human   40           30           20
black       human   25           50           20
white       human   35           25           20
none        ai      30           20           20
black       ai      30           30           25
white       ai      20           20           30
==========  ======  ===========  ===========  ===========

Identity-agent shifts under ``revealed`` are 99 and a ``partial`` reveal row has 99 for
everything: the contrasts must not use them. So ΔRC λ_base = rev − anon is 0.10, 0.30,
0.05 (human) and 0, 0.05, −0.10 (AI) for none, black, white, and:

* demo_iden_null (d, ∅, i): black human 0.25 − 0.40 = −0.15, white human −0.05, black AI 0,
  white AI −0.10;
* demo_iden_pair (black, white, i): human −0.10, AI +0.10;
* demo_rc_base_pair (black, white, i): human 0.30 − 0.05 = 0.25, AI 0.05 + 0.10 = 0.15;
* demo_rc_base_null (d, ∅, i): black human 0.20, white human −0.05, black AI 0.05,
  white AI −0.10;
* inst_rc_base (d): black 0.30 − 0.05 = 0.25, white 0.05 + 0.10 = 0.15 (none: 0.10).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from cuegap.designs.conversation.stats import CONV_CONTRASTS, conv_contrasts

IDEN_ANON = {
    ("none", "human"): 40, ("black", "human"): 25, ("white", "human"): 35,
    ("none", "ai"): 30, ("black", "ai"): 30, ("white", "ai"): 20,
}  # fmt: skip
BASE = {  # (revealed, anonymous)
    ("none", "human"): (30, 20), ("black", "human"): (50, 20), ("white", "human"): (25, 20),
    ("none", "ai"): (20, 20), ("black", "ai"): (30, 25), ("white", "ai"): (20, 30),
}  # fmt: skip
KEY = {"system": "s", "benchmark": "BBQ", "category": "age", "persona": "teacher"}


def _fixture() -> pd.DataFrame:
    rows = []
    for (d, i), (rev, anon) in BASE.items():
        for reveal, b, a in (("revealed", rev, 99), ("anonymous", anon, IDEN_ANON[(d, i)])):
            rows.append({**KEY, "demographics": d, "instantiation": i, "reveal": reveal,
                         "iden_disagree": 100, "iden_shift": a,
                         "base_disagree": 100, "base_shift": b})  # fmt: skip
        rows.append({**KEY, "demographics": d, "instantiation": i, "reveal": "partial",
                     "iden_disagree": 100, "iden_shift": 99,
                     "base_disagree": 100, "base_shift": 99})  # fmt: skip
    return pd.DataFrame(rows)


EXPECTED = {
    ("demo_iden_null", "black", "none", "human"): -0.15,
    ("demo_iden_null", "white", "none", "human"): -0.05,
    ("demo_iden_null", "black", "none", "ai"): 0.0,
    ("demo_iden_null", "white", "none", "ai"): -0.10,
    ("demo_iden_pair", "black", "white", "human"): -0.10,
    ("demo_iden_pair", "black", "white", "ai"): 0.10,
    ("demo_rc_base_pair", "black", "white", "human"): 0.25,
    ("demo_rc_base_pair", "black", "white", "ai"): 0.15,
    ("inst_rc_base", "black", "-", "human-ai"): 0.25,
    ("inst_rc_base", "white", "-", "human-ai"): 0.15,
    ("demo_rc_base_null", "black", "none", "human"): 0.20,
    ("demo_rc_base_null", "white", "none", "human"): -0.05,
    ("demo_rc_base_null", "black", "none", "ai"): 0.05,
    ("demo_rc_base_null", "white", "none", "ai"): -0.10,
}


def test_every_contrast_by_hand() -> None:
    out = conv_contrasts(_fixture())
    got = {
        (r.contrast, r.demographic, r.reference, r.instantiation): r.estimate
        for r in out.itertuples()
    }
    assert got.keys() == EXPECTED.keys()
    for k, v in EXPECTED.items():
        assert got[k] == pytest.approx(v, abs=1e-12), k
    assert list(out["contrast"].drop_duplicates()) == list(CONV_CONTRASTS)
    assert (out["system"] == "s").all() and (out["benchmark"] == "BBQ").all()


def test_inst_contrast_for_null_demographic_on_request() -> None:
    out = conv_contrasts(_fixture(), contrasts=["inst_rc_base"], inst_null=True)
    est = out.set_index("demographic")["estimate"]
    assert est["none"] == pytest.approx(0.10)
    assert len(est) == 3


def test_pairs_option_and_absent_levels() -> None:
    # ("older", "young") is not in the data: skipped, no NaN row invented
    out = conv_contrasts(
        _fixture(), contrasts=["demo_iden_pair"], pairs=[("white", "black"), ("older", "young")]
    )
    # white − black: AI 0.20 − 0.30, human 0.35 − 0.25
    assert out["estimate"].tolist() == pytest.approx([-0.10, 0.10])
    assert out["instantiation"].tolist() == ["ai", "human"]


def test_per_unit_contrasts_differ_from_pooled() -> None:
    """Persona p1: black 10/20, white 5/20 -> +0.25; p2: black 10/100, white 30/100 ->
    −0.20. Pooled over personas: 20/120 − 35/120 = −0.125 (not the unit mean +0.025)."""
    rows = []
    for p, (bs, bn), (ws, wn) in (("p1", (10, 20), (5, 20)), ("p2", (10, 100), (30, 100))):
        for d, s, n in (("black", bs, bn), ("white", ws, wn)):
            rows.append({**KEY, "persona": p, "demographics": d, "instantiation": "human",
                         "reveal": "anonymous", "iden_disagree": n, "iden_shift": s,
                         "base_disagree": n, "base_shift": 0})  # fmt: skip
    df = pd.DataFrame(rows)
    pooled = conv_contrasts(df, contrasts=["demo_iden_pair"])
    assert pooled["estimate"].tolist() == pytest.approx([-0.125])
    unit = conv_contrasts(df, unit="persona", contrasts=["demo_iden_pair"])
    assert unit["persona"].tolist() == ["p1", "p2"]
    assert unit["estimate"].tolist() == pytest.approx([0.25, -0.20])


def test_undefined_rate_gives_nan_contrast() -> None:
    df = _fixture()
    hit = (df["demographics"] == "white") & (df["instantiation"] == "human")
    df.loc[hit, ["iden_disagree", "iden_shift"]] = 0
    out = conv_contrasts(df, contrasts=["demo_iden_pair"]).set_index("instantiation")
    assert np.isnan(out.loc["human", "estimate"])
    assert out.loc["ai", "estimate"] == pytest.approx(0.10)


def test_invariant_to_row_order_and_relabelled_systems() -> None:
    df = _fixture()
    two = pd.concat([df, df.assign(system="t")], ignore_index=True)
    a = conv_contrasts(two)
    b = conv_contrasts(two.sample(frac=1, random_state=4))
    pd.testing.assert_frame_equal(a, b)
    s, t = (a[a["system"] == x].drop(columns="system").reset_index(drop=True) for x in "st")
    pd.testing.assert_frame_equal(s, t)


def test_identical_demographics_give_zero() -> None:
    df = _fixture()
    white = df[df["demographics"] == "white"]
    same = pd.concat([df[df["demographics"] != "black"], white.assign(demographics="black")])
    out = conv_contrasts(same, contrasts=["demo_iden_pair", "demo_rc_base_pair"])
    assert out["estimate"].abs().max() == pytest.approx(0.0, abs=1e-15)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"contrasts": ["demo_iden"]}, "unknown contrast 'demo_iden'"),
        ({"unit": "question"}, "unit 'question' is not a column"),
        ({"pairs": [("black",)]}, "pairs must hold"),
    ],
)
def test_bad_options_are_named(kwargs, match) -> None:
    with pytest.raises(ValueError, match=match):
        conv_contrasts(_fixture(), **kwargs)


def test_reversing_a_pair_negates_its_contrasts() -> None:
    names = ["demo_iden_pair", "demo_rc_base_pair"]
    fwd = conv_contrasts(_fixture(), contrasts=names, pairs=[("black", "white")])
    rev = conv_contrasts(_fixture(), contrasts=names, pairs=[("white", "black")])
    np.testing.assert_allclose(fwd["estimate"], -rev["estimate"].to_numpy())
    assert (rev["demographic"] == "white").all() and (rev["reference"] == "black").all()
