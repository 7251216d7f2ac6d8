"""The benchmark scripts still run (on a tiny input); their figures are not asserted."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent


def test_ingest_benchmark_runs_and_prints_ratios() -> None:
    out = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "bench_ingest.py"),
            "--systems",
            "1",
            "--no-double",
            "--pg",
            "",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    assert "cuegap ingest -> SQLite" in out.stdout
    assert "pandas time / SQLite ingest time" in out.stdout


@pytest.mark.parametrize("design", ["dilemma", "qa"])
def test_flat_analysis_benchmark_prints_both_scales_and_the_targets(design: str) -> None:
    script = str(ROOT / "benchmarks" / "bench_flat_analysis.py")
    out = subprocess.run(
        [sys.executable, script, "--quick", "--systems", "1", "--no-pg", "--design", design],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    ).stdout
    rows = re.findall(r"^  (1x answers|3x answers) +([\d,]+) ", out, flags=re.M)
    assert [r[0] for r in rows] == ["1x answers", "3x answers"], out
    one, three = (int(r[1].replace(",", "")) for r in rows)
    assert three == 3 * one  # every prompt answered three times
    assert "the time of one answer each (target <= 1.5x:" in out and "(target < 1024:" in out
    assert re.search(r"all targets met: (yes|no)", out)


def test_demo_benchmark_prints_cold_warm_and_the_steps() -> None:
    script = str(ROOT / "benchmarks" / "bench_demo.py")
    out = subprocess.run(
        [sys.executable, script, "--no-bayes", "--systems", "2"],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    ).stdout
    assert "cold (empty compile caches):" in out and "warm (caches of the cold run):" in out
    steps = re.findall(r"^  (simulate|ingest|analyze \(1,000 bootstrap replicates\)|total) ", out,
                       flags=re.M)  # fmt: skip
    assert steps.count("ingest") == 2 and steps.count("total") == 2, out
    assert re.search(r"warm demo [\d.]+ s \(target < 60 s: (met|NOT met)\)", out)


def test_frequentist_benchmark_runs_and_prints_targets() -> None:
    script = str(ROOT / "benchmarks" / "bench_frequentist.py")
    args = ["--systems", "1", "--dilemmas", "10", "--n-boot", "20", "--repeats", "1"]
    out = subprocess.run(
        [sys.executable, script, "--boot", "--store", *args],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    assert "bootstrap, 20 replicates" in out.stdout
    assert "analysis without bootstrap" in out.stdout and "target < 10 s" in out.stdout


def test_report_benchmark_runs_and_prints_the_target() -> None:
    out = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "bench_report.py"),
            *("--systems", "2", "--n-boot", "10", "--repeats", "1"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    assert "render PDF (WeasyPrint)" in out.stdout
    assert "cuegap report, both formats:" in out.stdout and "target < 20 s" in out.stdout


def test_concurrent_ingest_benchmark_runs_and_prints_speedups() -> None:
    from tests.conftest import PG_URL, REQUIRE_PG

    if not PG_URL:
        if REQUIRE_PG:
            pytest.fail("CUEGAP_REQUIRE_PG=1 but CUEGAP_TEST_PG_URL is not set")
        pytest.skip("no PostgreSQL server: set CUEGAP_TEST_PG_URL")
    script = str(ROOT / "benchmarks" / "bench_concurrent_ingest.py")
    args = ["--systems", "1", "--limit", "2000", "--repeats", "1", "--pg", PG_URL]
    out = subprocess.run(
        [sys.executable, script, *args], capture_output=True, text=True, timeout=300, check=True
    )
    rows = [line.split() for line in out.stdout.splitlines() if line.strip()[:1].isdigit()]
    assert [r[0] for r in rows if r[-1].endswith("x")] == ["1", "2", "4"], out.stdout
    assert "2,000 responses" in out.stdout


def test_qa_benchmark_runs_and_prints_ratios_against_the_dilemma_design() -> None:
    out = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "bench_qa.py"),
            *("--systems", "1", "--templates", "4", "--n-boot", "20", "--no-bayes"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    assert "QA design: 1 systems, 1,536 answers" in out.stdout
    for step in ("ingest", "frequentist tables"):
        assert re.search(rf"^{step} +[\d.]+ +[\d.]+ +[\d.]+$", out.stdout, re.M), step


def test_qa_bayes_validation_summary_counts_by_hand() -> None:
    import pandas as pd

    sys.path.insert(0, str(ROOT / "benchmarks"))
    from validate_qa_bayes import summarise

    rows = [  # two audits; planted 0.0 / 0.1, intervals chosen to cover or miss
        dict(seed=1, kind="zero", planted=0.0, passed=True, bayes=0.01, bayes_low=-0.02,
             bayes_high=0.03, boot=0.0, boot_low=-0.03, boot_high=0.03,
             bayes_verdict="passed", boot_verdict="inconclusive", seconds=10.0),
        dict(seed=1, kind="two_delta", planted=0.1, passed=True, bayes=0.2, bayes_low=0.15,
             bayes_high=0.25, boot=0.1, boot_low=0.05, boot_high=0.15,
             bayes_verdict="flagged", boot_verdict="flagged", seconds=10.0),
        dict(seed=2, kind="zero", planted=0.0, passed=False, bayes=0.0, bayes_low=-0.01,
             bayes_high=0.01, boot=0.0, boot_low=-0.01, boot_high=0.01,
             bayes_verdict="inconclusive", boot_verdict="passed", seconds=30.0),
    ]  # fmt: skip
    out = summarise(pd.DataFrame(rows))
    assert "2 audits, 3 systems; gate passed in 0.500 ± 0.354 (n=2)" in out
    assert "passed fits: 0.500 ± 0.354 (n=2)" in out  # covered 1 of the 2 passed
    assert "all fits:    0.667 ± 0.272 (n=3)" in out
    assert "bootstrap interval covers G:              1.000 ± 0.000 (n=3)" in out
    assert re.search(r"planted G = 0 flagged .* +0\.000 +0\.000", out)
    assert re.search(r"planted \|G\| < δ/2 passed .* +0\.500 +0\.500", out)
    assert "seconds per fit: median 20.0" in out


def test_qa_bayes_validation_labels_systems_by_the_gap_their_counts_plant() -> None:
    """A system asked for 2δ whose three categories dilute its G counts in no verdict rate."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from validate_qa_bayes import DELTA, realised_kind

    assert realised_kind("two_delta", 2 * DELTA) == "two_delta"
    assert realised_kind("two_delta", 1.5 * DELTA) == "two_delta"
    assert realised_kind("two_delta", 0.07) == "diluted"  # the one-system shape's 0.001-0.07
    assert realised_kind("small", DELTA / 4) == "small"
    assert realised_kind("small", DELTA) == "diluted"
    assert realised_kind("zero", 0.0) == "zero" and realised_kind("table2", 0.3) == "table2"


def test_prompt_variance_benchmark_runs_on_a_sliver() -> None:
    """Fraction 0.01 of seed 003's scale: 2 questions per category, about 41,000 answers."""
    script = str(ROOT / "benchmarks" / "bench_pv.py")
    out = subprocess.run(
        [sys.executable, script, "--fractions", "0.01"],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    assert "SQLite: fraction, answers, ingest s (answers/s), analysis s, peak MiB" in out.stdout
    assert re.search(r"0\.01\s+41,140\s", out.stdout), out.stdout
