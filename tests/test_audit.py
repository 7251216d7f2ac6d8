"""End-to-end analysis: stored tables, invariances, backend equality and export.

One small simulated audit (2 systems, seed 11) is ingested several ways; the analysis of
each must give the same tables:

* shuffled lines split over two files (order and file boundaries carry no information);
* every race and gender label renamed consistently in the item bank and the responses
  (group labels are names, not data);
* the same files ingested into PostgreSQL instead of SQLite (same SQL, same numbers).
"""

from __future__ import annotations

import json
import random
import re
import shutil
from dataclasses import replace
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from cuegap.audit import export_table, list_tables, load_table
from cuegap.cli import app
from cuegap.designs.dilemma._analysis import analyze
from cuegap.designs.dilemma._analysis_settings import AnalysisSettings
from cuegap.designs.dilemma._analysis_tables import (
    TABLES,
    fingerprints,
    frequentist_tables,
    load_store_data,
)
from cuegap.designs.dilemma.simulate import simulate, synthetic_item_bank
from cuegap.ingest import ingest_path
from cuegap.schema import make_engine, upgrade
from tests.conftest import pg_database

SETTINGS = AnalysisSettings(n_boot=20)
RELABEL = {
    "Asian": "Zeta",
    "Black": "Eta",
    "Hispanic": "Theta",
    "Muslim": "Iota",
    "White": "Kappa",
    "non-binary": "epsilon",
    "woman": "delta",
    "man": "gamma",
}
_WORD = re.compile(r"\b(" + "|".join(map(re.escape, RELABEL)) + r")\b")


def _store(url: str, *files: Path):
    engine = make_engine(url)
    upgrade(engine)
    for f in files:
        ingest_path(engine, f)
    return engine


@pytest.fixture(scope="module")
def sim(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("sim")
    # 20 dilemmas: every table is still computed, and invariance checks need no more data.
    bank = synthetic_item_bank(seed=11, n_dilemmas=20)
    result = simulate(root / "data", systems=2, seed=11, item_bank=bank)
    header, *lines = result.responses_path.read_text().splitlines()
    random.Random(5).shuffle(lines)
    half = len(lines) // 2
    (root / "part1.jsonl").write_text("\n".join([header, *lines[:half]]) + "\n")
    (root / "part2.jsonl").write_text("\n".join([header, *lines[half:]]) + "\n")
    for name in ("itembank.json", "responses.jsonl"):
        src = (root / "data" / name).read_text()
        (root / f"relabelled-{name}").write_text(_WORD.sub(lambda m: RELABEL[m.group(1)], src))
    return {
        "bank": result.itembank_path,
        "responses": result.responses_path,
        "part1": root / "part1.jsonl",
        "part2": root / "part2.jsonl",
        "relabelled_bank": root / "relabelled-itembank.json",
        "relabelled_responses": root / "relabelled-responses.jsonl",
        "root": root,
    }


@pytest.fixture(scope="module")
def base_db(sim) -> Path:
    """A SQLite store of the simulated audit, closed (copy it to get a writable store)."""
    path = sim["root"] / "base.db"
    _store(f"sqlite:///{path}", sim["bank"], sim["responses"]).dispose()
    return path


@pytest.fixture(scope="module")
def base_engine(base_db):
    return make_engine(f"sqlite:///{base_db}")


def _copy(base_db: Path, dest: Path):
    shutil.copyfile(base_db, dest)
    return make_engine(f"sqlite:///{dest}")


@pytest.fixture(scope="module")
def base_tables(base_engine) -> dict[str, pd.DataFrame]:
    return frequentist_tables(load_store_data(base_engine), SETTINGS)


def _assert_tables_equal(a: dict[str, pd.DataFrame], b: dict[str, pd.DataFrame]) -> None:
    assert sorted(a) == sorted(b)
    for name in a:
        x, y = a[name], b[name]
        assert list(x.columns) == list(y.columns), name
        keys = [c for c in x.columns if x[c].dtype == object or x[c].dtype == "str"]
        x = x.sort_values(keys).reset_index(drop=True) if keys else x
        y = y.sort_values(keys).reset_index(drop=True) if keys else y
        pd.testing.assert_frame_equal(x, y, check_dtype=False, rtol=1e-12, obj=name)


CONDITIONAL = {  # need FormalNamed data, enough systems with metadata, or annotator labels
    "formal_named_share",
    "gap_regression",
    "gap_regression_correlations",
    "gap_regression_fit",
    "agreement",
    "dilemma_gap_formats",  # needs two or more prompt variants
}


def test_every_documented_table_is_computed(base_tables) -> None:
    assert set(TABLES) - CONDITIONAL <= set(base_tables) <= set(TABLES)
    assert "agreement" in base_tables  # the simulated bank carries annotator labels
    assert "gap_sd_pp" in base_tables["gap"] and "net_sd_pp" in base_tables["group_rates"]
    for name in ("group_rates", "macro", "gap", "macro_gap", "sign_tests", "recovery"):
        assert len(base_tables[name]) > 0, name
    groups = set(base_tables["gap"]["group"])
    assert {"man", "woman", "non-binary", "Asian", "Muslim", "White"} <= groups


def test_shuffled_split_ingest_gives_same_results(sim, base_engine, base_tables) -> None:
    engine = _store(f"sqlite:///{sim['root'] / 'split.db'}", sim["bank"], sim["part2"])
    ingest_path(engine, sim["part1"])
    data = load_store_data(engine)
    assert fingerprints(data) == fingerprints(load_store_data(base_engine))
    _assert_tables_equal(base_tables, frequentist_tables(data, SETTINGS))


def test_relabelled_groups_give_same_results(sim, base_tables) -> None:
    engine = _store(
        f"sqlite:///{sim['root'] / 'relabelled.db'}",
        sim["relabelled_bank"],
        sim["relabelled_responses"],
    )
    relabelled = frequentist_tables(load_store_data(engine), SETTINGS)
    back = {v: k for k, v in RELABEL.items()}

    def unmap(df: pd.DataFrame) -> pd.DataFrame:
        df = df.copy()
        for col in ("group", "gender", "race"):
            if col in df.columns:
                df[col] = df[col].map(
                    lambda g: (
                        " × ".join(back.get(p, p) for p in g.split(" × "))
                        if isinstance(g, str)
                        else g
                    )
                )
        return df

    _assert_tables_equal(base_tables, {k: unmap(v) for k, v in relabelled.items()})


def test_postgresql_gives_same_results_as_sqlite(sim, base_tables) -> None:
    with pg_database() as url:
        engine = _store(url, sim["bank"], sim["responses"])
        try:
            _assert_tables_equal(base_tables, frequentist_tables(load_store_data(engine), SETTINGS))
        finally:
            engine.dispose()


def test_analyze_stores_reuses_and_exports(base_db, tmp_path: Path) -> None:
    engine = _copy(base_db, tmp_path / "s.db")
    first = analyze(engine, SETTINGS)
    assert not first.reused and first.status == "ok"
    again = analyze(engine, SETTINGS)
    assert again.reused and again.id == first.id
    assert analyze(engine, SETTINGS, force=True).id != first.id
    other = analyze(engine, AnalysisSettings(n_boot=0, seed=1))
    assert not other.reused
    stored = load_table(engine, "macro_gap", first.id)
    pd.testing.assert_frame_equal(stored, first.tables["macro_gap"], check_dtype=False)
    # every table the analysis returned, and the verdict records the store writes beside them
    assert set(list_tables(engine)["name"]) == set(first.tables) | {"verdict_records"}
    csv = export_table(engine, "gap", tmp_path / "gap.csv")
    parquet = export_table(engine, "gap", tmp_path / "out" / "gap.parquet")
    from_csv, from_parquet = pd.read_csv(csv), pd.read_parquet(parquet)
    assert len(from_csv) == len(from_parquet) == len(first.tables["gap"])
    assert from_parquet["gap_pp"].tolist() == pytest.approx(first.tables["gap"]["gap_pp"].tolist())
    with pytest.raises(KeyError, match=r"no result table 'nope'.*macro_gap"):
        load_table(engine, "nope")
    with pytest.raises(ValueError, match=r"must end in \.csv or \.parquet"):
        export_table(engine, "gap", tmp_path / "gap.xlsx")


def test_new_data_changes_only_that_systems_fingerprint(base_db, tmp_path: Path) -> None:
    engine = _copy(base_db, tmp_path / "f.db")
    _, before = fingerprints(load_store_data(engine))
    first = next(iter(before))
    extra = tmp_path / "extra.jsonl"
    extra.write_text(
        json.dumps(
            {
                "system": first,
                "item_id": "direct-1",
                "probe": "what_if",
                "individual": "A",
                "repeat": 7,
                "response": "option1",
            }
        )
        + "\n"
    )
    ingest_path(engine, extra)
    _, after = fingerprints(load_store_data(engine))
    changed = {s for s in before if before[s] != after[s]}
    assert changed == {first}


def test_cli_analyze_and_export(base_db, tmp_path: Path) -> None:
    db = tmp_path / "cli.db"
    shutil.copyfile(base_db, db)
    runner = CliRunner()
    res = runner.invoke(app, ["--db", str(db), "analyze", "--boot", "0"])
    assert res.exit_code == 0, res.output
    assert "computed and stored" in res.output and "Macro Cue Visibility Gap" in res.output
    res = runner.invoke(app, ["--db", str(db), "analyze", "--boot", "0"])
    assert "reused" in res.output
    out = tmp_path / "t.csv"
    res = runner.invoke(app, ["--db", str(db), "export", "sign_tests", "--out", str(out)])
    assert res.exit_code == 0 and out.exists()
    assert {"adverse", "favorable", "p_adjusted"} <= set(pd.read_csv(out).columns)
    res = runner.invoke(app, ["--db", str(db), "export", "nope", "--out", str(out)])
    assert res.exit_code == 2 and "no result table 'nope'" in res.output
    policy = tmp_path / "p.toml"
    policy.write_text("[data]\nmax_abstention = 2\n")
    res = runner.invoke(app, ["--db", str(db), "analyze", "--policy", str(policy)])
    assert res.exit_code == 2 and "max_abstention" in res.output
    res = runner.invoke(app, ["--db", str(db), "tables"])
    assert res.exit_code == 0 and "macro_gap" in res.output


def test_docs_document_every_result_table() -> None:
    doc = (Path(__file__).parent.parent / "docs" / "analysis.md").read_text("utf-8")
    missing = [name for name in TABLES if f"| `{name}` |" not in doc]
    assert not missing, f"docs/analysis.md's result-table list lacks {missing}"


def test_cli_bayes_that_misses_the_gate_says_how_to_sample_longer(base_db, tmp_path: Path) -> None:
    db = tmp_path / "cli.db"
    shutil.copyfile(base_db, db)
    args = ["--db", str(db), "analyze", "--boot", "0", "--bayes", "--draws", "15"]
    res = CliRunner().invoke(app, [*args, "--chains", "2"])
    assert res.exit_code == 0, res.output
    assert "did not converge" in res.output
    assert "cuegap analyze --bayes --draws 30 --chains 4" in res.output
    engine = make_engine(f"sqlite:///{db}")
    verdicts = load_table(engine, "verdicts", kind="bayesian")
    assert (verdicts["verdict"] == "inconclusive").all()
    engine.dispose()


def test_bayesian_analysis_is_stored_gated_and_reused(
    base_db, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A real (small) PyMC fit through the audit layer: tables, verdicts, NetCDF, reuse."""
    from cuegap.audit import latest_analysis_id, load_idata
    from cuegap.designs import BayesSettings
    from cuegap.designs.dilemma._analysis import analyze_bayes

    engine = _copy(base_db, tmp_path / "b.db")
    bayes = BayesSettings(draws=300, tune=300, chains=2, seed=5)
    fit = analyze_bayes(engine, SETTINGS, bayes)
    assert fit.kind == "bayesian" and not fit.reused
    diag = fit.tables["bayes_diagnostics"]
    assert fit.status == ("ok" if bool(diag["passed"].iloc[-1]) else "not_converged")
    for name in ("bayes_gap", "bayes_ranks", "verdicts"):
        assert len(fit.tables[name]) > 0, name
    verdicts = fit.tables["verdicts"]
    freq_id = latest_analysis_id(engine, "frequentist")
    freq = load_table(engine, "verdicts", freq_id)
    assert set(verdicts["system"]) == set(freq["system"])
    if fit.status == "ok":
        assert set(verdicts.loc[verdicts["source"] == "bayesian", "system"])
    else:
        assert (verdicts["verdict"] == "inconclusive").all()
        assert verdicts["reason"].str.contains("did not converge").all()
    # both kinds store `verdicts`: listed twice, picked by kind, and the CLI says which
    listed = list_tables(engine).query("name == 'verdicts'")
    assert sorted(listed["kind"]) == ["bayesian", "frequentist"]
    pd.testing.assert_frame_equal(load_table(engine, "verdicts", kind="frequentist"), freq)
    pd.testing.assert_frame_equal(load_table(engine, "verdicts"), verdicts)  # the newest
    runner, db, out = CliRunner(), str(tmp_path / "b.db"), tmp_path / "v.csv"
    res = runner.invoke(app, ["--db", db, "export", "verdicts", "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert f"of bayesian analysis {fit.id}" in res.output
    assert "a frequentist analysis also stores 'verdicts'; pass --kind frequentist" in res.output
    args = ["--db", db, "export", "verdicts", "--out", str(out), "--kind", "frequentist"]
    res = runner.invoke(app, args)
    assert res.exit_code == 0 and "of frequentist analysis" in res.output
    assert "also stores" not in res.output
    assert len(pd.read_csv(out)) == len(freq)
    res = runner.invoke(app, [*args[:-1], "bayes"])
    assert res.exit_code == 2
    assert "kind must be one of frequentist, bayesian, qa, qa_bayesian, prompt_variance" in (
        res.output
    )
    res = runner.invoke(app, [*args[:-2], "--kind", "bayesian", "--analysis", str(freq_id)])
    assert res.exit_code == 2
    assert f"no result table 'verdicts' in analysis {freq_id} of a bayesian analysis" in res.output
    idata = load_idata(engine, fit.id)
    assert "posterior" in idata.groups()
    # another verdict policy: new verdicts from the same posterior, nothing sampled
    import cuegap.designs.dilemma.stats as dilemma_stats
    from cuegap.models import Policy

    def no_sampling(*args, **kwargs):
        raise AssertionError("sampled although only the policy changed")

    monkeypatch.setattr(dilemma_stats, "fit_bayes", no_sampling)
    strict = replace(SETTINGS, policy=Policy(delta_pp=5.0))
    again5 = analyze_bayes(engine, strict, bayes)
    assert again5 is not None and again5.id != fit.id and not again5.reused
    gap2 = fit.tables["bayes_gap"].set_index(["system", "group_type", "group"])
    gap5 = again5.tables["bayes_gap"].set_index(["system", "group_type", "group"])
    assert (gap5["delta"] == 5.0).all() and (gap2["delta"] == 2.0).all()
    pd.testing.assert_series_equal(gap5["gap_mean"], gap2["gap_mean"])  # same draws
    assert (gap5["p_gap_gt_delta"] <= gap2["p_gap_gt_delta"] + 1e-12).all()
    assert (gap5["p_gap_gt_delta"] < gap2["p_gap_gt_delta"]).any()
    from cuegap.designs import get
    from cuegap.designs.dilemma._report import build_report

    def _build(engine, *, policy: Policy):  # as `cuegap report --policy`: re-run, then read
        newest = latest_analysis_id(engine, "frequentist")
        return build_report(
            engine, analysis_id=get("dilemma").under_policy(engine, newest, policy, None)
        )

    assert _build(engine, policy=Policy(delta_pp=5.0)).bayes.analysis_id == again5.id
    # a report under yet another policy: the re-run re-derives the posterior verdicts
    report3 = _build(engine, policy=Policy(delta_pp=3.0))
    assert report3.bayes is not None and report3.bayes.analysis_id > again5.id
    used = load_table(engine, "bayes_gap", report3.bayes.analysis_id)
    assert (used["delta"] == 3.0).all()
    other_sampling = BayesSettings(draws=50, tune=50, chains=2, seed=5)
    assert analyze_bayes(engine, strict, other_sampling, sample=False) is None
    again = analyze_bayes(engine, SETTINGS, bayes)
    assert again.reused and again.id == fit.id
    other_boot = analyze_bayes(engine, replace(SETTINGS, n_boot=10), bayes)
    assert other_boot.reused and other_boot.id == fit.id  # the bootstrap is not the fit's

    report = build_report(engine)  # the report picks the Bayesian results up
    assert report.bayes is not None
    with pytest.raises(KeyError, match="no stored Bayesian fit"):
        load_idata(engine, 999)


def test_every_design_kind_can_be_named(tmp_path: Path) -> None:
    """Every design's stored kind is accepted by load_table (an absent table is a
    KeyError, not a refused kind)."""
    from cuegap.designs.conversation._analysis import BAYES_KIND as CONV_BAYES
    from cuegap.designs.conversation._analysis import KIND as CONV
    from cuegap.designs.prompt_variance._analysis import KIND as PV
    from cuegap.designs.prompt_variance._analysis_bayes import BAYES_KIND as PV_BAYES
    from cuegap.designs.qa._analysis import BAYES_KIND as QA_BAYES
    from cuegap.designs.qa._analysis import KIND as QA

    engine = make_engine(f"sqlite:///{tmp_path / 'k.db'}")
    upgrade(engine)
    for kind in ("frequentist", "bayesian", QA, QA_BAYES, PV, PV_BAYES, CONV, CONV_BAYES):
        with pytest.raises(KeyError):
            load_table(engine, "verdicts", kind=kind)
