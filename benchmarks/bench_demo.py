"""The demo's wall time, cold and warm, with where the time went.

Usage::

    .venv/bin/python benchmarks/bench_demo.py            # cold, then warm (about 2 minutes)
    .venv/bin/python benchmarks/bench_demo.py --no-bayes  # without the Bayesian fit

Target (issue 14): ``make demo`` after install in under 60 s warm, Bayesian fit included.
"Cold" runs with empty PyTensor and Numba caches (a first run after install); "warm" runs
again with the caches the cold run left. Both run ``cuegap demo`` in a fresh process, into
an empty folder and store, and print the demo's own "Where the time went" table.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGET_S = 60.0


def run_demo(root: Path, caches: Path, label: str, bayes: bool, systems: int = 14) -> float:
    """Run ``cuegap demo`` in ``root`` with its compile caches under ``caches``; wall s."""
    env = dict(os.environ)
    env["PYTENSOR_FLAGS"] = f"compiledir={caches / 'pytensor'}"
    env["NUMBA_CACHE_DIR"] = str(caches / "numba")
    env["COLUMNS"] = "100"
    root.mkdir(parents=True)
    cmd = [sys.executable, "-m", "cuegap.cli", "--db", f"sqlite:///{root / 'demo.db'}", "demo"]
    cmd += ["--dir", str(root / "out"), "--systems", str(systems)]
    cmd += [] if bayes else ["--no-bayes"]
    start = time.perf_counter()
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, check=True).stdout
    wall = time.perf_counter() - start
    table = out[out.index("Where the time went") :] if "Where the time went" in out else ""
    print(f"\n{label}: {wall:.1f} s wall (process start to exit)")
    for line in table.splitlines():
        if re.search(r"\d", line):
            print("  " + line.strip("│┃ ").replace("│", " "))
    return wall


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--no-bayes", action="store_true", help="skip the Bayesian fit")
    ap.add_argument("--systems", type=int, default=14, help="systems (the demo's 14)")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        kw = {"bayes": not args.no_bayes, "systems": args.systems}
        cold = run_demo(root / "cold", root / "caches", "cold (empty compile caches)", **kw)
        warm = run_demo(root / "warm", root / "caches", "warm (caches of the cold run)", **kw)
    met = "met" if warm < TARGET_S else "NOT met"
    print(f"\nwarm demo {warm:.1f} s (target < {TARGET_S:.0f} s: {met}); cold {cold:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
