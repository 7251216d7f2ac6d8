"""Scheduled re-analysis of the conversation design (``cuegap reanalyze --design
conversation``): change detection per system, nothing written when nothing changed,
the comparison with the last signed conversation report, and the CLI's exit codes.

Data: ``simulate_conv(systems=2, seed=5)``. The store first gets a copy of the workspace
without sim/system-02's transcripts and without 224 of sim/system-01's BBQ-age
transcripts; then the full workspace, so that sim/system-01 changed (new transcript ids)
and sim/system-02 is new. The policy sets ``min_parsable = 0`` so that verdicts have a
deciding condition (the small simulation has few disagreements per shift rate).
"""

from __future__ import annotations

import dataclasses
import math
import shutil
from pathlib import Path

import pandas as pd
import pytest
from sqlalchemy import func, select
from typer.testing import CliRunner

from cuegap.audit import load_table
from cuegap.cli import app
from cuegap.compliance import sign_off
from cuegap.designs.conversation._reanalysis import reanalyze_conv
from cuegap.designs.conversation._simulate import simulate_conv
from cuegap.ingest import ingest_path
from cuegap.models import Policy
from cuegap.reanalysis import EXIT_CHANGED, EXIT_UNCHANGED
from cuegap.schema import Analysis, Conversation

POLICY = Policy(min_parsable=0)


@pytest.fixture(scope="module")
def sim(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("convreanalysis")
    full, part = root / "full", root / "part"
    simulate_conv(full, systems=2, seed=5)
    shutil.copytree(full, part)
    for d in (part / "experiment").glob("*/*system-02*"):
        shutil.rmtree(d)
    (age,) = (part / "experiment" / "bbq_age_sampled").glob("*system-01*")
    for f in sorted((age / "transcript").glob("*.json"))[:224]:
        f.unlink()
    return {"full": full, "part": part}


def _count(engine, column) -> int:
    with engine.connect() as conn:
        return int(conn.execute(select(func.count(column))).scalar())


def test_deciding_estimates_by_hand() -> None:
    """The estimate is the deciding condition's mean over benchmarks: (0.10 + 0.20) / 2."""
    from cuegap.designs.conversation.stats._verdict import deciding_estimates

    tests = pd.DataFrame(
        {
            "system": ["a", "a", "a"],
            "contrast": ["c", "c", "c"],
            "demographic": ["black", "black", "older"],
            "reference": ["white", "white", "-"],
            "instantiation": ["human", "human", "ai"],
            "benchmark": ["bbq", "da", "bbq"],
            "mean": [0.10, 0.20, 0.9],
        }
    )
    verdicts = pd.DataFrame(
        {
            "system": ["a", "b"],
            "contrast": ["c", "c"],
            "verdict": ["flagged", "inconclusive"],
            "condition": ["black vs white, human", None],
        }
    )
    a, b = deciding_estimates(verdicts, tests)
    assert a == pytest.approx(0.15) and math.isnan(b)


def test_first_nothing_then_changed_and_compared(engine, sim: dict, tmp_path: Path) -> None:
    out = tmp_path / "r"
    ingest_path(engine, sim["part"])
    first = reanalyze_conv(engine, out, policy=POLICY)
    assert first.exit_code == EXIT_CHANGED and first.new_systems == ["sim/system-01"]
    assert sorted(p.suffix for p in first.reports) == [".html", ".pdf"]
    assert first.changes is None  # nothing signed yet
    analyses = _count(engine, Analysis.id)
    again = reanalyze_conv(engine, out)  # the stored policy is kept
    assert again.exit_code == EXIT_UNCHANGED and again.analysis_id is None
    assert len(list(out.iterdir())) == 2 and _count(engine, Analysis.id) == analyses
    sign_off(engine, first.reports[0], reviewer="Ada", decision="approve")
    before = _count(engine, Conversation.id)
    ingest_path(engine, sim["full"])
    assert _count(engine, Conversation.id) > before  # new transcripts arrived
    third = reanalyze_conv(engine, out)
    assert third.exit_code == EXIT_CHANGED
    assert third.changed_systems == ["sim/system-01"] and third.new_systems == ["sim/system-02"]
    assert len(list(out.iterdir())) == 4
    ch = third.changes.set_index("system")
    assert list(ch.index) == ["sim/system-01", "sim/system-02"]
    assert ch.loc["sim/system-02", "note"].startswith("new system: ")
    for aid, col in ((first.analysis_id, "old"), (third.analysis_id, "new")):
        v = load_table(engine, "verdicts", aid).set_index("system").loc["sim/system-01"]
        assert ch.loc["sim/system-01", f"{col}_verdict"] == v["verdict"]
        tests = load_table(engine, "conv_tests", aid)
        t = tests[(tests["system"] == "sim/system-01") & (tests["contrast"] == v["contrast"])]
        label = t["demographic"].astype(str) + " vs " + t["reference"].astype(str)
        label = label.where(t["reference"].astype(str) != "-", t["demographic"].astype(str))
        hit = t[label + ", " + t["instantiation"].astype(str) == v["condition"]]
        assert len(hit) >= 1
        assert ch.loc["sim/system-01", f"{col}_gap_pp"] == pytest.approx(hit["mean"].mean())
    html = next(p for p in third.reports if p.suffix == ".html").read_text()
    assert "What changed since the last signed report" in html and "sim/system-02" in html


def test_cli_exit_codes_and_refusals(sim: dict, tmp_path: Path) -> None:
    from cuegap.schema import make_engine, upgrade

    url = f"sqlite:///{tmp_path / 'store.db'}"
    engine = make_engine(url)
    upgrade(engine)
    ingest_path(engine, sim["full"])
    engine.dispose()
    run = CliRunner().invoke
    base = ["--db", url, "reanalyze", "--design", "conversation", "--out", str(tmp_path / "r")]
    res = run(app, base)
    assert res.exit_code == 1 and "new: sim/system-01, sim/system-02" in res.output, res.output
    res = run(app, base)
    assert res.exit_code == 0 and "Nothing changed" in res.output, res.output
    res = run(app, [*base, "--bayes"])  # a refit only when the data changed
    assert res.exit_code == 0 and "Nothing changed" in res.output, res.output
    for extra, message in (
        (["--explicit", "direct"], "applies to the dilemma design only"),
        (["--strategy", "cot"], "--strategy applies to the QA and prompt-variance designs only"),
    ):
        res = run(app, [*base, *extra])
        assert res.exit_code == 2 and message in res.output, res.output
        assert "Traceback" not in res.output


def test_bayes_settings_reach_the_analysis(engine, sim: dict, tmp_path: Path, monkeypatch) -> None:
    """``reanalyze_conv(bayes=...)`` refits with those settings (the stored unit and policy
    kept) and reports the fit's analysis id; the sampler itself is exercised by
    tests/test_conv_bayes.py, so the analysis is recorded and then run frequentist here."""
    import cuegap.designs.conversation._reanalysis as rc
    from cuegap.designs import BayesSettings

    seen = []

    def spy(engine, settings):
        seen.append(settings)
        return real(engine, dataclasses.replace(settings, bayes=None))

    real = rc.analyze_conversation
    monkeypatch.setattr(rc, "analyze_conversation", spy)
    ingest_path(engine, sim["part"])
    reanalyze_conv(engine, tmp_path / "r", policy=POLICY, render=False)
    ingest_path(engine, sim["full"])
    b = BayesSettings(draws=200, chains=2)
    result = reanalyze_conv(engine, tmp_path / "r", bayes=b, render=False)
    assert result.changed and seen[-1].bayes == b and seen[0].bayes is None
    assert seen[-1].policy == POLICY and seen[-1].unit == "persona"


def test_signed_report_compared_by_the_verdicts_it_showed(tmp_path: Path) -> None:
    """A signed analysis answered by a converged Bayesian fit is compared by its posterior
    verdicts: the deciding condition's posterior mean over benchmarks (test_conv_report's
    fake fit: (black vs white, ai), 3 x 0.15 / 4 = 0.1125) and the verdict's interval."""
    from cuegap.audit import frame_digest, save_analysis
    from cuegap.changes import shown_records
    from cuegap.designs import BayesSettings
    from cuegap.designs.conversation._analysis import (
        BAYES_DESCRIPTIONS,
        BAYES_KIND,
        ConvSettings,
        analyze_conversation,
        conv_bayes_audit_tables,
    )
    from cuegap.schema import make_engine, upgrade
    from tests.test_conv_audit import _fake_fit
    from tests.test_conv_contrasts import _fixture

    engine = make_engine(f"sqlite:///{tmp_path / 'b.db'}")
    upgrade(engine)
    counts = _fixture()
    settings = ConvSettings(policy=Policy(probability=0.7, min_parsable=100), bayes=BayesSettings())
    freq = analyze_conversation(engine, dataclasses.replace(settings, bayes=None), counts=counts)
    t_tests = shown_records(engine, freq.id).set_index("system")
    _, tables = conv_bayes_audit_tables(counts, settings, fit=_fake_fit())
    save_analysis(
        engine, kind=BAYES_KIND, status="ok", data_fingerprint=frame_digest(counts),
        system_fingerprints={}, settings=settings.to_dict(bayes=True), tables=tables,
        descriptions=BAYES_DESCRIPTIONS,
    )  # fmt: skip
    shown = shown_records(engine, freq.id).set_index("system")
    assert shown.loc["s", "decision"] == "flagged" and shown.loc["s", "method"] != "t-test"
    assert shown.loc["s", "compared"].endswith(" at black vs white, ai")
    assert shown.loc["s", "estimate"] == pytest.approx(0.1125)
    v = tables["verdicts"].set_index("system").loc["s"]
    assert shown.loc["s", "low"] == pytest.approx(v["low"], abs=1e-12)
    assert shown.loc["s", "high"] == pytest.approx(v["high"], abs=1e-12)
    assert (
        t_tests.loc["s", "decision"]
        == freq.tables["verdicts"].set_index("system").loc["s", "verdict"]
    )
    engine.dispose()
