"""The ingest fault checks, bounded: fuzzed lines on both backends and kill -9 on SQLite.

The long version (10,000 lines, 20 kills) is ``python benchmarks/ingest_faults.py``.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.conftest import PG_URL, pg_database

SCRIPT = Path(__file__).parent.parent / "benchmarks" / "ingest_faults.py"


def _run(*args: str) -> str:
    out = subprocess.run(
        [sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert "Traceback" not in out.stderr
    return out.stdout


def test_fuzzed_lines_balance_on_both_backends_and_kills_recover() -> None:
    """Every fuzzed line is stored, a duplicate or quarantined with a reason, the same on
    SQLite and PostgreSQL; killed init/ingest runs re-ingest to the clean store."""
    args = ["--lines", "600", "--kills", "2", "--clean-lines", "4000", "--seed", "3"]
    if PG_URL:
        with pg_database() as url:
            out = _run(*args, "--pg", url)
        assert "fuzz SQLite vs PostgreSQL: same counts" in out
    else:
        out = _run(*args, "--pg", "")
    assert "600 lines in =" in out and "(balanced)" in out
    assert "quarantine rows without a reason: 0" in out
    assert "kill -9: 2 of 2" in out
