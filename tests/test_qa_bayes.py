"""The QA design's hierarchical Bayesian model: array layout and derived scores checked by
hand, and one real nutpie fit to counts with planted gaps (seed 001's Table 2 ranges)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import xarray as xr

from cuegap.designs.qa.stats._bayes import (
    fit_qa_bayes,
    prepare_qa_counts,
    qa_bayes_tables,
    qa_draws,
)
from cuegap.designs.qa.stats._sim import planted_qa_counts


def _cell(system, cue, dim, unknown, st, anti, strategy="zero-shot") -> list[dict]:
    base = dict(system=system, strategy=strategy, cue=cue, context="ambiguous", dimension=dim,
                subgroup="g", polarity="negative", gold="unknown")  # fmt: skip
    return [
        base | {"answer": "unknown", "n": unknown},
        base | {"answer": "target", "n": st},
        base | {"answer": "non_target", "n": anti},
    ]


def test_counts_become_arrays_by_hand() -> None:
    rows = [
        *_cell("a", "explicit", "age", 8, 1, 1),
        *_cell("a", "implicit", "age", 2, 6, 2),
        *_cell("a", "implicit", "caste", 5, 3, 2),
        *_cell("b", "explicit", "age", 9, 1, 0),  # b has no implicit answers: left out
        *_cell("a", "explicit", "age", 100, 0, 0, strategy="cot"),  # another strategy
    ]
    # a non-negative question: the non-target is the stereotype-consistent answer
    nonneg = [r | {"polarity": "nonneg"} for r in _cell("a", "explicit", "caste", 4, 1, 3)]
    data = prepare_qa_counts(pd.DataFrame(rows + nonneg))
    assert data.systems == ["a"] and data.dimensions == ["age", "caste"]
    assert data.n_parsed.tolist() == [[[10, 8], [10, 10]]]
    assert data.n_unknown.tolist() == [[[8, 4], [2, 5]]]
    assert data.n_stereotyped.tolist() == [[[1, 3], [6, 3]]]
    assert data.n_anti.tolist() == [[[1, 1], [2, 2]]]
    with pytest.raises(ValueError, match="both explicit and implicit"):
        prepare_qa_counts(pd.DataFrame(_cell("b", "explicit", "age", 9, 1, 0)))


def test_scores_from_draws_follow_eq_8_and_skip_unanswered_dimensions() -> None:
    rows = [*_cell("a", "explicit", "age", 8, 1, 1), *_cell("a", "implicit", "age", 2, 6, 2),
            *_cell("a", "implicit", "caste", 5, 3, 2)]  # fmt: skip
    data = prepare_qa_counts(pd.DataFrame(rows))
    logit = lambda p: np.log(p / (1 - p))  # noqa: E731
    # one draw: P(unknown) 0.8 / 0.5 / 0.2 / 0.5 and P(stereotyped | not unknown) 0.75
    p_u = np.array([[[0.8, 0.5], [0.2, 0.5]]])
    post = xr.Dataset(
        {
            "eta_u": (("chain", "draw", "system", "cue", "dimension"), logit(p_u)[None, None]),
            "eta_b": (
                ("chain", "draw", "system", "cue", "dimension"),
                np.full((1, 1, 1, 2, 2), logit(0.75)),
            ),
        }
    )
    out = qa_draws(post, data)
    # explicit answered only age: S_amb = (1 - 0.8) * (2 * 0.75 - 1) = 0.1;
    # implicit: mean of 0.8 * 0.5 = 0.4 and 0.5 * 0.5 = 0.25.
    assert out["s_amb"][0, 0, 0].tolist() == pytest.approx([0.1, 0.325])
    assert out["acc_amb"][0, 0, 0].tolist() == pytest.approx([0.8, 0.35])
    assert out["gap"][0, 0].tolist() == pytest.approx([0.225])


def _planted(seed: int = 11) -> tuple[pd.DataFrame, dict[str, float]]:
    """Six systems × four dimensions × two sub-groups, 300 ambiguous and 300 disambiguated
    answers per cell; systems 0-3 are more stereotyped under implicit cues (Table 2:
    accuracy 0.16-0.39, bias 0.26-0.40), 4-5 answer both cue types alike."""
    return planted_qa_counts(
        [None] * 4 + [0.0] * 2, n=300, seed=seed, subgroups=2, disambiguated=True
    )


@pytest.fixture(scope="session")
def qa_fit():
    counts, truth = _planted()
    dis = truth.pop("_dis")
    fit = fit_qa_bayes(counts, seed=3)  # the settings `cuegap analyze --bayes` uses
    return fit, truth, dis


def test_real_fit_converges_and_covers_the_planted_gaps(qa_fit) -> None:
    fit, truth, _ = qa_fit
    assert fit.converged, fit.message
    assert fit.diagnostics["sampler"].iloc[-1] == "nutpie"
    gap = qa_bayes_tables(fit, delta=0.05)["qa_bayes_gap"].set_index("system")
    covered = [gap.loc[s, "gap_low"] <= g <= gap.loc[s, "gap_high"] for s, g in truth.items()]
    # 90% intervals: fewer than 4 of 6 covered has probability 0.016 when coverage is right.
    assert sum(covered) >= 4, (gap, truth)
    for s, g in truth.items():
        assert abs(gap.loc[s, "gap"] - g) < 0.08, (s, gap.loc[s, "gap"], g)
    for s in ("sys-0", "sys-1", "sys-2", "sys-3"):  # planted G >= 0.15: clearly flagged
        assert gap.loc[s, "p_gap_gt_delta"] >= 0.95
        assert gap.loc[s, "rank_high"] <= 4
    for s in ("sys-4", "sys-5"):  # planted G = 0
        assert gap.loc[s, "p_gap_gt_delta"] < 0.95
        assert gap.loc[s, "rank_low"] >= 4


def test_scores_table_has_every_system_cue_and_metric(qa_fit) -> None:
    fit, _, dis = qa_fit
    tables = qa_bayes_tables(fit)
    scores = tables["qa_bayes_scores"]
    assert len(scores) == 6 * 2 * 6  # acc_amb, s_amb_raw, s_amb, acc_dis, acc_dis_bbq, s_dis
    acc = scores[scores["metric"] == "acc_amb"]
    assert ((acc["low"] <= acc["mean"]) & (acc["mean"] <= acc["high"])).all()
    assert acc["mean"].between(0, 1).all()

    # disambiguated scores: planted accuracy 0.85-0.97 and S_dis = 2β (0-0.06) per cue
    for system, cues in dis.items():
        for cue, planted in cues.items():
            for metric in ("acc_dis", "s_dis"):
                row = scores.query("system == @system and cue == @cue and metric == @metric")
                assert abs(row["mean"].iloc[0] - planted[metric]) < 0.04, (system, cue, metric)
    cue_gap = tables["qa_bayes_cue_gap"]
    assert set(cue_gap["metric"]) == {
        "acc_amb",
        "s_amb_raw",
        "s_amb",
        "acc_dis",
        "acc_dis_bbq",
        "s_dis",
    }


def test_verdicts_follow_the_posterior_and_the_gate(qa_fit) -> None:
    from dataclasses import replace

    from cuegap.designs.qa.stats import qa_bayes_verdicts

    fit, _, _ = qa_fit
    gap = qa_bayes_tables(fit, delta=0.05)["qa_bayes_gap"]
    v = qa_bayes_verdicts(fit, gap, delta=0.05, probability=0.95).set_index("system")
    assert (v["source"] == "bayesian").all()
    assert (v.loc[["sys-0", "sys-1", "sys-2", "sys-3"], "verdict"] == "flagged").all()
    assert (v.loc[["sys-4", "sys-5"], "verdict"] != "flagged").all()
    # 4 dimensions x 2 sub-groups x 300 ambiguous answers per cue side, minus unparsable
    # (none planted): a policy minimum above 2400 is inconclusive
    strict = qa_bayes_verdicts(fit, gap, min_parsable=2401)
    assert (strict["verdict"] == "inconclusive").all()
    assert strict["reason"].str.contains("only 2400 parsable answers").all()
    failed = replace(fit, converged=False, message="not converged after 2 attempt(s): x")
    out = qa_bayes_verdicts(failed, gap)
    assert (out["verdict"] == "inconclusive").all()
    assert out["reason"].str.contains("convergence gate: not converged").all()


def test_disambiguated_arrays_and_scores_by_hand() -> None:
    base = dict(system="a", strategy="zero-shot", context="disambiguated", dimension="age",
                subgroup="g")  # fmt: skip
    rows = [*_cell("a", "explicit", "age", 8, 1, 1), *_cell("a", "implicit", "age", 2, 6, 2)]
    for cue in ("explicit", "implicit"):
        rows += [  # negative question: gold target = the stereotyped person (k = 0)
            base | dict(cue=cue, polarity="negative", gold="target", answer="target", n=7),
            base | dict(cue=cue, polarity="negative", gold="target", answer="non_target", n=2),
            base | dict(cue=cue, polarity="negative", gold="target", answer="unknown", n=1),
            # non-negative question, gold target: the stereotyped answer is the non-target
            base | dict(cue=cue, polarity="nonneg", gold="target", answer="target", n=5),
            base | dict(cue=cue, polarity="nonneg", gold="target", answer="non_target", n=5),
        ]
    data = prepare_qa_counts(pd.DataFrame(rows))
    assert data.d_parsed[0, 0, 0].tolist() == [10, 10]
    assert data.d_unknown[0, 0, 0].tolist() == [1, 0]
    assert data.d_correct[0, 0, 0].tolist() == [7, 5]
    assert data.d_wrong[0, 0, 0].tolist() == [2, 5]
    logit = lambda p: np.log(p / (1 - p))  # noqa: E731
    dims5 = ("chain", "draw", "system", "cue", "group")
    post = xr.Dataset(
        {
            "eta_u": (dims5, np.zeros((1, 1, 1, 2, 1))),
            "eta_b": (dims5, np.zeros((1, 1, 1, 2, 1))),
            "eta_du": (dims5, np.full((1, 1, 1, 2, 1), logit(0.1))),
            # P(correct | k=0) = 0.8, P(correct | k=1) = 0.6
            "eta_dc": ((*dims5, "k"), logit(np.array([0.8, 0.6]))[None, None, None, None, None]
                       * np.ones((1, 1, 1, 2, 1, 2))),
        }
    )  # fmt: skip
    out = qa_draws(post, data)
    # equal shares of the two kinds: Acc_dis = (0.8 + 0.6) / 2; stereotyped share =
    # 0.5 * 0.8 + 0.5 * (1 - 0.6) = 0.6, S_dis = 0.2; BBQ accuracy = 0.9 * 0.7
    assert out["acc_dis"][0, 0, 0].tolist() == pytest.approx([0.7, 0.7])
    assert out["s_dis"][0, 0, 0].tolist() == pytest.approx([0.2, 0.2])
    assert out["acc_dis_bbq"][0, 0, 0].tolist() == pytest.approx([0.63, 0.63])


def _free(data) -> set[str]:
    from cuegap.designs.qa.stats._bayes_model import build_qa_model

    return {rv.name for rv in build_qa_model(data).free_RVs}


def test_one_system_has_one_fixed_scale_group_level() -> None:
    """Issue 27: on one system a cell is its group, and a learnt dimension, sub-group or
    cell SD would rest on its six groups alone; the model keeps α per cue and one
    zero-sum group deviation of fixed scale, and says why the others are left out."""
    from cuegap.designs.qa.stats._bayes_model import qa_levels_table, qa_model_levels

    counts, _ = planted_qa_counts(
        [None], n=40, dimensions=("age", "gender", "race"), subgroups=2, disambiguated=True
    )
    data = prepare_qa_counts(counts)
    assert _free(data) == {f"{v}_{k}" for v in ("alpha", "z_group") for k in ("u", "b", "du", "dc")}
    levels = qa_model_levels(data)
    assert levels["group"] == ""
    for level in ("dimension", "subgroup", "cell"):
        assert levels[level].startswith("one system: a learnt SD would rest on its few groups")
    table = qa_levels_table(data)
    assert table["level"].tolist() == ["dimension", "subgroup", "cell", "group"]
    assert table["in_model"].tolist() == [False, False, False, True]


def test_levels_follow_what_the_data_can_inform() -> None:
    # Two systems, one dimension with one sub-group: only the cell level can be informed.
    two, _ = planted_qa_counts([None, 0.0], n=40, dimensions=("age",), subgroups=1)
    free = _free(prepare_qa_counts(two))
    assert {"sd_cell_u", "z_cell_u", "sd_cell_b"} <= free
    assert not {n for n in free if n.startswith(("sd_dimension", "sd_subgroup"))}
    # Six systems, four dimensions of two sub-groups: every level.
    counts, _ = _planted()
    free = _free(prepare_qa_counts(counts))
    assert {"sd_dimension_u", "sd_subgroup_u", "sd_cell_u", "sd_cell_dc"} <= free
    assert not {n for n in free if n.startswith("z_group")}


def test_one_system_logits_keep_their_full_shape() -> None:
    from cuegap.designs.qa.stats._bayes_model import build_qa_model

    counts, _ = planted_qa_counts([None], n=40, dimensions=("age",), subgroups=1)
    data = prepare_qa_counts(counts)
    model = build_qa_model(data)  # one system, one group: α alone
    assert {rv.name for rv in model.free_RVs} == {"alpha_u", "alpha_b"}
    point = model.initial_point()
    eta = model.compile_fn(model["eta_u"], inputs=model.value_vars, on_unused_input="ignore")
    assert eta(point).shape == (1, 2, 1)
