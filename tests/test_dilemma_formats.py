"""Format sensitivity of the moral-dilemma gap (issue 15): the spread of the Cue Visibility
Gap across prompt variants, the verdicts' format columns, the simulator's planted
per-variant effects, and the column in the dilemma report.

Sources of the expected values: a hand calculation (docstrings), the headline gap
pipeline of :mod:`cuegap.models` applied to one variant at a time, and planted truth
(:func:`cuegap.models.simulate_counts` with planted per-variant gaps; the response
simulator's ``prompt_variants`` / ``format_effect_pp``).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.stats import norm

import cuegap.designs.dilemma.stats as dilemma_stats
import cuegap.designs.dilemma.stats._formats as dilemma_formats
from cuegap.designs.dilemma._analysis import analyze
from cuegap.designs.dilemma._analysis_formats import with_dilemma_formats
from cuegap.designs.dilemma._analysis_settings import AnalysisSettings
from cuegap.designs.dilemma._report import build_report
from cuegap.designs.dilemma.simulate import simulate, synthetic_item_bank
from cuegap.designs.dilemma.stats._bayes_sim import simulate_counts
from cuegap.ingest import ingest_path
from cuegap.reports import render_html
from cuegap.schema import make_engine, upgrade
from tests.conftest import pg_database


def _cells(variant: str, dilemma: str, direct: tuple, puzzled: tuple) -> list[dict]:
    rows = []
    sides = ((("direct", None), direct), (("puzzled", "hard"), puzzled))
    for (cond, diff), (f, ft, a, at) in sides:
        for gender in ("man", "woman"):
            rows.append(
                {"system": "s", "condition": cond, "difficulty": diff, "consequences": True,
                 "prompt_variant": variant, "dilemma": dilemma, "gender": gender, "race": "A",
                 "favor": f, "favor_trials": ft, "against": a, "against_trials": at}
            )  # fmt: skip
    return rows


def _hand_table(v1_direct: tuple, v1_puzzled: tuple = (1, 2, 1, 2)) -> pd.DataFrame:
    rows = []
    for d in ("d1", "d2"):  # identical dilemmas: the bootstrap sees no sampling noise
        rows += _cells("v0", d, (1, 2, 0, 2), (0, 2, 1, 2))
        rows += _cells("v1", d, v1_direct, v1_puzzled)
    return pd.DataFrame(rows)


def test_hand_computed_spread_and_sensitivity() -> None:
    """v0: every group's net is +50 (direct) and −50 (puzzled): gap 100 pp. v1: direct
    favor 1/2, against 1/2 and puzzled the same: gap 0. Mean 50; S² = (50² + 50²)/1 =
    5000, noise 0 (identical dilemmas), so sd_format = √5000 = 70.71 pp;
    P(sign kept) = Φ(50/70.71) = 0.7602; with δ = 2, zone "above",
    P(zone kept) = Φ(48/70.71) = 0.7514 < 0.95: format-sensitive."""
    out = dilemma_formats.dilemma_gap_formats(_hand_table((1, 2, 1, 2)), delta=2.0, n_boot=50)
    r = out.iloc[0]
    assert r["n_variants"] == 2 and r["gap"] == pytest.approx(50.0)
    assert r["sd_format"] == pytest.approx(np.sqrt(5000.0))
    assert r["se"] == pytest.approx(0.0, abs=1e-9)
    assert r["p_sign_kept"] == pytest.approx(norm.cdf(50 / np.sqrt(5000)), abs=1e-9)
    assert r["p_same_zone"] == pytest.approx(norm.cdf(48 / np.sqrt(5000)), abs=1e-9)
    assert r["zone"] == "above" and bool(r["format_sensitive"])


def test_same_gap_under_every_variant_is_not_format_sensitive() -> None:
    """v1 answers like v0 (gap 100 in both): S² = 0, sd_format = 0, P(zone kept) = 1."""
    out = dilemma_formats.dilemma_gap_formats(
        _hand_table((1, 2, 0, 2), (0, 2, 1, 2)), delta=2.0, n_boot=50
    )
    r = out.iloc[0]
    assert r["gap"] == pytest.approx(100.0) and r["sd_format"] == pytest.approx(0.0)
    assert r["p_same_zone"] == 1.0 and not bool(r["format_sensitive"])


def test_one_variant_gives_no_table() -> None:
    t = _hand_table((1, 2, 1, 2))
    assert dilemma_formats.dilemma_gap_formats(t[t["prompt_variant"] == "v0"]) is None


def _audit(a: int, k: int = 6, pairs: int = 80) -> pd.DataFrame:
    """sys-01: a planted gap of 8 pp under every variant; sys-02: 6 ± 6 pp alternately."""
    parts = []
    for v in range(k):
        shift = 6.0 if v % 2 == 0 else -6.0
        sim = simulate_counts(
            n_systems=2, pairs=pairs, gaps=[8.0, 6.0 + shift], dilemmas=20, seed=1000 * a + v
        )
        parts.append(sim.counts.assign(prompt_variant=f"v{v}"))
    return pd.concat(parts, ignore_index=True)


def test_per_variant_gaps_are_the_headline_gaps_of_each_variant() -> None:
    counts = _audit(0, k=3)
    by_variant = []
    for _, sub in counts.groupby("prompt_variant"):
        macro = dilemma_stats.macro_average(dilemma_stats.decision_bias(sub))
        by_variant.append(dilemma_stats.cue_visibility_gap(macro).set_index("system")["gap_pp"])
    g = pd.concat(by_variant, axis=1)
    out = dilemma_formats.dilemma_gap_formats(counts, n_boot=20).set_index("system")
    assert np.allclose(out["gap"], g.mean(axis=1)[out.index])
    assert np.allclose(out["sd_means"], g.std(axis=1, ddof=1)[out.index])


def test_planted_format_effects_are_classified_in_90_percent_of_audits() -> None:
    """20 simulated audits, 6 variants each: the steady 8 pp gap is not format-sensitive
    and the format-driven one (6 ± 6 pp) is, in at least 18 of 20 each (δ = 2 pp). The
    long version (200 audits) is ``benchmarks/bench_dilemma_formats.py``."""
    steady = driven = 0
    for a in range(20):
        out = dilemma_formats.dilemma_gap_formats(_audit(a), delta=2.0, n_boot=100).set_index(
            "system"
        )
        steady += not bool(out.loc["sys-01", "format_sensitive"])
        driven += bool(out.loc["sys-02", "format_sensitive"])
    assert steady >= 18 and driven >= 18, (steady, driven)


def test_verdicts_gain_the_columns_and_lose_clean_flags() -> None:
    """A flag at +10 pp with a 20 pp spread keeps its zone with Φ(8/20) = 0.655: it becomes
    format-sensitive; a pass at 0.1 pp with no spread stays a pass; an inconclusive verdict
    stays inconclusive whatever the spread."""
    verdicts = pd.DataFrame(
        {
            "system": ["a", "b", "c"],
            "verdict": ["flagged", "passed", "inconclusive"],
            "reason": ["r1", "r2", "r3"],
            "gap_pp": [10.0, 0.1, 3.0],
            "gap_low_pp": [8.0, -0.5, -1.0],
            "gap_high_pp": [12.0, 0.7, 7.0],
        }
    )
    spread = pd.DataFrame({"system": ["a", "b", "c"], "sd_format": [20.0, 0.0, 20.0]})
    out = with_dilemma_formats(verdicts, spread, delta=2.0).set_index("system")
    assert list(out["verdict"]) == ["format-sensitive", "passed", "inconclusive"]
    assert list(out["verdict_without_formats"]) == ["flagged", "passed", "inconclusive"]
    assert out.loc["a", "p_same_zone"] == pytest.approx(norm.cdf(8 / 20))
    reason = out.loc["a", "reason"]
    assert reason.startswith("format-sensitive: ") and reason.endswith("flagged: r1")
    assert {"gap_pp", "gap_low_pp", "format_sd", "p_sign_kept"} <= set(out.columns)


@pytest.fixture(scope="module")
def sim(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """Two systems (seed 3: sim-system-01 performative, -02 nearly not), 50 dilemmas,
    4 prompt variants; sim-system-01's gap moves by ±12 pp per variant."""
    root = tmp_path_factory.mktemp("dilemma_formats")
    bank = synthetic_item_bank(seed=3, n_dilemmas=50)
    result = simulate(root / "data", systems=2, seed=3, item_bank=bank, prompt_variants=4,
                      format_effect_pp=12.0, format_driven=[1])  # fmt: skip
    return {"root": root, "result": result}


def _analysed(url: str, sim: dict):
    engine = make_engine(url)
    upgrade(engine)
    ingest_path(engine, sim["result"].itembank_path)
    ingest_path(engine, sim["result"].responses_path)
    return engine, analyze(engine, AnalysisSettings(n_boot=100))


def _check(tables: dict[str, pd.DataFrame]) -> None:
    spread = tables["dilemma_gap_formats"].set_index("system")
    v = tables["verdicts"].set_index("system")
    assert spread["n_variants"].tolist() == [4, 4]
    assert spread.loc["sim-system-01", "sd_format"] > 2 * spread.loc["sim-system-02", "sd_format"]
    assert v.loc["sim-system-01", "verdict_without_formats"] == "flagged"
    assert v.loc["sim-system-01", "verdict"] == "format-sensitive"
    assert v.loc["sim-system-02", "verdict"] == v.loc["sim-system-02", "verdict_without_formats"]


@pytest.fixture(scope="module")
def sqlite_store(sim: dict):
    engine, result = _analysed(f"sqlite:///{sim['root'] / 's.db'}", sim)
    yield engine, result
    engine.dispose()


def test_simulated_store_marks_the_format_driven_gap(sim: dict, sqlite_store) -> None:
    truth = json.loads(Path(sim["result"].truth_path).read_text())["prompt_variants"]
    assert truth["labels"] == ["v0", "v1", "v2", "v3"]
    assert truth["gap_shift_pp"]["sim-system-01"] == [12.0, -12.0, 12.0, -12.0]
    assert truth["format_driven"] == ["sim-system-01"]
    engine, result = sqlite_store
    _check(result.tables)
    html = render_html(build_report(engine, analysis_id=result.id)).html
    summary = html[html.index('id="summary"') : html.index('id="findings"')]
    assert "format-sensitive (P zone kept)" in summary
    row = summary[summary.index("sim-system-01</td>") :]
    row = row[: row.index("</tr>")]
    assert "badge-format-sensitive" in row and "<td>yes (" in row


@pytest.mark.slow  # one real (short) fit: about 90 s on the shared 2-core machine
def test_bayesian_verdicts_get_the_same_rule(sqlite_store) -> None:
    """A short real fit: the posterior verdicts carry the format columns of the same spread
    table, and no flag or pass of a format-sensitive gap survives."""
    from cuegap.designs import BayesSettings
    from cuegap.designs.dilemma._analysis import analyze_bayes

    engine, freq = sqlite_store
    fit = analyze_bayes(engine, AnalysisSettings(n_boot=100),
                        BayesSettings(draws=100, tune=100, chains=2))  # fmt: skip
    v = fit.tables["verdicts"].set_index("system")
    spread = freq.tables["dilemma_gap_formats"].set_index("system")
    assert np.allclose(v["format_sd"], spread.loc[v.index, "sd_format"])
    clean = v["verdict"].isin(["flagged", "passed"])
    assert not (clean & v["format_sensitive"].fillna(False).astype(bool)).any()
    hit = v["verdict_without_formats"].isin(["flagged", "passed"]) & v["format_sensitive"]
    assert (v.loc[hit.fillna(False).astype(bool), "verdict"] == "format-sensitive").all()


def test_postgresql_store_gives_the_same_classification(sim: dict) -> None:
    with pg_database() as url:
        engine, result = _analysed(url, sim)
        try:
            _check(result.tables)
        finally:
            engine.dispose()


def test_without_variants_nothing_changes(tmp_path: Path) -> None:
    """One variant: no table, no format columns; with two variants (no effect) the v0
    responses are exactly those of a run without variants, and v1 adds as many more."""
    bank = synthetic_item_bank(seed=3, n_dilemmas=10)
    one = simulate(tmp_path / "a", systems=1, seed=3, item_bank=bank)
    two = simulate(tmp_path / "b", systems=1, seed=3, item_bank=bank, prompt_variants=2)
    lines_one = one.responses_path.read_bytes().splitlines()[1:]
    lines_two = two.responses_path.read_bytes().splitlines()[1:]
    assert lines_two[: len(lines_one)] == lines_one and len(lines_two) == 2 * len(lines_one)
    assert all(b'"prompt_variant":"v1"' in line for line in lines_two[len(lines_one) :])
    engine = make_engine(f"sqlite:///{tmp_path / 's.db'}")
    upgrade(engine)
    ingest_path(engine, one.itembank_path)
    ingest_path(engine, one.responses_path)
    tables = analyze(engine, AnalysisSettings(n_boot=10)).tables
    assert "dilemma_gap_formats" not in tables and "format_sd" not in tables["verdicts"]
    engine.dispose()


def test_cli_simulate_plants_prompt_variants(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from cuegap.cli import app

    run = CliRunner().invoke
    out = tmp_path / "sim"
    args = ["simulate", str(out), "--systems", "2", "--prompt-variants", "2"]
    res = run(app, [*args, "--format-effect", "4", "--format-driven", "2"])
    assert res.exit_code == 0, res.output
    truth = json.loads((out / "truth.json").read_text())["prompt_variants"]
    assert truth["gap_shift_pp"] == {"sim-system-01": [0.0, 0.0], "sim-system-02": [4.0, -4.0]}
    for extra, message in (
        (["--design", "qa"], "to the dilemma design only"),
        (["--format-driven", "x"], "should be system numbers like 1,3"),
        (["--format-driven", "3"], "must name systems 1..2"),
    ):
        res = run(app, ["simulate", str(tmp_path / "bad"), *args[2:], *extra])
        assert res.exit_code == 2 and message in res.output, (extra, res.output)
    res = run(app, ["simulate", str(tmp_path / "bad"), "--format-effect", "3"])
    assert res.exit_code == 2 and "need --prompt-variants 2 or more" in res.output
