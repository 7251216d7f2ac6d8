"""The prompt-variance Bayesian fit through the store, the CLI and the report, on SQLite and
PostgreSQL, with the sampler mocked where only shapes matter (the real sampling is
tests/test_pv_bayes.py's): the fake posterior has the model's variables and shapes, drawn
independently, so the gate passes unless a divergence is planted.

Data: ``simulate_pv(systems=2, scale="small", cue_gap=True, seed=3)``: 2 systems × 2 BBQ
categories × 8 combinations (4 choice formats × 2 field orders) × 3 replicates, both cues,
and 2 Difference-Awareness subsets.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from cuegap.audit import load_posteriors, posterior_artifacts
from cuegap.cli import app
from cuegap.designs import BayesSettings
from cuegap.designs.prompt_variance._analysis import analyze_prompt_variance
from cuegap.designs.prompt_variance._analysis_bayes import analyze_pv_bayes
from cuegap.designs.prompt_variance._report import build_pv_report
from cuegap.designs.prompt_variance._simulate import simulate_pv
from cuegap.designs.prompt_variance.report_sections import load_pv, pv_section
from cuegap.designs.prompt_variance.stats import _bayes as _pv_bayes
from cuegap.ingest import ingest_path
from cuegap.reports import render_html
from cuegap.reports._render import environment

FILES = ("bbq_bank.jsonl", "diffAware_sim.jsonl", "responses_bbq.jsonl", "responses_da.jsonl")
COMPONENTS = {"choice_format", "field_order", "choice_format:field_order", "residual"}


def fake_sample(data, sampler, *, diverge: bool = False, **kw):
    """A posterior with the model's variables and shapes (iid draws), no sampling."""
    import arviz as az

    rng = np.random.default_rng(kw["seed"])
    c, d, k, g = kw["chains"], kw["draws"], len(data.components), len(data.cells)
    n_pooled = sum(data.pooled)
    post = {
        "sd": np.exp(rng.normal(np.log(0.05), 0.1, (c, d, k, g))),
        "log_sd_mean": rng.normal(np.log(0.05), 0.1, (c, d, n_pooled)),
        "log_sd_tau": np.abs(rng.normal(0, 0.3, (c, d, n_pooled))),
    }
    div = np.zeros((c, d), bool)
    div[0, 0] = diverge
    return az.from_dict(posterior=post, sample_stats={"diverging": div}), sampler, ""


@pytest.fixture(scope="module")
def sim_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("pvbsim")
    simulate_pv(out, systems=2, scale="small", cue_gap=True, seed=3)
    return out


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(_pv_bayes, "_sample", fake_sample)


def test_store_round_trip_reuse_and_report(engine, sim_dir: Path, fake) -> None:
    for name in FILES:
        ingest_path(engine, sim_dir / name)
    small = BayesSettings(draws=200, tune=200, chains=2, seed=5)
    res = analyze_pv_bayes(engine, bayes=small)
    assert res.status == "ok" and not res.reused and res.factors == ["choice_format", "field_order"]
    comp = res.tables["pv_bayes_components"]
    # 2 systems x 2 categories for each of 4 metrics, and the cue gap per system
    assert set(comp["metric"]) == {"s_bbq_dis", "s_bbq_amb", "s_diffaware", "s_ctxtaware",
                                   "cue_gap"}  # fmt: skip
    assert len(comp) == (4 * 4 + 2) * 4 and set(comp["component"]) == COMPONENTS
    gap = res.tables["pv_bayes_spread"].query("metric == 'cue_gap'")
    assert list(gap["category"]) == ["(all)", "(all)"] and gap["sd_format"].gt(0).all()
    assert set(res.tables["pv_bayes_diagnostics"]["sampler"]) == {"nutpie"}
    # every metric's posterior is stored with the analysis, through the one store path
    posts = load_posteriors(engine, res.id)
    assert set(posts) == {f"idata:{m}" for m in comp["metric"].unique()}
    sd = posts["idata:cue_gap"].posterior["sd"]
    diag = res.tables["pv_bayes_diagnostics"].query("metric == 'cue_gap'").iloc[-1]
    assert sd.shape[:2] == (2, int(diag["draws"])) and float(sd.min()) > 0  # the last attempt
    again = analyze_pv_bayes(engine, bayes=small)
    assert again.reused and again.id == res.id and again.status == "ok"
    assert len(again.tables["pv_bayes_components"]) == len(comp)
    analyze_prompt_variance(engine)
    ctx = pv_section(load_pv(engine))
    assert ctx["bayes"]["ok"] and len(ctx["bayes"]["rows"]) == 5 * 4
    assert ctx["nemenyi"] and ctx["nemenyi"][0]["pairs"].endswith("of 1")  # 2 systems: 1 pair
    html = environment().get_template("partials/_pv_section.html.j2").render(pv=ctx)
    for part in ('id="fig-pv-bayes-components"><svg', 'id="pv-bayes-components"',
                 'id="pv-nemenyi"'):  # fmt: skip
        assert part in html, part
    standalone = render_html(build_pv_report(engine)).html  # the design's own report too
    assert 'id="pv-bayes-components"' in standalone and 'id="pv-nemenyi"' in standalone


def test_a_divergence_fails_the_gate_and_is_stored_as_not_converged(
    engine, sim_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in FILES:
        ingest_path(engine, sim_dir / name)
    monkeypatch.setattr(_pv_bayes, "_sample", lambda *a, **k: fake_sample(*a, diverge=True, **k))
    res = analyze_pv_bayes(engine, bayes=BayesSettings(draws=100, tune=100, chains=2))
    assert res.status == "not_converged" and "1 divergent transitions" in res.message
    diag = res.tables["pv_bayes_diagnostics"]
    assert (diag.groupby("metric")["attempt"].max() == 2).all()  # retried once per metric
    assert diag.query("attempt == 2")["tune"].eq(600).all()  # max(2 x 100, 100 + 500)
    assert not res.tables["pv_bayes_components"]["converged"].any()


def test_cli_analyze_bayes_prints_shares_and_exports(tmp_path: Path, sim_dir: Path, fake) -> None:
    db = tmp_path / "pv.db"

    def cli(*args: object, code: int = 0) -> str:
        res = CliRunner().invoke(app, ["--db", str(db), *map(str, args)], env={"COLUMNS": "250"})
        assert res.exit_code == code, res.output
        return re.sub(r"\s+", " ", res.output)

    cli("ingest", sim_dir)
    out = cli("analyze", "--design", "prompt-variance", "--bayes", "--draws", 100, "--chains", 2)
    assert "Prompt-variance analysis" in out and "Prompt-variance Bayesian analysis" in out
    assert "converged" in out and "pv_bayes_components" in out and "pv_nemenyi" in out
    assert "choice_format:field_order" in out
    cli("export", "pv_bayes_spread", "--out", tmp_path / "spread.csv")
    assert (tmp_path / "spread.csv").read_text().startswith("system,category,metric")
    out = cli("analyze", "--design", "prompt-variance", "--bayes", "--factors",
              "choice_format,field_order,strategy", code=2)  # fmt: skip
    assert "one or two factors" in out and "Traceback" not in out


def test_a_posterior_is_named_idata_or_idata_part() -> None:
    import arviz as az

    idata = az.from_dict(posterior={"x": np.zeros((1, 3))})
    assert set(posterior_artifacts({"idata": idata, "idata:a": idata})) == {"idata", "idata:a"}
    with pytest.raises(ValueError, match="'trace'"):
        posterior_artifacts({"trace": idata})
