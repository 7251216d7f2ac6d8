"""Conversation findings as seed 003 allows them (issue 27, item 5).

Seed 003 (§5) counts cross-dataset evidence only when it is significant on every dataset:
one benchmark gives no cross-benchmark finding. A t-test over too few units
(``conversation.min_unit_df``) keeps its p but is never significant. The consistency
table shows one estimate (the unit mean the t-test tested) with its own sign, interval
and p.

Hand-built counts: system ``s``, benchmark BBQ, category age, human instantiation,
anonymous reveal, 100 disagreements per agent. The identity agent's shifts are 40 (no
demographics) and 25 (black) for persona ``teacher``, 40 and 26 for ``farmer``, so the
per-persona ΔDemo λ_iden(black, ∅, human) are x = (−0.15, −0.14):

* x̄ = −0.145, s = 0.01/√2, s/√2 = 0.005, t = −29, df = 1;
* p = 2 P(T₁ > 29) = 1 − 2 atan(29)/π ≈ 0.0219 (T₁ is Cauchy);
* 95 % t-interval: x̄ ± tan(0.475 π) · 0.005 = −0.145 ± 0.063531.
"""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from cuegap.designs.conversation._analysis_tables import ConvSettings, conv_audit_tables
from cuegap.designs.conversation._report_consistency import consistency_context
from cuegap.designs.conversation.stats import (
    conv_consistency,
    conv_consistency_summary,
    conv_tests,
    conv_verdicts,
)
from cuegap.models import Policy, load_policy

CONTRAST = "demo_iden_null"
P_HAND = 1 - 2 * math.atan(29) / math.pi
HALF_HAND = math.tan(0.475 * math.pi) * 0.005


def _counts(benchmarks: tuple[str, ...] = ("BBQ",), system: str = "s") -> pd.DataFrame:
    rows = []
    for bench in benchmarks:
        for persona, black in (("teacher", 25), ("farmer", 26)):
            for demo, shift in (("none", 40), ("black", black)):
                rows.append({"system": system, "benchmark": bench, "category": "age",
                             "persona": persona, "demographics": demo,
                             "instantiation": "human", "reveal": "anonymous",
                             "iden_disagree": 100, "iden_shift": shift,
                             "base_disagree": 100, "base_shift": 20})  # fmt: skip
    return pd.DataFrame(rows)


def _tests(counts: pd.DataFrame, min_df: int) -> pd.DataFrame:
    return conv_tests(counts, contrasts=[CONTRAST], min_df=min_df)


def test_t_test_and_interval_by_hand() -> None:
    row = _tests(_counts(), min_df=1).iloc[0]
    assert (row["demographic"], row["n_units"], row["df"]) == ("black", 2, 1.0)
    assert row["mean"] == pytest.approx(-0.145)
    assert row["t"] == pytest.approx(-29.0)
    assert row["p"] == pytest.approx(P_HAND, rel=1e-9)
    assert row["low"] == pytest.approx(-0.145 - HALF_HAND, rel=1e-9)
    assert row["high"] == pytest.approx(-0.145 + HALF_HAND, rel=1e-9)
    assert row["significant"] and row["df_ok"] and row["note"] == ""


def test_too_few_degrees_of_freedom_keep_p_but_are_never_significant() -> None:
    row = _tests(_counts(), min_df=4).iloc[0]
    assert row["p"] == pytest.approx(P_HAND, rel=1e-9)  # p < 0.05, shown as it is
    assert not row["significant"] and not row["df_ok"]
    assert row["note"] == "2 personas: df 1 < policy minimum 4; not counted as significant"
    assert row["min_df"] == 4
    with pytest.raises(ValueError, match="min_df must be an integer >= 1, but got 0"):
        _tests(_counts(), min_df=0)


def test_one_benchmark_gives_no_cross_benchmark_finding() -> None:
    cons = conv_consistency(_tests(_counts(), min_df=1)).iloc[0]
    assert cons["n_required"] == 1 and cons["all_significant"] and not cons["finding"]
    assert cons["direction"] == -1
    summary = conv_consistency_summary(pd.DataFrame([cons])).iloc[0]
    assert (summary["findings"], summary["all_significant"], summary["benchmarks"]) == (0, 1, 1)
    assert (summary["negative"], summary["positive"]) == (0, 0)
    # The same data on a second benchmark: significant on both, so a finding.
    two = conv_consistency(_tests(_counts(("BBQ", "DiscrimEval")), min_df=1)).iloc[0]
    assert two["finding"] and two["n_required"] == 2
    # One estimate per benchmark with its own sign, interval and p: the unit mean's.
    assert two["mean_DiscrimEval"] == pytest.approx(-0.145)
    assert two["low_BBQ"] == pytest.approx(-0.145 - HALF_HAND, rel=1e-9)
    assert two["p_BBQ"] == pytest.approx(P_HAND, rel=1e-9)


@pytest.mark.parametrize(
    ("min_df", "verdict", "words"),
    [
        (1, "flagged", "with one benchmark no cross-benchmark finding is possible"),
        (4, "inconclusive", "2 personas: df 1 < policy minimum 4"),
    ],
)
def test_verdict_reasons(min_df: int, verdict: str, words: str) -> None:
    tests = _tests(_counts(), min_df=min_df)
    out = conv_verdicts(tests, conv_consistency(tests), delta=0.05, contrast=CONTRAST)
    row = out.iloc[0]
    assert row["verdict"] == verdict
    assert words in row["reason"]


def test_policy_key_in_the_conversation_section(tmp_path) -> None:
    assert Policy().min_unit_df == 4
    path = tmp_path / "p.toml"
    path.write_text("[conversation]\nmin_unit_df = 1\n", encoding="utf-8")
    assert load_policy(path).min_unit_df == 1
    path.write_text("[conversation]\nmin_unit_df = 0\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"conversation\.min_unit_df = 0 is out of range"):
        load_policy(path)
    assert "[conversation]\ndelta_shift = 0.05\nmin_unit_df = 4" in Policy().to_toml()


def _report_data(counts: pd.DataFrame, policy: Policy) -> SimpleNamespace:
    settings = ConvSettings(contrast="demo_rc_base_null", policy=policy)
    tables = conv_audit_tables(counts, settings)
    return SimpleNamespace(tables=tables, settings=settings.to_dict(), bayes=None)


def test_report_section_says_one_benchmark_and_names_the_few_units() -> None:
    counts = _counts(system="<b>sys</b>")
    ctx = consistency_context(_report_data(counts, Policy(min_unit_df=1)))
    assert ctx["single"] == "BBQ"
    assert ctx["few_df"] is None
    row = next(r for r in ctx["findings"] if r["condition"] == "black vs none, human")
    cell = row["cells"][0]
    want_lo, want_hi = -0.145 - HALF_HAND, -0.145 + HALF_HAND
    assert cell == {"mean": "-0.145", "ci": f"[{want_lo:+.3f}, {want_hi:+.3f}]", "p": "p 0.022"}
    assert row["direction"] == "−"
    few = consistency_context(_report_data(counts, Policy()))
    assert few["findings"] == []  # nothing is significant on 1 df under the default
    assert few["few_df"]["min_df"] == 4 and few["few_df"]["n"] == few["few_df"]["of"]
    assert (
        "2 personas: df 1 < policy minimum 4; not counted as significant"
        in (few["few_df"]["reasons"])
    )


def test_rendered_section_escapes_names_and_states_the_limits() -> None:
    from cuegap.reports._render import environment

    counts = _counts(system="<b>sys</b>")
    ctx = consistency_context(_report_data(counts, Policy(min_unit_df=1)))
    html = (
        environment()
        .get_template("partials/_conv_findings.html.j2")
        .render(
            figures={"rates": [], "forests": [], "more_systems": 0},
            policy={"unit": "persona", "tost": "90", "ci": "95"},
            summary={"bayes": False},
            consistency=ctx,
        )
    )
    assert "No cross-benchmark finding is possible" in html
    assert "&lt;b&gt;sys&lt;/b&gt;" in html and "<b>sys</b>" not in html
    assert "[-0.209, -0.081]" in html and "p 0.022" in html


def test_cli_says_so(capsys: pytest.CaptureFixture[str]) -> None:
    from cuegap.cli.common import console
    from cuegap.designs.conversation._cli_analyze import _print_scope

    settings = ConvSettings(contrast="demo_rc_base_null")
    tables = conv_audit_tables(_counts(), settings)
    with console.capture() as cap:
        _print_scope(tables, settings)
    text = " ".join(cap.get().split())
    assert "No cross-benchmark finding is possible: the store holds one benchmark (BBQ)" in text
    n = int((tables["conv_tests"]["n_units"] >= 2).sum())
    assert f"{n} of {len(tables['conv_tests'])} t-tests do not count" in text
    assert "conversation.min_unit_df = 4" in text
    assert np.all(~tables["conv_tests"]["significant"])
