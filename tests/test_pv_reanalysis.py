"""Scheduled re-analysis of the prompt-variance design (``cuegap reanalyze --design
prompt-variance``): change detection per system, nothing written when nothing changed,
the comparison with the last signed prompt-variance report, and the CLI's exit codes.

Data: ``simulate_pv(systems=3, cue_gap=True, seed=3)``. The store first gets every answer
except sim-system-03's and except sim-system-01's first replicate (``repeat`` 0); then
the full files, so that sim-system-01 changed, sim-system-03 is new and sim-system-02 is
untouched.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sqlalchemy import select
from typer.testing import CliRunner

from cuegap.audit import load_table
from cuegap.cli import app
from cuegap.compliance import sign_off
from cuegap.designs.prompt_variance._reanalysis import reanalyze_pv
from cuegap.designs.prompt_variance._simulate import simulate_pv
from cuegap.ingest import ingest_path
from cuegap.reanalysis import EXIT_CHANGED, EXIT_UNCHANGED

BANKS = ("bbq_bank.jsonl", "diffAware_sim.jsonl")
ANSWERS = ("responses_bbq.jsonl", "responses_da.jsonl")


@pytest.fixture(scope="module")
def sim(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("pvreanalysis")
    simulate_pv(root, systems=3, cue_gap=True, seed=3)
    for name in ANSWERS:
        header, *lines = (root / name).read_text().splitlines()
        keep = []
        for line in lines:
            rec = json.loads(line)
            if rec["system"] == "sim-system-03":
                continue
            if rec["system"] == "sim-system-01" and rec["repeat"] == 0:
                continue
            keep.append(line)
        (root / f"partial_{name}").write_text("\n".join([header, *keep]) + "\n")
    return root


def _ingest(engine, root: Path, *names: str) -> None:
    for name in names:
        ingest_path(engine, root / name)


def test_first_nothing_then_changed_and_compared(engine, sim: Path, tmp_path: Path) -> None:
    _ingest(engine, sim, *BANKS, *(f"partial_{n}" for n in ANSWERS))
    first = reanalyze_pv(engine, tmp_path / "r")
    assert first.exit_code == EXIT_CHANGED
    assert first.new_systems == ["sim-system-01", "sim-system-02"]
    assert sorted(p.suffix for p in first.reports) == [".html", ".pdf"]
    html = next(p for p in first.reports if p.suffix == ".html").read_text()
    assert "Prompt-construction variance report" in html and first.changes is None
    again = reanalyze_pv(engine, tmp_path / "r")
    assert again.exit_code == EXIT_UNCHANGED and again.analysis_id is None
    assert len(list((tmp_path / "r").iterdir())) == 2  # nothing written
    sign_off(engine, first.reports[0], reviewer="Ada", decision="approve")
    _ingest(engine, sim, *ANSWERS)
    third = reanalyze_pv(engine, tmp_path / "r")
    assert third.exit_code == EXIT_CHANGED
    assert third.changed_systems == ["sim-system-01"] and third.new_systems == ["sim-system-03"]
    # one row per system and headline score, matched by what it compared
    ch = third.changes.set_index(["system", "compared"])
    old = load_table(engine, "verdicts", first.analysis_id).set_index(["system", "compared"])
    new = load_table(engine, "verdicts", third.analysis_id).set_index(["system", "compared"])
    assert ch.index.is_unique and set(ch.index) == set(old.index) | set(new.index)
    two = [k for k in new.index if k[0] == "sim-system-02"]
    assert len(two) >= 2  # s_BBQ_dis, s_BBQ_amb (and the cue gap)
    for key in two:
        assert ch.loc[key, "old_gap_pp"] == pytest.approx(old.loc[key, "estimate"])
        assert ch.loc[key, "new_gap_pp"] == pytest.approx(new.loc[key, "estimate"])
        assert ch.loc[key, "note"] == f"{key[1]}: no material change"  # its data did not change
    for key in (k for k in new.index if k[0] == "sim-system-03"):
        assert ch.loc[key, "note"] == f"{key[1]}: new: {new.loc[key, 'verdict']}"
    html = next(p for p in third.reports if p.suffix == ".html").read_text()
    assert "What changed since the last signed report" in html


def test_cli_exit_codes_and_refusals(sim: Path, tmp_path: Path) -> None:
    from cuegap.schema import make_engine, upgrade

    url = f"sqlite:///{tmp_path / 'store.db'}"
    engine = make_engine(url)
    upgrade(engine)
    _ingest(engine, sim, *BANKS, *ANSWERS)
    engine.dispose()
    run = CliRunner().invoke
    base = ["--db", url, "reanalyze", "--design", "prompt-variance", "--out"]
    res = run(app, [*base, str(tmp_path / "r")])
    assert res.exit_code == 1 and "new: sim-system-01, sim-system-02, sim-system-03" in res.output
    res = run(app, [*base, str(tmp_path / "r")])
    assert res.exit_code == 0 and "Nothing changed" in res.output, res.output
    res = run(app, [*base, str(tmp_path / "r"), "--bayes"])  # a refit only on new data
    assert res.exit_code == 0 and "Nothing changed" in res.output, res.output
    res = run(app, [*base, str(tmp_path / "r"), "--explicit", "direct"])
    assert res.exit_code == 2 and "Traceback" not in res.output


def test_bayes_refit_before_the_report(engine, sim: Path, tmp_path: Path, monkeypatch) -> None:
    """With ``bayes`` the variance-components model is refitted on the new data (sampler
    replaced by test_pv_bayes_store's fake posterior; real sampling is test_pv_bayes's)
    and the new report version shows that fit, not the older fit of the old data."""
    from cuegap.designs import BayesSettings
    from cuegap.designs.prompt_variance._analysis_bayes import analyze_pv_bayes
    from cuegap.designs.prompt_variance.stats import _bayes as _pv_bayes
    from cuegap.schema import Analysis
    from tests.test_pv_bayes_store import fake_sample

    monkeypatch.setattr(_pv_bayes, "_sample", fake_sample)
    _ingest(engine, sim, *BANKS, *(f"partial_{n}" for n in ANSWERS))
    first = reanalyze_pv(engine, tmp_path / "r", render=False)
    assert first.bayes_analysis_id is None
    b = BayesSettings(draws=1000, tune=200, chains=4, seed=4)  # iid: passes the gate
    old_fit = analyze_pv_bayes(engine, bayes=b).id
    _ingest(engine, sim, *ANSWERS)
    result = reanalyze_pv(engine, tmp_path / "r", bayes=b)
    assert result.changed and result.bayes_analysis_id is not None
    with engine.connect() as conn:
        fit = conn.execute(select(Analysis).where(Analysis.id == result.bayes_analysis_id)).one()
        freq = conn.execute(select(Analysis).where(Analysis.id == result.analysis_id)).one()
    assert fit.kind == "pv_bayesian" and fit.status == "ok", fit.message
    assert fit.data_fingerprint == freq.data_fingerprint  # the fit of the new data
    html = next(p for p in result.reports if p.suffix == ".html").read_text()
    assert f"(analysis {result.bayes_analysis_id})" in html
    assert f"(analysis {old_fit})" not in html
