"""Seed 001's derived figures from its own tables, through the QA aggregation functions.

Inputs are the published numbers, typed in beside this test (tests/data/qa_seed001/):

* ``table2.csv``: the model rows of Table 2 (zero-shot, system-level means over dimensions:
  ambiguous / disambiguated accuracy and bias, explicit and implicit, and the control
  accuracies of the open-weight models).
* ``tables5_7.csv``: the per-dimension ambiguous accuracy and bias of Tables 5 (safety),
  6 (few-shot) and 7 (CoT), explicit and implicit, for the eleven models.

Where the paper's prose disagrees with its own tables, the tests follow the tables and say
so; the prose figure is then checked only to the precision at which the two agree, or not
at all.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from cuegap.designs.qa.stats import (
    qa_controls,
    qa_cue_gap,
    qa_group_means,
    qa_mitigation,
    qa_system_scores,
)

DATA = Path(__file__).parent / "data" / "qa_seed001"
OPEN = "open-weight"


def _table2() -> pd.DataFrame:
    return pd.read_csv(DATA / "table2.csv")


def _groups() -> dict[str, str]:
    t = _table2()
    return dict(zip(t["system"], t["group"], strict=True))


def _zero_shot_system_scores() -> pd.DataFrame:
    """Table 2 in the qa_system_scores layout (one row per system × cue × context)."""
    t = _table2()
    rows = []
    for _, r in t.iterrows():
        for cue in ("explicit", "implicit"):
            rows.append(
                dict(system=r["system"], strategy="zero-shot", cue=cue, context="ambiguous",
                     acc_amb=r[f"acc_amb_{cue}"], s_amb=r[f"s_amb_{cue}"])
            )  # fmt: skip
            rows.append(
                dict(system=r["system"], strategy="zero-shot", cue=cue, context="disambiguated",
                     acc_dis=r[f"acc_dis_{cue}"], s_dis=r[f"s_dis_{cue}"])
            )  # fmt: skip
        for cue, col in (("control_neutral", "neutral"), ("control_none", "nochar")):
            for context, metric in (("ambiguous", "acc_amb"), ("disambiguated", "acc_dis")):
                short = metric.split("_")[1]
                rows.append(
                    dict(system=r["system"], strategy="zero-shot", cue=cue, context=context,
                         **{metric: r[f"{col}_acc_{short}"]})
                )  # fmt: skip
    return pd.DataFrame(rows)


def _mitigation_scores() -> pd.DataFrame:
    """Tables 5-7 averaged over dimensions by qa_system_scores."""
    per_dim = pd.read_csv(DATA / "tables5_7.csv").assign(context="ambiguous")
    return qa_system_scores(per_dim)


def _all_strategies() -> pd.DataFrame:
    zs = _zero_shot_system_scores()
    zs = zs[zs["cue"].isin(["explicit", "implicit"]) & (zs["context"] == "ambiguous")]
    return pd.concat([zs[["system", "strategy", "cue", "context", "acc_amb", "s_amb"]],
                      _mitigation_scores()], ignore_index=True)  # fmt: skip


def _open_mean(table: pd.DataFrame, strategy: str, cue: str, metric: str) -> float:
    means = qa_group_means(table, groups=_groups())
    row = means[
        (means["group"] == OPEN)
        & (means["strategy"] == strategy)
        & (means["cue"] == cue)
        & (means["context"] == "ambiguous")
    ]
    assert len(row) == 1 and int(row["systems"].iloc[0]) == 8
    return float(row[metric].iloc[0])


def test_open_weight_zero_shot_means() -> None:
    """Table 2 (open-weight rows) -> §5.1: accuracy 0.88 explicit / 0.27 implicit, bias
    0.05 / 0.32, an average accuracy decrease of 0.61."""
    zs = _zero_shot_system_scores()
    assert round(_open_mean(zs, "zero-shot", "explicit", "acc_amb"), 2) == 0.88
    assert round(_open_mean(zs, "zero-shot", "implicit", "acc_amb"), 2) == 0.27
    assert round(_open_mean(zs, "zero-shot", "explicit", "s_amb"), 2) == 0.05
    assert round(_open_mean(zs, "zero-shot", "implicit", "s_amb"), 2) == 0.32
    gap = qa_cue_gap(zs)
    acc = gap[(gap["metric"] == "acc_amb") & gap["system"].map(_groups()).eq(OPEN)]
    assert round(acc["gap"].mean(), 2) == 0.61


def test_over_six_times() -> None:
    """Table 2 -> abstract and §5.1: open-weight implicit ambiguous bias is over six times
    the explicit one (0.3175 / 0.05 = 6.35 from the table's rows)."""
    zs = _zero_shot_system_scores()
    ratio = _open_mean(zs, "zero-shot", "implicit", "s_amb") / _open_mean(
        zs, "zero-shot", "explicit", "s_amb"
    )
    assert ratio == pytest.approx(6.35)
    assert 6 < ratio < 7


def test_ranges_and_disambiguated_means() -> None:
    """Table 2 -> §5.1 ranges: explicit ambiguous accuracy 0.76-0.98, implicit 0.16-0.39,
    implicit bias 0.26-0.40, explicit bias 0.02-0.08, disambiguated bias means -0.04
    (explicit) and +0.04 (implicit); controls 0.93-1.00 (qa_controls)."""
    zs = _zero_shot_system_scores()
    open_ = zs[zs["system"].map(_groups()) == OPEN]

    def rng(cue: str, context: str, metric: str) -> tuple[float, float]:
        v = open_.loc[(open_["cue"] == cue) & (open_["context"] == context), metric]
        return float(v.min()), float(v.max())

    assert rng("explicit", "ambiguous", "acc_amb") == (0.76, 0.98)
    assert rng("implicit", "ambiguous", "acc_amb") == (0.16, 0.39)
    assert rng("implicit", "ambiguous", "s_amb") == (0.26, 0.40)
    assert rng("explicit", "ambiguous", "s_amb") == (0.02, 0.08)
    means = qa_group_means(zs, groups=_groups())
    dis = means[(means["group"] == OPEN) & (means["context"] == "disambiguated")]
    s_dis = dis.set_index("cue")["s_dis"]
    assert round(s_dis["explicit"], 2) == -0.04 and round(s_dis["implicit"], 2) == 0.04
    controls = qa_controls(zs)
    controls = controls[controls["system"].map(_groups()) == OPEN]
    values = controls[["acc_amb", "acc_dis"]].to_numpy()
    assert values.min() == 0.93 and values.max() == 1.0
    assert set(controls["cue"]) == {"control_neutral", "control_none"}


def test_cue_gap_matches_table2_arrows() -> None:
    """Table 2's printed differences are the cue gap with cuegap's sign: accuracy drops
    (↓0.61 for Phi-4-mini) and bias rises (↑0.22) are positive gaps; GPT-5-mini's bias
    improvement (↓0.10) and Qwen3-32B's disambiguated bias improvement (↓0.04) negative."""
    gap = qa_cue_gap(_zero_shot_system_scores()).set_index(["system", "metric"])["gap"]
    assert gap["Phi-4-mini", "acc_amb"] == pytest.approx(0.61)
    assert gap["Phi-4-mini", "s_amb"] == pytest.approx(0.22)
    assert gap["Mistral-7B", "s_dis"] == pytest.approx(0.13)
    assert gap["GPT-5-mini", "s_amb"] == pytest.approx(-0.10)
    assert gap["Qwen3-32B", "s_dis"] == pytest.approx(-0.04)
    assert gap["Qwen2.5-7B", "acc_dis"] == pytest.approx(0.03)


def _pooled(mit: pd.DataFrame, strategy: str) -> pd.Series:
    row = mit[
        (mit["scope"] == "group")
        & (mit["group"] == OPEN)
        & (mit["strategy"] == strategy)
        & (mit["cue"] == "implicit")
    ]
    assert len(row) == 1
    return row.iloc[0]


def test_mitigation_reductions_ratio_of_means() -> None:
    """Tables 5-7 (dimension means per system) against Table 2's zero-shot -> §5.3:
    implicit bias 0.32 -> safety 0.13 (-60 %), few-shot 0.05 (-84 %), CoT 0.14 (-57 %),
    each a ratio of open-weight means; few-shot and CoT implicit accuracy 0.91 and 0.56."""
    mit = qa_mitigation(_all_strategies(), groups=_groups())
    expected = {"safety": (0.13, 0.60), "few-shot": (0.05, 0.84), "cot": (0.14, 0.57)}
    for strategy, (mean, reduction) in expected.items():
        row = _pooled(mit, strategy)
        assert round(row["baseline"], 2) == 0.32
        assert round(row["value"], 2) == mean, strategy
        assert round(row["reduction"], 2) == reduction, strategy
        assert row["systems"] == 8
    scores = _all_strategies()
    assert round(_open_mean(scores, "few-shot", "implicit", "acc_amb"), 2) == 0.91
    assert round(_open_mean(scores, "cot", "implicit", "acc_amb"), 2) == 0.56


def test_mitigation_per_system_follows_the_tables() -> None:
    """Tables 5-7 and Table 2, per system (§5.3). Agreeing with the prose: Qwen2.5-7B
    safety -39 %, Llama-3.3-70B few-shot -70 %, Qwen3-32B few-shot -98 %, Mistral-7B CoT
    -69 %, Llama-3.3-70B CoT -48 % (0.21), Phi-4-mini CoT rising to 0.30.

    Where the prose disagrees, the tables win: Qwen3-32B under safety has dimension mean
    0.01/6 = 0.0017, a 99 % reduction (prose: 97 %); Qwen3-32B under CoT has mean 0.02,
    -93 % (prose: 0.03, -90 %); Llama-3.1-8B safety is -43 % (prose: 42 %)."""
    mit = qa_mitigation(_all_strategies(), groups=_groups())
    per = mit[(mit["scope"] == "system") & (mit["cue"] == "implicit")]
    red = per.set_index(["system", "strategy"])["reduction"]
    val = per.set_index(["system", "strategy"])["value"]
    assert round(red["Qwen2.5-7B", "safety"], 2) == 0.39
    assert round(red["Llama-3.3-70B", "few-shot"], 2) == 0.70
    assert round(red["Qwen3-32B", "few-shot"], 2) == 0.98
    assert round(red["Mistral-7B", "cot"], 2) == 0.69
    assert round(red["Llama-3.3-70B", "cot"], 2) == 0.48
    assert round(val["Llama-3.3-70B", "cot"], 2) == 0.21
    assert round(val["Phi-4-mini", "cot"], 2) == 0.30 and red["Phi-4-mini", "cot"] < 0
    # The tables, not the prose:
    assert val["Qwen3-32B", "safety"] == pytest.approx(0.01 / 6)
    assert round(red["Qwen3-32B", "safety"], 2) == 0.99
    assert val["Qwen3-32B", "cot"] == pytest.approx(0.02)
    assert round(red["Qwen3-32B", "cot"], 2) == 0.93
    assert round(red["Llama-3.1-8B", "safety"], 2) == 0.43


def test_explicit_implicit_gap_per_strategy() -> None:
    """Table 2 and Tables 5-7 -> §5.3: the open-weight explicit-implicit bias gap narrows
    from 0.27 (zero-shot) to 0.10 (safety). For few-shot the tables give 0.0513 - 0.0144
    = 0.037, i.e. 0.04, not the prose's 0.03: the test follows the tables."""
    scores = _all_strategies()
    expected = {"zero-shot": 0.27, "safety": 0.10, "few-shot": 0.04}
    for strategy, gap in expected.items():
        diff = _open_mean(scores, strategy, "implicit", "s_amb") - _open_mean(
            scores, strategy, "explicit", "s_amb"
        )
        assert round(diff, 2) == gap, strategy
    assert _open_mean(scores, "few-shot", "implicit", "s_amb") == pytest.approx(0.0513, abs=1e-4)


def test_caste_under_few_shot_follows_the_table() -> None:
    """Table 6 (few-shot), open-weight means per dimension (qa_group_means on per-dimension
    rows). Caste is the highest dimension, and Llama-3.3-70B's caste bias is 0.49 as the
    prose says; but the table gives caste 1.31/8 = 0.164 (prose: 0.19) and age 0.066, so
    caste is 2.5 times the next dimension, not 'more than four times'. Gender (0.006 ->
    0.01) and religion (0.021 -> 0.02) agree with the prose; SES is 0.035 (prose 0.04)."""
    t6 = pd.read_csv(DATA / "tables5_7.csv")
    t6 = t6[(t6["strategy"] == "few-shot") & (t6["cue"] == "implicit")].assign(context="ambiguous")
    means = qa_group_means(t6, groups=_groups())
    dims = means[means["group"] == OPEN].set_index("dimension")["s_amb"]
    assert dims.idxmax() == "caste"
    assert dims["caste"] == pytest.approx(1.31 / 8)
    assert dims["age"] == pytest.approx(0.53 / 8)
    assert dims["caste"] / dims.drop("caste").max() == pytest.approx(1.31 / 0.53)
    assert dims["caste"] / dims.drop("caste").max() < 4
    assert round(dims["gender"], 2) == 0.01 and round(dims["religion"], 2) == 0.02
    assert dims["ses"] == pytest.approx(0.035)
    llama = t6[(t6["system"] == "Llama-3.3-70B") & (t6["dimension"] == "caste")]
    assert float(llama["s_amb"].iloc[0]) == 0.49


def test_system_scores_are_unweighted_dimension_means() -> None:
    """Tables 5-7 -> qa_system_scores: Qwen2.5-7B's safety implicit bias is the plain mean
    of its six dimension values (0.28, 0.39, 0.04, 0.09, 0.19, 0.14) = 1.13 / 6."""
    s = _mitigation_scores()
    row = s[(s["system"] == "Qwen2.5-7B") & (s["strategy"] == "safety") & (s["cue"] == "implicit")]
    assert float(row["s_amb"].iloc[0]) == pytest.approx(1.13 / 6)
    assert int(row["dimensions"].iloc[0]) == 6
