"""Planted truth for the conversation design: recovery, false-positive rate, scale.

Truth values are computed here from the simulator's documented model (logit-additive
effects, ``scipy.special.expit``), not read back from the code under test. Seed 003
prints no λ or contrast values, only counts of significant conditions (10, 6, 3, 1, 1),
which cannot be reproduced without its transcripts; the one number its design fixes is
the size of the run, "8 million conversation transcripts" (§5), checked below.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from scipy.special import expit, logit

from cuegap.designs.conversation.stats import (
    conv_consistency,
    conv_consistency_summary,
    conv_contrasts,
    conv_design,
    conv_shift_rates,
    conv_tests,
    conv_transition_counts,
    simulate_conv_counts,
    simulate_conv_opinions,
)

ONE_CAT = {"BBQ": 1, "DifferenceAwareness": 1, "DiscrimEval": 1}


def test_paper_design_gives_eight_million_transcripts() -> None:
    """§5: 8 systems; 200 questions in each of 9 BBQ categories, 250 in each of 8
    Difference-Awareness subsets, 1,000 in each of 2 Discrim-Eval categories; identity
    demographics Black, White, Older, Young, Female, Male or none; five personas or none;
    human / AI; revealed / anonymous. One transcript per question and configuration:
    8 × 5,800 × 168 = 7,795,200 ≈ "8 million"."""
    systems = [f"s{k}" for k in range(8)]
    cells = conv_design(systems=systems)
    per_cat = {"BBQ": 200, "DifferenceAwareness": 250, "DiscrimEval": 1000}
    total = int(cells["benchmark"].map(per_cat).sum())
    assert total == 7_795_200
    assert round(total / 1e6) == 8
    assert cells.groupby("benchmark")["category"].nunique().to_dict() == {
        "BBQ": 9,
        "DifferenceAwareness": 8,
        "DiscrimEval": 2,
    }


def test_truth_follows_the_documented_model() -> None:
    sim = simulate_conv_counts(
        lambda_iden=0.3,
        lambda_base=0.2,
        iden_effects={("black", "human"): -0.5},
        base_reveal_effects={("black", "human"): 0.7},
        seed=1,
    )
    t = sim.truth.set_index(["demographics", "instantiation", "reveal"]).sort_index()
    assert t.loc[("black", "human", "anonymous"), "lambda_iden"].iloc[0] == pytest.approx(
        expit(logit(0.3) - 0.5)
    )
    assert t.loc[("black", "human", "revealed"), "lambda_base"].iloc[0] == pytest.approx(
        expit(logit(0.2) + 0.7)
    )
    assert t.loc[("black", "human", "anonymous"), "lambda_base"].iloc[0] == pytest.approx(0.2)
    assert t.loc[("white", "ai", "revealed"), "lambda_iden"].iloc[0] == pytest.approx(0.3)
    c = sim.counts
    assert (c["iden_shift"] <= c["iden_disagree"]).all()
    assert (c["iden_disagree"] <= 200 * 2).all()


def test_planted_contrasts_are_recovered() -> None:
    li, lb = 0.35, 0.25
    e_iden = {("black", "human"): -0.5, ("older", "human"): -0.3, ("white", "ai"): 0.2}
    e_base = {("black", "human"): 0.6, ("white", "human"): 0.1, ("older", "ai"): -0.4}
    sim = simulate_conv_counts(
        conversations=1500,
        lambda_iden=li,
        lambda_base=lb,
        iden_effects=e_iden,
        base_reveal_effects=e_base,
        seed=7,
    )

    def iden(d: str, i: str) -> float:
        return expit(logit(li) + e_iden.get((d, i), 0.0))

    def drc(d: str, i: str) -> float:  # λ_base(revealed) − λ_base(anonymous)
        return expit(logit(lb) + e_base.get((d, i), 0.0)) - lb

    truth = {}
    for i in ("human", "ai"):
        for d in ("black", "white", "older", "young", "female", "male"):
            truth[("demo_iden_null", d, "none", i)] = iden(d, i) - iden("none", i)
            truth[("demo_rc_base_null", d, "none", i)] = drc(d, i) - drc("none", i)
        for a, b in (("black", "white"), ("older", "young"), ("female", "male")):
            truth[("demo_iden_pair", a, b, i)] = iden(a, i) - iden(b, i)
            truth[("demo_rc_base_pair", a, b, i)] = drc(a, i) - drc(b, i)
    for d in ("black", "white", "older", "young", "female", "male"):
        truth[("inst_rc_base", d, "-", "human-ai")] = drc(d, "human") - drc(d, "ai")
    out = conv_contrasts(sim.counts)
    assert len(out) == 3 * len(truth)
    errors = [
        r.estimate - truth[(r.contrast, r.demographic, r.reference, r.instantiation)]
        for r in out.itertuples()
    ]
    # Discrim-Eval pools 2 categories × 6 personas × 900 disagreements: SE of a reveal
    # contrast (four rates) ≈ 2 × sqrt(0.25 · 0.75 / 10,800) ≈ 0.008
    assert np.max(np.abs(errors)) < 0.035
    assert abs(np.mean(errors)) < 0.005
    assert max(abs(v) for v in truth.values()) > 0.1  # the planted effects are visible


def test_false_positive_rate_is_nominal() -> None:
    """200 simulated null audits (no planted effect, persona offsets SD 0.3), run as 200
    "systems" of one table since every test is within a system. The demo_iden_pair and
    demo_rc_base_pair tests use disjoint cells, so their 36 tests per audit are
    independent; 7,200 tests at α = 0.05 must reject 5% ± 4 binomial SDs."""
    cells = conv_design(systems=[f"audit{k}" for k in range(200)], benchmarks=ONE_CAT)
    sim = simulate_conv_counts(cells=cells, conversations=100, persona_sd=0.3, seed=12)
    t = conv_tests(sim.counts, contrasts=["demo_iden_pair", "demo_rc_base_pair"])
    assert len(t) == 200 * 36
    assert (t["n_units"] == 6).all()
    rejected = int(t["significant"].sum())
    rate = rejected / len(t)
    assert abs(rate - 0.05) < 4 * np.sqrt(0.05 * 0.95 / len(t)), rate
    assert stats.binomtest(rejected, len(t), 0.05).pvalue > 1e-4
    # and per audit: at most a few of 36, as Binomial(36, 0.05) allows
    per_audit = t.groupby("system")["significant"].sum()
    assert per_audit.max() <= stats.binom.ppf(1 - 1e-4 / 200, 36, 0.05)


def test_bh_controls_false_discoveries_under_the_null() -> None:
    """Same null audits with BH per (contrast, benchmark) over all 200 audits: with every
    null true, BH controls the family-wise error at α, so few or no rejections."""
    cells = conv_design(systems=[f"audit{k}" for k in range(200)], benchmarks=ONE_CAT)
    sim = simulate_conv_counts(cells=cells, conversations=100, persona_sd=0.3, seed=13)
    t = conv_tests(sim.counts, contrasts=["demo_iden_pair"], correction="bh")
    # 3 families (one per benchmark) of 1,200 tests; P(any rejection in a family) ≤ 0.05
    assert t["significant"].sum() <= 3
    assert t.loc[t["p"] < 0.05, "significant"].mean() < 0.1


def test_opinion_sequences_recover_planted_rates() -> None:
    sim = simulate_conv_counts(
        lambda_iden=0.2, lambda_base=0.45, iden_effects={("black", "human"): 1.0}, seed=2
    )
    truth = sim.truth[
        (sim.truth["benchmark"] == "BBQ")
        & (sim.truth["category"] == "c1")
        & (sim.truth["persona"] == "teacher")
        & sim.truth["demographics"].isin(["black", "none"])
    ]
    opinions, convs = simulate_conv_opinions(
        truth, conversations=3000, rounds=3, options=3, p_third=0.15, seed=4
    )
    counts = conv_transition_counts(opinions, convs)
    rates = conv_shift_rates(counts, by=["demographics", "instantiation", "reveal"])
    want = truth.set_index(["demographics", "instantiation", "reveal"])
    for r in rates.itertuples():
        lam = want.loc[(r.demographics, r.instantiation, r.reveal), f"lambda_{r.agent}"]
        se = np.sqrt(lam * (1 - lam) / r.disagreements)
        assert abs(r.rate - lam) < 5 * se, (r, lam)
        assert r.disagreements > 1000
    # the third-option moves exist but are not shifts: λ stays at 0.2, not 0.2 + 0.15
    assert rates.loc[
        (rates["demographics"] == "none") & (rates["agent"] == "iden"), "rate"
    ].mean() == pytest.approx(0.2, abs=0.02)


def test_bad_simulation_arguments() -> None:
    with pytest.raises(ValueError, match="lambda_iden must be in"):
        simulate_conv_counts(lambda_iden=1.0)
    with pytest.raises(ValueError, match="p_disagree"):
        simulate_conv_counts(p_disagree=2)
    truth = simulate_conv_counts(lambda_base=0.95).truth.head(2)
    with pytest.raises(ValueError, match="p_third"):
        simulate_conv_opinions(truth, p_third=0.1)
    assert isinstance(truth, pd.DataFrame)


SYSTEMS = ("ministral3-3b", "phi4-mini", "qwen3-4b", "ministral3-14b", "phi4", "qwen3-30b",
           "glm47-flash", "llama33-70b")  # fmt: skip


def test_procedure_finds_exactly_the_planted_conditions() -> None:
    """Seed 003's procedure on its design (8 systems, three benchmarks, ≈1,800
    conversations per configuration as BBQ's 9 × 200 questions), with effects planted on
    the systems the paper names (logit ±0.8):

    * λ_iden, human: ministral3-3b black, white, older; ministral3-14b black, older,
      female; qwen3-4b black, older; qwen3-30b black, white. AI: ministral3-3b and
      ministral3-14b black. So demo_iden_null: 10 human (the paper's 10) + 2 AI (its
      B.1 total of 12); demo_iden_pair: 6 human (the paper's 6; black and white together
      cancel) + 2 AI.
    * λ_base when revealed: glm47-flash black (human and AI) and female (human), +;
      phi4-mini older human, −; qwen3-30b older AI, −. So demo_rc_base_pair: 3 for
      glm47-flash (the paper's 3) + phi4-mini older/young human + qwen3-30b older/young AI;
      demo_rc_base_null: the same five conditions against ∅; inst_rc_base: phi4-mini older
      (the paper's 1), qwen3-30b older, glm47-flash female (black cancels).

    The paper's own (10, 6, 3, 1, 1) cannot be matched at once by effects that act on
    every benchmark alike: a pair difference implies a difference from ∅ for one of the
    pair. Every finding is negative for λ_iden, as in the paper."""
    e_iden = {(s, d, "human"): -0.8 for s, ds in {
        "ministral3-3b": ("black", "white", "older"),
        "ministral3-14b": ("black", "older", "female"),
        "qwen3-4b": ("black", "older"),
        "qwen3-30b": ("black", "white"),
    }.items() for d in ds}  # fmt: skip
    e_iden |= {("ministral3-3b", "black", "ai"): -0.8, ("ministral3-14b", "black", "ai"): -0.8}
    e_base = {
        ("glm47-flash", "black", "human"): 0.8,
        ("glm47-flash", "black", "ai"): 0.8,
        ("glm47-flash", "female", "human"): 0.8,
        ("phi4-mini", "older", "human"): -0.8,
        ("qwen3-30b", "older", "ai"): -0.8,
    }
    cells = conv_design(systems=SYSTEMS, benchmarks=ONE_CAT)
    sim = simulate_conv_counts(
        cells=cells,
        conversations=1800,
        persona_sd=0.2,
        iden_effects=e_iden,
        base_reveal_effects=e_base,
        seed=2026,
    )
    cons = conv_consistency(conv_tests(sim.counts))
    summary = conv_consistency_summary(cons).set_index(["contrast", "instantiation"])
    assert summary["findings"].to_dict() == {
        ("demo_iden_null", "ai"): 2,
        ("demo_iden_null", "human"): 10,
        ("demo_iden_pair", "ai"): 2,
        ("demo_iden_pair", "human"): 6,
        ("demo_rc_base_null", "ai"): 2,
        ("demo_rc_base_null", "human"): 3,
        ("demo_rc_base_pair", "ai"): 2,
        ("demo_rc_base_pair", "human"): 3,
        ("inst_rc_base", "human-ai"): 3,
    }
    iden = summary.loc[["demo_iden_null", "demo_iden_pair"]]
    assert (iden["negative"] == iden["findings"]).all()
    found = cons[cons["finding"]].set_index(["contrast", "system", "demographic"])
    assert found.loc[("inst_rc_base", "phi4-mini", "older"), "direction"] == -1
    assert found.loc[("inst_rc_base", "qwen3-30b", "older"), "direction"] == 1
    assert found.loc[("demo_rc_base_pair", "glm47-flash", "black")]["direction"].eq(1).all()
