"""Time ``cuegap plan`` on an existing store (issue 28 asks for under a minute per design
at paper scale).

Usage::

    cuegap --db sqlite:///demo.db demo --no-bayes          # paper scale: 14 systems
    .venv/bin/python benchmarks/bench_plan.py sqlite:///demo.db

Prints, per design the store holds, the seconds its planner takes (reading the newest
analysis and the store's counts) and the seconds of the plan table, and the share of
systems whose pass is reachable at the audit's size.
"""

from __future__ import annotations

import sys
import time

from cuegap.designs import PlanRequest, PlanUnavailable, designs_in_store, get
from cuegap.models import plan_table
from cuegap.schema import make_engine


def main() -> None:
    engine = make_engine(sys.argv[1] if len(sys.argv) > 1 else "sqlite:///cuegap.db")
    for name in designs_in_store(engine):
        start = time.perf_counter()
        try:
            inputs = get(name).plan(engine, PlanRequest(policy=None))
        except PlanUnavailable as exc:
            print(f"{name}: {exc}")
            continue
        read = time.perf_counter() - start
        table = plan_table(inputs)
        total = time.perf_counter() - start
        passes = table[table["decision"] == "pass"]
        print(f"{name}: {len(inputs)} systems x contrasts; planner {read:.1f} s, "
              f"total {total:.1f} s; pass likely now for "
              f"{int((passes['p_decide'] >= 0.8).sum())} of {len(passes)}")  # fmt: skip


if __name__ == "__main__":
    main()
