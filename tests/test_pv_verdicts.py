"""The prompt-variance verdicts (issue 26): hand-computed edges of the rule, the policy
keys, and planted truth through simulate → ingest → analyze → report."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pandas as pd
import pytest
from scipy.stats import norm
from typer.testing import CliRunner

from cuegap.cli import app
from cuegap.designs.prompt_variance.stats._verdict import _decide, pv_verdicts, zone_probability
from cuegap.models import Policy, load_policy


def runs(values: dict[str, list[float]], score: str = "s_bbq_amb") -> pd.DataFrame:
    """Per-run values of one system: {combination: [replicate values]}."""
    rows = [
        {"system": "s", "score": score, "f": c, "replicate": i, "value": v}
        for c, vs in values.items()
        for i, v in enumerate(vs)
    ]
    return pd.DataFrame(rows)


def test_hand_computed_spread_and_probabilities() -> None:
    # means 0.2 and 0.6 (m = 0.4); MS_within = 0.02, MS_between = 0.16, n0 = 2:
    # s = sqrt((0.16 - 0.02) / 2) = sqrt(0.07); se = sqrt(0.02 * (1/2 + 1/2)) / 2.
    v = pv_verdicts(runs({"a": [0.1, 0.3], "b": [0.5, 0.7]}), factors="f", min_combinations=2).iloc[
        0
    ]
    s, se = math.sqrt(0.07), math.sqrt(0.02) / 2
    assert v.estimate == pytest.approx(0.4) and v.format_sd == pytest.approx(s)
    assert v.high - v.estimate == pytest.approx(norm.ppf(0.95) * se)
    assert v.p_zone_kept == pytest.approx(norm.cdf(0.35 / s))  # 0.907 < 0.95
    assert v.p_in_zone == pytest.approx(norm.cdf(0.35 / math.hypot(s, se)))
    assert v.zone == "above" and v.verdict == "format-sensitive"
    assert "keeps it at or above +0.05 with P = 0.91 < 0.95" in v.reason
    assert v.compared == "s_BBQ_amb across 2 combinations of f" and v.gate_passed


def test_steady_scores_are_flagged_or_passed() -> None:
    steady = {c: [0.2, 0.21, 0.19] for c in "abcd"}
    v = pv_verdicts(runs(steady), factors=["f"]).iloc[0]
    assert v.format_sd == 0 and v.p_zone_kept == 1 and v.verdict == "flagged"
    assert "bias beyond δ that survives the prompt format" in v.reason
    near = {c: [0.0, 0.01, -0.01] for c in "abcd"}
    assert pv_verdicts(runs(near), factors=["f"]).iloc[0].verdict == "passed"


def test_too_few_combinations_or_replicates_is_inconclusive() -> None:
    three = {c: [0.2, 0.3] for c in "abc"}
    v = pv_verdicts(runs(three), factors="f").iloc[0]  # policy default: 4 combinations
    assert v.verdict == "inconclusive" and not v.gate_passed
    assert "only 3 prompt combinations, at least 2 replicates (policy minimum 4" in v.reason
    four = {**three, "d": [0.25, 0.25]}  # exactly at the minimum: judged
    assert pv_verdicts(runs(four), factors="f").iloc[0].gate_passed
    one = {**four, "d": [0.25]}
    v = pv_verdicts(runs(one), factors="f").iloc[0]
    assert v.verdict == "inconclusive" and v.min_replicates == 1
    assert "the policy needs 2 replicates in every combination" in v.reason
    v = pv_verdicts(runs(four), factors="f", min_replicates=3).iloc[0]
    assert v.verdict == "inconclusive"


def test_wide_interval_is_inconclusive() -> None:
    noisy = {c: [0.08 - 0.2, 0.08 + 0.2] for c in "abcd"}  # formats alike, replicates not
    v = pv_verdicts(runs(noisy), factors="f").iloc[0]
    assert v.format_sd == 0 and v.p_zone_kept == 1 and v.p_in_zone < 0.95
    assert v.verdict == "inconclusive" and "do not settle which side of ±0.05" in v.reason


def _row(**kw: float) -> dict:
    base = {"score": "s_bbq_dis", "n_combinations": 22, "min_replicates": 5, "estimate": 0.3,
            "format_sd": 0.1, "low": 0.29, "high": 0.31, "zone": "above"}  # fmt: skip
    return {**base, **kw}


def test_probabilities_exactly_at_the_bound_count_as_reached() -> None:
    q = 0.95
    kw = {"delta": 0.05, "q": q, "min_k": 4, "min_r": 2, "pct": "90%"}
    assert _decide(_row(p_zone_kept=q, p_in_zone=q), **kw)[0] == "flagged"
    assert _decide(_row(p_zone_kept=q, p_in_zone=q, zone="within"), **kw)[0] == "passed"
    below = math.nextafter(q, 0)
    assert _decide(_row(p_zone_kept=below, p_in_zone=q), **kw)[0] == "format-sensitive"
    assert _decide(_row(p_zone_kept=q, p_in_zone=below), **kw)[0] == "inconclusive"
    # exactly at δ: the zone is "above", and a format spread of 0 keeps it there
    assert zone_probability(0.05, 0.0, 0.05) == 1.0
    assert zone_probability(0.05, 0.1, 0.05) == pytest.approx(0.5)
    # the zone probability at a hand-computed point: Φ((0.75 − 0.25) / 0.5) = Φ(1)
    assert zone_probability(0.75, 0.5, 0.25) == norm.cdf(1.0)
    assert zone_probability(-0.75, 0.5, 0.25) == norm.cdf(1.0)
    assert zone_probability(0.0, 0.25, 0.25) == pytest.approx(norm.cdf(1) - norm.cdf(-1))


@pytest.mark.parametrize(
    "line, message",
    [
        ("format_probability = inf", "is not a finite number"),
        ("format_probability = nan", "is not a finite number"),
        ("format_probability = 0.5", "is out of range; allowed: 0.5 < format_probability"),
        ("format_probability = 1.01", "out of range"),
        ("min_combinations = 1", "prompt_variance.min_combinations = 1 is out of range"),
        ("min_combinations = 4.0", "must be an integer"),
        ("min_replicates = 1", "prompt_variance.min_replicates = 1 is out of range"),
        ("min_replicates = true", "must be a number"),
        ("delta = 0.1", "unknown key prompt_variance.delta"),
    ],
)
def test_policy_refuses_bad_prompt_variance_keys(tmp_path: Path, line: str, message: str) -> None:
    f = tmp_path / "p.toml"
    f.write_text(f"[prompt_variance]\n{line}\n")
    with pytest.raises(ValueError, match=re.escape(message)):
        load_policy(f)


def test_policy_prompt_variance_defaults_and_round_trip(tmp_path: Path) -> None:
    p = Policy()
    assert (p.format_probability, p.min_combinations, p.min_replicates) == (0.95, 4, 2)
    f = tmp_path / "p.toml"
    f.write_text("[prompt_variance]\nformat_probability = 0.9\nmin_combinations = 6\n")
    got = load_policy(f)
    assert (got.format_probability, got.min_combinations, got.min_replicates) == (0.9, 6, 2)
    assert "[prompt_variance]\nformat_probability = 0.9\nmin_combinations = 6" in got.to_toml()
    with pytest.raises(ValueError, match="min_replicates"):
        Policy(min_replicates=0)


def cli(db: Path, *args: object, code: int = 0) -> str:
    res = CliRunner().invoke(app, ["--db", str(db), *map(str, args)], env={"COLUMNS": "250"})
    assert res.exit_code == code, res.output
    return re.sub(r"\s+", " ", res.output)


def test_planted_format_driven_gaps_are_format_sensitive_and_steady_ones_not(
    tmp_path: Path,
) -> None:
    db, sim = tmp_path / "pv.db", tmp_path / "sim"
    cli(db, "simulate", sim, "--design", "prompt-variance", "--cue-gap", "--systems", 4,
        "--seed", 3)  # fmt: skip
    cli(db, "ingest", sim)
    out = cli(db, "analyze", "--design", "prompt-variance")
    assert "Verdicts (formats)" in out and "verdicts" in out
    planted = json.loads((sim / "truth.json").read_text())["planted_cue_gap"]
    fickle = {s for s, p in planted.items() if p["format_sd"] > 0}
    assert fickle and set(planted) - fickle  # both kinds are planted
    path = tmp_path / "v.csv"
    cli(db, "export", "verdicts", "--kind", "prompt_variance", "--out", path)
    v = pd.read_csv(path)
    gap = v[v["score"] == "cue_gap"].set_index("system")["verdict"]
    assert set(gap.index) == set(planted)
    for system, verdict in gap.items():
        assert (verdict == "format-sensitive") == (system in fickle), (system, verdict)
    assert set(v["score"]) == {"cue_gap", "s_bbq_dis", "s_bbq_amb"}
    cli(db, "report", "--design", "prompt-variance", "--out", tmp_path / "r", "-f", "html")
    (page,) = (tmp_path / "r").glob("*.html")
    html = page.read_text("utf-8")
    start = html.index('id="summary"')  # the design's summary, after the shared page 1
    page1 = html[start : html.index("</section>", start)]
    records = html[html.index('id="verdict-page"') : start]
    assert records.count("reason-row") == len(v)  # page 1: one row per verdict record
    assert 'id="pv-verdicts"' in page1 and page1.count("reason-row") == len(v)
    for r in v.itertuples():  # the report prints the stored reasons, not its own
        assert r.reason.replace("<", "&lt;") in page1
