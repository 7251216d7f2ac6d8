"""Time ``cuegap plan`` on an existing store (issue 28 asks for under a minute per design
at paper scale).

Usage::

    cuegap --db sqlite:///demo.db demo --no-bayes          # paper scale: 14 systems
    .venv/bin/python benchmarks/bench_plan.py sqlite:///demo.db
    .venv/bin/python benchmarks/bench_plan.py --simulated         # no store needed
    .venv/bin/python benchmarks/bench_plan.py --simulated --quick # one system each

With a store: prints, per design the store holds, the seconds its planner takes (reading
the newest analysis and the store's counts) and the seconds of the plan table, and the
share of systems whose pass is reachable at the audit's size.

With ``--simulated``: the two planners that simulate audits, on pilots drawn at their
simulators' paper scale (no store: the pilot's tables are computed in memory, as the
analysis would store them), and the seconds per plan (one system × headline contrast:
both decisions' required size, the probabilities now and, for the conversation design,
the simulated minimum detectable gap):

* prompt variance: ``simulate_pv_counts`` defaults (seed 003 §3: 11 choice formats × 2
  field orders = 22 combinations, 5 replicates, 2 categories, 200 questions per run),
  scored and judged by the analysis's ``pv_verdict_table``;
* conversation: ``conv_design`` defaults (seed 003 §5: BBQ 9, Difference-Awareness 8 and
  Discrim-Eval 2 categories, 7 demographics, 6 personas, 2 instantiations, 2 reveals:
  3,192 cells per system), 40 conversations per cell, a reveal effect of +0.5 logit on
  black, persona SD 0.2, judged by ``conv_audit_tables``.
"""

from __future__ import annotations

import sys
import time

from cuegap.designs import PlanRequest, PlanUnavailable, designs_in_store, get
from cuegap.models import plan_table
from cuegap.schema import make_engine


def _timed(name: str, inputs: list, what: str) -> None:
    for inp in inputs:
        start = time.perf_counter()
        t = plan_table([inp]).set_index("decision")
        sec = time.perf_counter() - start
        need = t["required_size"].map(lambda x: "-" if x != x else f"{x:,.0f}")
        print(f"{name} {inp.system} {what}: {sec:.1f} s; required flag {need['flag']}, "
              f"pass {need['pass']} {inp.size_unit} (now {inp.current_size:,.0f}); "
              f"mde {t.loc['flag', 'mde']:.3g}", flush=True)  # fmt: skip


def simulated(quick: bool) -> None:
    """The prompt-variance and conversation planners at their simulators' paper scale."""
    from cuegap.designs.conversation._analysis_tables import ConvSettings, conv_audit_tables
    from cuegap.designs.conversation._plan import pilot_inputs as conv_inputs
    from cuegap.designs.conversation.stats import simulate_conv_counts
    from cuegap.designs.prompt_variance._analysis_verdicts import pv_verdict_table
    from cuegap.designs.prompt_variance.stats import pv_scores, simulate_pv_counts
    from cuegap.designs.prompt_variance.stats._plan import pilot_inputs as pv_inputs
    from cuegap.models import DEFAULT_POLICY

    n = 1 if quick else 3
    sim = simulate_pv_counts(systems=[f"sys-{k}" for k in range(n)], seed=1)
    factors = ["choice_format", "field_order"]
    verdicts = pv_verdict_table(pv_scores(sim.counts, factors=factors), factors=factors,
                                policy=DEFAULT_POLICY)  # fmt: skip
    inputs = pv_inputs(verdicts, DEFAULT_POLICY)
    _timed("prompt-variance", inputs[: 2 * n] if quick else inputs, "(22 combinations)")
    conv = simulate_conv_counts(conversations=40, persona_sd=0.2, seed=2,
                                base_reveal_effects={("black", "human"): 0.5,
                                                     ("black", "ai"): 0.5})  # fmt: skip
    conv.counts["system"] = conv.counts["system"].astype(str)
    settings = ConvSettings()
    tests = conv_audit_tables(conv.counts, settings)["conv_tests"]
    _timed("conversation", conv_inputs(conv.counts, tests, settings), "(3,192 cells)")


def main() -> None:
    if "--simulated" in sys.argv:
        simulated("--quick" in sys.argv)
        return
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
