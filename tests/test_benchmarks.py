"""The benchmark scripts still run (on a tiny input); their figures are not asserted."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

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
