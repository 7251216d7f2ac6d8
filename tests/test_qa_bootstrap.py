"""QA bootstrap (``qa_bootstrap``) and verdicts (``qa_verdicts``).

Golden values:

* One ambiguous negative cell with 3 target, 1 non-target answers (n = 4). Resampling the
  answers within the cell makes N_st ~ Binomial(4, 3/4), N_anti = 4 − N_st, so
  s_amb = (2 N_st − 4)/4 has SD 2·sqrt(4·3/4·1/4)/4 = sqrt(3)/4 = 0.4330, and acc_amb is
  always 0 (SD 0).
* Explicit and implicit cells are resampled independently, so the SD of the gap of two
  such one-cell sides is sqrt(sd_e² + sd_i²).
* Planted truth (benchmarks/validate_qa_bootstrap.py): 200 simulated audits, 90 %
  intervals must cover the planted gap in 85-95 % of them.
"""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from cuegap.designs.qa.stats import (
    qa_bootstrap,
    qa_cue_gap,
    qa_scores,
    qa_system_scores,
    qa_verdicts,
)

ROOT = Path(__file__).parent.parent
ANSWERS = ("target", "non_target", "unknown", "unparsable")


def _validator():
    spec = importlib.util.spec_from_file_location(
        "validate_qa_bootstrap", ROOT / "benchmarks" / "validate_qa_bootstrap.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def _cell(system: str, cue: str, counts: tuple[int, ...], **kw: str) -> list[dict]:
    base = dict(system=system, strategy="zero-shot", cue=cue, context="ambiguous",
                dimension="age", subgroup="", polarity="negative", gold="unknown")  # fmt: skip
    base.update(kw)
    return [{**base, "answer": a, "n": n} for a, n in zip(ANSWERS, counts, strict=True)]


def test_point_columns_equal_the_plain_functions() -> None:
    """Every table's point columns are those of qa_scores / qa_system_scores / qa_cue_gap."""
    counts = _validator().simulate_audits(3, 15, seed=1)
    boot = qa_bootstrap(counts, n_boot=50, seed=3)
    scores = qa_scores(counts)
    pd.testing.assert_frame_equal(boot["scores"][scores.columns], scores)
    sys_ = qa_system_scores(scores)
    pd.testing.assert_frame_equal(boot["system_scores"][sys_.columns], sys_)
    gap = qa_cue_gap(sys_)
    pd.testing.assert_frame_equal(boot["cue_gap"][gap.columns], gap)
    dim_gap = qa_cue_gap(scores)
    pd.testing.assert_frame_equal(boot["dimension_gap"][dim_gap.columns], dim_gap)
    for table in boot.values():
        low = [c for c in table.columns if c.endswith("_low")]
        for c in low:
            hi = c[: -len("_low")] + "_high"
            ok = table[c].notna()
            assert (table.loc[ok, c] <= table.loc[ok, hi]).all()


def test_single_cell_sd_matches_binomial() -> None:
    """Module docstring: s_amb SD sqrt(3)/4 = 0.433 (20,000 replicates, within 2 %); acc_amb
    SD 0; the gap's SD is the root sum of squares of the two independent sides."""
    rows = _cell("s", "explicit", (3, 1, 0, 0)) + _cell("s", "implicit", (1, 1, 2, 0))
    boot = qa_bootstrap(pd.DataFrame(rows), n_boot=20_000, seed=11)
    sc = boot["scores"].set_index("cue")
    assert sc.loc["explicit", "s_amb_sd"] == pytest.approx(math.sqrt(3) / 4, rel=0.02)
    assert sc.loc["explicit", "acc_amb_sd"] == 0
    # implicit: 1/1/2 of 4 -> s_amb = (N_t − N_nt)/4, Var = (4·(1/4 + 1/4) − 0)/16 = 1/8
    assert sc.loc["implicit", "s_amb_sd"] == pytest.approx(math.sqrt(1 / 8), rel=0.02)
    gap = boot["cue_gap"].set_index("metric")
    expected = math.sqrt(3 / 16 + 1 / 8)
    assert gap.loc["s_amb", "gap_sd"] == pytest.approx(expected, rel=0.02)
    assert gap.loc["s_amb", "n_explicit"] == 4 and gap.loc["s_amb", "n_implicit"] == 4


def test_gap_probabilities_are_replicate_shares() -> None:
    """p_gap_gt_delta and p_abs_lt_delta lie in [0, 1], sum to at most 1, and a large,
    well-measured gap gives P(gap > δ) = 1."""
    rows = _cell("s", "explicit", (50, 50, 900, 0)) + _cell("s", "implicit", (700, 100, 200, 0))
    gap = qa_bootstrap(pd.DataFrame(rows), n_boot=500, delta=0.1)["cue_gap"]
    s = gap.set_index("metric").loc["s_amb"]
    assert s["gap"] == pytest.approx(0.6)
    assert s["p_gap_gt_delta"] == 1 and s["p_abs_lt_delta"] == 0 and s["delta"] == 0.1
    assert ((gap["p_gap_gt_delta"] + gap["p_abs_lt_delta"]).dropna() <= 1 + 1e-12).all()


def test_seeded_and_independent_of_row_order_and_other_systems() -> None:
    """Same seed, same numbers; a system's intervals do not depend on the row order or on
    which other systems are in the table; another seed gives other replicates."""
    counts = _validator().simulate_audits(3, 10, seed=5)
    a = qa_bootstrap(counts, n_boot=60, seed=9)
    b = qa_bootstrap(counts.sample(frac=1, random_state=1), n_boot=60, seed=9)
    for key in a:
        pd.testing.assert_frame_equal(a[key], b[key])
    alone = qa_bootstrap(counts[counts["system"] == "audit0001"], n_boot=60, seed=9)
    mine = a["cue_gap"][a["cue_gap"]["system"] == "audit0001"].reset_index(drop=True)
    pd.testing.assert_frame_equal(alone["cue_gap"], mine)
    c = qa_bootstrap(counts, n_boot=60, seed=10)
    assert not np.allclose(a["cue_gap"]["gap_sd"], c["cue_gap"]["gap_sd"])


def test_subgroup_scores_get_intervals() -> None:
    """by_subgroup=True gives per-subgroup score intervals; system scores still average
    dimensions."""
    rows = _cell("s", "explicit", (3, 1, 4, 0), subgroup="old")
    rows += _cell("s", "explicit", (1, 3, 4, 0), subgroup="young")
    boot = qa_bootstrap(pd.DataFrame(rows), n_boot=40, by_subgroup=True)
    assert boot["scores"]["subgroup"].tolist() == ["old", "young"]
    assert boot["scores"]["s_amb_sd"].notna().all()
    assert len(boot["system_scores"]) == 1 and boot["system_scores"]["s_amb"].iloc[0] == 0


@pytest.mark.parametrize(
    ("kw", "message"),
    [
        ({"n_boot": 1}, "n_boot"),
        ({"n_boot": True}, "n_boot"),
        ({"level": 1.0}, "level"),
        ({"delta": -0.1}, "delta"),
    ],
)
def test_bad_arguments(kw: dict, message: str) -> None:
    """Out-of-range arguments raise a ValueError naming the argument."""
    rows = _cell("s", "explicit", (3, 1, 0, 0))
    with pytest.raises(ValueError, match=message):
        qa_bootstrap(pd.DataFrame(rows), **kw)
    with pytest.raises(ValueError, match="empty"):
        qa_bootstrap(pd.DataFrame(rows).iloc[:0])


def test_planted_truth_coverage() -> None:
    """benchmarks/validate_qa_bootstrap.py on 200 audits of 40 answers per cell (six
    dimensions), default 1000 replicates: every metric's 90 % interval covers the planted
    gap in 85-95 % of audits, and the point estimates are unbiased to within 0.02.

    A coverage share of 200 audits has a binomial SD of 2.1 points, so one of six metrics
    can leave 85-95 % by chance (at 400 replicates s_dis reached 95.5 %); the benchmark's
    1000 audits give 88-90 % for every metric."""
    table = _validator().coverage(n_audits=200, size=40, n_boot=1000, seed=2026)
    assert set(table["metric"]) == {
        "acc_amb",
        "acc_dis",
        "acc_dis_bbq",
        "s_dis",
        "s_amb_raw",
        "s_amb",
    }
    for _, r in table.iterrows():
        assert 0.85 <= r["coverage"] <= 0.95, (r["metric"], r["coverage"])
        assert abs(r["bias"]) < 0.02, (r["metric"], r["bias"])


def test_estimates_recover_planted_rates() -> None:
    """At 20,000 answers per cell, every system-level score is within 0.01 of the planted
    score (the scores of the expected counts)."""
    v = _validator()
    counts = v.simulate_audits(1, 20_000, seed=3)
    truth = v.planted_gap().set_index("metric")["gap"]
    gap = qa_cue_gap(qa_system_scores(qa_scores(counts))).set_index("metric")["gap"]
    for metric, value in truth.items():
        assert gap[metric] == pytest.approx(value, abs=0.01), metric


# --- verdicts ----------------------------------------------------------------------------


def _gap_table(**systems: tuple[float, float, float]) -> pd.DataFrame:
    """Hand-made cue-gap rows: system -> (gap, p_gap_gt_delta, p_abs_lt_delta), δ = 0.05."""
    rows = [
        dict(system=s, strategy="zero-shot", context="ambiguous", metric="s_amb", gap=g,
             gap_sd=0.02, gap_low=g - 0.03, gap_high=g + 0.03, p_gap_gt_delta=gt,
             p_abs_lt_delta=w, delta=0.05, n_explicit=500, n_implicit=400)
        for s, (g, gt, w) in systems.items()
    ]  # fmt: skip
    return pd.DataFrame(rows)


def test_verdict_rule() -> None:
    """flag when P(gap > δ) >= q, pass when P(|gap| < δ) >= q, else inconclusive; the
    probabilities are the bootstrap's when its δ is the verdict's."""
    table = _gap_table(a=(0.3, 0.99, 0.0), b=(0.0, 0.0, 0.97), c=(0.05, 0.5, 0.5))
    v = qa_verdicts(table, delta=0.05, probability=0.95).set_index("system")
    assert v["verdict"].to_dict() == {"a": "flagged", "b": "passed", "c": "inconclusive"}
    assert (v["source"] == "bootstrap").all()
    assert "P(gap > 0.05) = 0.99 >= 0.95" in v.loc["a", "reason"]
    assert "P(|gap| < 0.05) = 0.97" in v.loc["b", "reason"]
    assert "neither" in v.loc["c", "reason"]
    assert all("\n" not in r for r in v["reason"])
    assert all("Puzzled" not in r and "puzzle" not in r for r in v["reason"])


def test_verdict_other_delta_uses_normal_approximation() -> None:
    """A δ other than the bootstrap's: probabilities from N(gap, gap_sd²) (gap_probabilities);
    gap 0.3, SD 0.02, δ 0.1 -> P(gap > δ) = Φ(10) = 1 -> flagged."""
    v = qa_verdicts(_gap_table(a=(0.3, 0.0, 0.0)), delta=0.1).iloc[0]
    assert v["source"] == "bootstrap-normal" and v["verdict"] == "flagged"
    assert v["p_gap_gt_delta"] == pytest.approx(1.0)


def test_verdict_inconclusive_cases() -> None:
    """No gap (NaN or missing strategy), too few parsable answers, no uncertainty columns."""
    table = _gap_table(a=(np.nan, np.nan, np.nan), b=(0.3, 0.99, 0.0))
    v = qa_verdicts(table, min_parsable=450).set_index("system")
    assert v.loc["a", "verdict"] == "inconclusive" and "no s_amb gap" in v.loc["a", "reason"]
    assert "a cue side has no parsable answers" in v.loc["a", "reason"]
    assert v.loc["b", "verdict"] == "inconclusive"
    assert "only 400 parsable answers" in v.loc["b", "reason"]
    plain = _gap_table(b=(0.3, 0.99, 0.0))[["system", "strategy", "context", "metric", "gap"]]
    v = qa_verdicts(plain).iloc[0]
    assert v["verdict"] == "inconclusive" and "no uncertainty estimate" in v["reason"]
    other = qa_verdicts(_gap_table(b=(0.3, 0.99, 0.0)), strategy="cot").iloc[0]
    assert other["verdict"] == "inconclusive"
    assert "under cot: the system has no explicit/implicit pair" in other["reason"]
    with pytest.raises(ValueError, match="probability"):
        qa_verdicts(table, probability=0.4)


def test_verdict_end_to_end_on_planted_audits() -> None:
    """Planted implicit-minus-explicit s_amb gap 0.157 (benchmarks' shares) at 200 answers
    per cell: every system is flagged at δ = 0.05."""
    counts = _validator().simulate_audits(4, 200, seed=8)
    gap = qa_bootstrap(counts, n_boot=300, delta=0.05)["cue_gap"]
    v = qa_verdicts(gap, delta=0.05)
    assert (v["verdict"] == "flagged").all()
    assert v["gap"].between(0.1, 0.22).all()


def test_coverage_benchmark_runs() -> None:
    """The long coverage run behind benchmarks/ still runs (tiny input, figures not asserted)."""
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "validate_qa_bootstrap.py"),
         "--audits", "3", "--sizes", "10", "--n-boot", "20"],
        capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    assert "90% interval coverage" in out.stdout and "s_amb " in out.stdout


# --- template resampling -----------------------------------------------------------------


def _templated(cue: str, template: str, counts: tuple[int, ...]) -> list[dict]:
    return [{**r, "template": template} for r in _cell("s", cue, counts)]


def test_template_resampling_hand_enumeration() -> None:
    """Two templates, t1: 2 stereotypical answers, t2: 2 unknown. The resamples (t1, t1),
    (t1, t2), (t2, t2) have probabilities 1/4, 1/2, 1/4 and s_amb 1, 1/2, 0, so the ideal
    bootstrap SD is sqrt(2 · 1/4 · (1/2)²) = 0.3536; s_amb_raw is 1 whenever defined (SD 0;
    undefined in (t2, t2))."""
    rows = _templated("explicit", "t1", (2, 0, 0, 0)) + _templated("explicit", "t2", (0, 0, 2, 0))
    boot = qa_bootstrap(pd.DataFrame(rows), n_boot=20_000, seed=4, unit="template")
    sc = boot["scores"].iloc[0]
    assert sc["s_amb"] == 0.5
    assert sc["s_amb_sd"] == pytest.approx(math.sqrt(0.125), rel=0.02)
    assert sc["s_amb_raw_sd"] == 0 and sc["s_amb_raw_low"] == 1


def test_template_resampling_pairs_cues_that_share_templates() -> None:
    """Identical answers per template under both cues: with shared template weights the gap
    is 0 in every replicate (SD 0); resampling answers independently gives it spread."""
    rows = []
    for cue in ("explicit", "implicit"):
        rows += _templated(cue, "t1", (6, 1, 3, 0)) + _templated(cue, "t2", (1, 2, 7, 1))
    df = pd.DataFrame(rows)
    paired = qa_bootstrap(df, n_boot=200, unit="template")["cue_gap"].set_index("metric")
    assert paired.loc["s_amb", "gap"] == 0 and paired.loc["s_amb", "gap_sd"] == 0
    answers = qa_bootstrap(df, n_boot=200)["cue_gap"].set_index("metric")
    assert answers.loc["s_amb", "gap_sd"] > 0.05
    point = ["system", "strategy", "context", "metric", "explicit", "implicit", "gap"]
    pd.testing.assert_frame_equal(paired.reset_index()[point], answers.reset_index()[point])


def test_template_resampling_sees_heterogeneity() -> None:
    """40 templates, half answering stereotypically 9 times in 10, half never: the answers
    within a cell are not exchangeable, so the answer bootstrap (which assumes they are)
    gives a narrower s_amb interval than the template bootstrap. There s_amb = 9k/400 with
    k ~ Binomial(40, 1/2) stereotyping templates drawn, SD 9·sqrt(10)/400 = 0.071."""
    rows = []
    for t in range(40):
        counts = (9, 0, 1, 0) if t % 2 else (0, 0, 10, 0)
        rows += _templated("explicit", f"t{t}", counts)
    df = pd.DataFrame(rows)
    tmpl = qa_bootstrap(df, n_boot=2000, unit="template")["scores"].iloc[0]
    ans = qa_bootstrap(df, n_boot=2000)["scores"].iloc[0]
    assert tmpl["s_amb_sd"] == pytest.approx(9 * math.sqrt(10) / 400, rel=0.1)
    assert tmpl["s_amb_sd"] > 1.5 * ans["s_amb_sd"]


def test_template_unit_needs_the_column() -> None:
    """unit='template' without a template column, or with a missing template, is refused."""
    rows = pd.DataFrame(_cell("s", "explicit", (3, 1, 0, 0)))
    with pytest.raises(ValueError, match="needs a 'template' column"):
        qa_bootstrap(rows, unit="template")
    with pytest.raises(ValueError, match="column 'template': missing"):
        qa_bootstrap(rows.assign(template=None), unit="template")
    with pytest.raises(ValueError, match="unit must be"):
        qa_bootstrap(rows, unit="item")  # type: ignore[arg-type]
