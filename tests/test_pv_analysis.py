"""The prompt-variance design end to end: simulate (planted truth) → ingest → SQL per-run
counts → stored analysis, and the format-sensitivity column of the QA verdicts.

The data are ``simulate_pv(systems=3, scale="small", cue_gap=True, seed=3)``: odd-numbered
systems are *steady* (a large implicit-side gap in every format), even-numbered ones
*fickle* (no mean gap, a per-format part of SD 0.5 on the raw ambiguous bias); truth.json
says which is which. References are computed independently from the written files.
"""

from __future__ import annotations

import json
from collections import Counter
from contextlib import nullcontext
from pathlib import Path

import numpy as np
import orjson
import pandas as pd
import pytest

from cuegap.designs import designs_in_store
from cuegap.designs.prompt_variance._analysis import PVSettings, analyze_prompt_variance, pv_tables
from cuegap.designs.prompt_variance._simulate import simulate_pv
from cuegap.designs.prompt_variance.stats import simulate_pv_counts
from cuegap.designs.qa._analysis import QASettings, analyze_qa
from cuegap.ingest import ingest_path
from cuegap.schema import make_engine, pv_counts, upgrade
from tests.conftest import pg_database, store_copy

FILES = ("bbq_bank.jsonl", "diffAware_sim.jsonl", "responses_bbq.jsonl", "responses_da.jsonl")
F = ["choice_format", "field_order"]


@pytest.fixture(scope="module")
def sim_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("pvsim")
    simulate_pv(out, systems=3, scale="small", cue_gap=True, seed=3)
    return out


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def pv_filled(request: pytest.FixtureRequest, tmp_path_factory, sim_dir: Path):
    """The simulated files ingested once per backend (each test works on a copy)."""
    if request.param == "sqlite":
        ctx = nullcontext(f"sqlite:///{tmp_path_factory.mktemp('pvstore') / 'store.db'}")
    else:
        ctx = pg_database()
    with ctx as url:
        eng = make_engine(url)
        upgrade(eng)
        for name in FILES:
            s = ingest_path(eng, sim_dir / name)
            assert s.quarantined == 0 and s.stored == s.read
        eng.dispose()
        yield url


@pytest.fixture
def pv_store(pv_filled: str, tmp_path: Path):
    with store_copy(pv_filled, tmp_path) as url:
        eng = make_engine(url)
        yield eng
        eng.dispose()


def _reference_counts(sim_dir: Path) -> Counter:
    """Per (system, category, cue, factors, replicate, column): counted line by line from
    the bank and response files, with BBQ's and Wang et al.'s definitions."""
    items = {}
    for line in (sim_dir / "bbq_bank.jsonl").read_text().splitlines()[1:]:
        it = json.loads(line)
        roles = {o["label"]: o["role"] for o in it["options"]}
        items[it["item_id"]] = ("bbq", it["dimension"], it["cue"], it, roles)
    for line in (sim_dir / "diffAware_sim.jsonl").read_text().splitlines():
        q = json.loads(line)
        sub = q["question_id"].split("_")[1]
        items[q["question_id"]] = ("da", sub, "explicit", q, None)
    out: Counter = Counter()
    for name in ("responses_bbq.jsonl", "responses_da.jsonl"):
        for line in (sim_dir / name).read_text().splitlines()[1:]:
            r = orjson.loads(line)
            fam, cat, cue, it, roles = items[r["item_id"]]
            lab = r["predicted_label"]
            if fam == "bbq":
                ctx = "amb" if it["context_condition"] == "ambiguous" else "dis"
                role = roles[lab]
                neg = it["polarity"] == "negative"
                col = (
                    "unknown"
                    if role == "unknown"
                    else "biased"
                    if (role == "target") == neg
                    else "anti"
                )
                col = f"{ctx}_{col}"
            else:
                split = it["source_metadata"]["additional_metadata"]["split"]
                if split == "different":
                    col = (
                        "neq_equal"
                        if lab == "C"
                        else "neq_correct"
                        if lab == it["correct_answer_id"]
                        else "neq_wrong"
                    )
                else:
                    col = "eq_equal" if lab == "C" else "eq_group"
            f = r["factors"]
            key = (r["system"], cat, cue, f["choice_format"], f["field_order"], r["repeat"], col)
            out[key] += 1
    return out


def test_sql_counts_equal_the_line_by_line_reference(pv_store, sim_dir: Path) -> None:
    got = pv_counts(pv_store, factors=F, keys=["system", "category", "cue"])
    ref = _reference_counts(sim_dir)
    keys = ["system", "category", "cue", *F, "replicate"]
    long = got.melt(id_vars=keys, var_name="col", value_name="n").dropna()
    long = long[long["n"] > 0]
    mine = {(*row[:-1],): int(row[-1]) for row in long.itertuples(index=False, name=None)}
    assert mine == dict(ref)


def test_analysis_tables_planted_truth_and_reuse(pv_store, sim_dir: Path) -> None:
    result = analyze_prompt_variance(pv_store)
    assert result.factors == F and not result.reused
    t = result.tables
    for name in (
        "pv_scores",
        "pv_anova",
        "pv_anova_summary",
        "pv_extremes",
        "pv_rank_discordance",
        "pv_components",
        "pv_cue_gap_formats",
    ):
        assert name in t and len(t[name]), name
    # 3 systems x 2 categories x (4 x 2) combinations x 3 replicates, two metrics per family
    scores = t["pv_scores"].dropna(subset=["score"])
    assert len(scores) == 2 * (3 * 2 * 8 * 3 * 2)
    # The explicit side's per-combination means track the planted true scores.
    truth = pd.read_csv(sim_dir / "truth.csv")
    truth = truth[truth["cue"].fillna("explicit") == "explicit"]
    means = scores.groupby(["system", "category", "metric", *F], as_index=False)["score"].mean()
    both = means.merge(truth, on=["system", "category", "metric", *F])
    for metric, grp in both.groupby("metric"):
        assert np.corrcoef(grp["score"], grp["true_score"])[0, 1] > 0.6, metric
    # s_diffaware's exact run variance is in the truth: the 48 combination means (3 runs
    # each) give z² with mean 1 (chi-square / 48: SD 0.2), so [0.5, 1.6] is about ±3 SD.
    da = both[both["metric"] == "s_diffaware"]
    z2 = (da["score"] - da["true_score"]) ** 2 / (da["sampling_var"] / 3)
    assert len(da) == 48 and 0.5 < z2.mean() < 1.6
    # Planted format-insensitive vs format-driven cue gaps.
    info = json.loads((sim_dir / "truth.json").read_text())["planted_cue_gap"]
    sens = t["pv_cue_gap_formats"].set_index("system")["format_sensitive"]
    for system, planted in info.items():
        assert bool(sens[system]) == (planted["format_sd"] > 0), system
    again = analyze_prompt_variance(pv_store)
    assert again.reused and again.id == result.id
    assert set(again.tables) == set(t)


def test_qa_verdicts_gain_the_format_sensitivity_column(pv_store, sim_dir: Path) -> None:
    assert designs_in_store(pv_store) == ["qa", "prompt-variance"]
    verdicts = analyze_qa(pv_store, QASettings(n_boot=200)).tables["verdicts"].set_index("system")
    info = json.loads((sim_dir / "truth.json").read_text())["planted_cue_gap"]
    for system, planted in info.items():
        row = verdicts.loc[system]
        if planted["format_sd"] > 0:  # fickle: never a clean flag or pass
            assert bool(row["format_sensitive"])
            assert row["verdict"] in ("format-sensitive", "inconclusive")
        else:
            assert not bool(row["format_sensitive"])
            assert row["verdict"] == row["verdict_without_formats"] == "flagged"


def test_declared_factor_must_exist(pv_store) -> None:
    with pytest.raises(ValueError, match="factors \\['font'\\] are not on any response"):
        analyze_prompt_variance(pv_store, PVSettings(factors=("font",)))


def test_pure_tables_with_one_factor() -> None:
    """One factor: no two-way components; every other table is there."""
    sim = simulate_pv_counts(
        systems=("a", "b"),
        categories=("age",),
        factors={"choice_format": ["x", "y", "z"]},
        replicates=3,
        n_questions=40,
        seed=1,
    )
    t = pv_tables(sim.counts, factors=["choice_format"])
    assert t["pv_components"].empty
    assert set(t["pv_anova"]["metric"]) == {"s_bbq_dis", "s_bbq_amb", "s_diffaware", "s_ctxtaware"}
    assert len(t["pv_anova"]) == 2 * 4


def test_posterior_verdicts_get_the_same_rule(pv_store, sim_dir: Path) -> None:
    """A short fit (it may miss the convergence gate: then every verdict is inconclusive);
    either way the fickle systems are never a clean flag or pass and the columns are
    there."""
    if pv_store.dialect.name != "sqlite":
        pytest.skip("one backend is enough for the sampler")
    from cuegap.designs import BayesSettings
    from cuegap.designs.qa._analysis import analyze_qa_bayes

    fit = analyze_qa_bayes(
        pv_store, QASettings(n_boot=100), BayesSettings(draws=50, tune=50, chains=1)
    )
    verdicts = fit.tables["verdicts"].set_index("system")
    assert "qa_cue_gap_formats" in fit.tables
    info = json.loads((sim_dir / "truth.json").read_text())["planted_cue_gap"]
    for system, planted in info.items():
        assert bool(verdicts.loc[system, "format_sensitive"]) == (planted["format_sd"] > 0)
        if planted["format_sd"] > 0:
            assert verdicts.loc[system, "verdict"] not in ("flagged", "passed")
