"""Calibration of ``cuegap plan``: does an audit of the planned size decide as often as the
plan says?

Usage::

    .venv/bin/python benchmarks/validate_plan.py                 # 200 audits per size
    .venv/bin/python benchmarks/validate_plan.py --reps 60       # a few minutes
    .venv/bin/python benchmarks/validate_plan.py --designs generic

For each scenario: plan from a pilot (the mean bootstrap SD of ``--pilots`` simulated
pilot audits at a reference size, through the design's own planner), let the planner name
N for an 80 % decision probability, then simulate ``--reps`` audits at N and at N/2
through the design's counts-level simulator, its bootstrap and its verdict rule, and print
the share that decide against the plan's prediction, with the Monte Carlo SE.

* ``generic``: clustered, paired binomial audits (:mod:`cuegap.models._plan_sim`), from
  stated rates, ICC and pairing (no pilot), flag and pass.
* ``dilemma``: :func:`cuegap.designs.dilemma.stats._bayes_sim.simulate_counts` (one system, a
planted
  macro gap), :func:`cuegap.designs.dilemma.stats.bootstrap` over dilemmas and
  :func:`cuegap.models.verdicts` (the frequentist rule ``cuegap analyze`` applies); flag.
* ``qa``: the answer shares of one :func:`cuegap.designs.qa.stats._sim.planted_qa_counts`
  audit (drawn at a huge size, so its true G is fixed; the simulator draws new accuracies
  with every seed), multinomial answers per cell at those shares, ``qa_bootstrap`` and
  ``qa_verdicts``; flag, and pass at a true G of exactly 0 (the implicit side answering
  at the explicit side's shares).

* ``pv``: the prompt-variance planner given the planted score m, format SD s and run SD
  σ (six combinations); audits drawn by ``simulate_pv_counts`` with other seeds, scored by
  ``pv_scores`` and decided by the analysis's ``pv_verdict_table``; flag and pass.
* ``conversation``: the conversation planner given the planted cells (two benchmarks, six
  personas, the three default pairs), rates and reveal effect; audits drawn by
  ``simulate_conv_counts`` with other seeds and decided by ``conv_audit_tables`` (its
  t-tests, the policy's minimum of disagreements and units); flag.

These two planners decide by simulation themselves (``--plan-audits`` audits per size), so
the plan's own prediction carries Monte Carlo error too: the z column uses the SE of the
difference of the two shares.

Not yet: the Bayesian rule.
"""

from __future__ import annotations

import argparse
import math
import time
from dataclasses import replace

import numpy as np
import pandas as pd

from cuegap.designs.dilemma.stats import _plan as dilemma_plan
from cuegap.designs.dilemma.stats import bootstrap
from cuegap.designs.dilemma.stats._bayes_sim import simulate_counts
from cuegap.designs.qa import stats as qa_stats
from cuegap.designs.qa.stats import _plan as qa_plan
from cuegap.designs.qa.stats._sim import planted_qa_counts
from cuegap.models import (
    DEFAULT_POLICY,
    PlanInput,
    contrast_se,
    decision_probability,
    plan_table,
    verdicts,
)
from cuegap.models._plan_sim import paired_correlation, simulated_decision_rate

EXPLICIT, IMPLICIT = ("direct", None), ("puzzled", "hard")
POLICY = DEFAULT_POLICY


def _line(name: str, size: float, predicted: float, got: float, reps: int) -> str:
    mc = math.sqrt(max(predicted * (1 - predicted), 1e-4) / reps)
    z = (got - predicted) / mc
    return f"{name:<34}{size:>8,.0f}{predicted:>11.3f}{got:>9.3f}{mc:>8.3f}{z:>+7.1f}"


def _at(inp: PlanInput, size: float, decision: str) -> float:
    se = inp.se * math.sqrt(inp.current_size / size)
    gap = inp.gap if decision == "flag" else 0.0
    return decision_probability(gap, se, inp.delta, inp.probability, decision)  # type: ignore[arg-type]


def _needed(inp: PlanInput, decision: str) -> float:
    t = plan_table([inp], max_factor=1e5)
    return float(t.loc[t["decision"] == decision, "required_size"].iloc[0])


# -- dilemma -------------------------------------------------------------------------
def _dilemma_audit(dilemmas: int, gap: float, seed: int, n_boot: int):
    sim = simulate_counts(n_systems=1, pairs=max(1, round(dilemmas * 12 / 15)), gaps=[gap],
                          dilemmas=dilemmas, seed=seed)  # fmt: skip
    boot = bootstrap(sim.counts, n_boot=n_boot, seed=seed, explicit=EXPLICIT,
                     implicit=IMPLICIT, level=0.9)  # fmt: skip
    macro = boot["macro_gap"][boot["macro_gap"]["consequences"]]
    return sim.counts, macro, verdicts(macro, POLICY)


def dilemma(args: argparse.Namespace) -> list[str]:
    gap, ref = args.dilemma_gap, args.dilemma_ref
    pilots = [_dilemma_audit(ref, gap, 10_000 + k, args.boot) for k in range(args.pilots)]
    inputs = [dilemma_plan.pilot_inputs(v, m, c, explicit=EXPLICIT, implicit=IMPLICIT,
                                        consequences=True, policy=POLICY)[0]
              for c, m, v in pilots]  # fmt: skip
    inp = replace(inputs[0], se=float(np.mean([i.se for i in inputs])), gap=gap)
    n = _needed(inp, "flag")
    out = []
    for size in (n, math.floor(n / 2)):
        size = int(size)
        hits = sum(
            _dilemma_audit(size, gap, k, args.boot)[2]["verdict"].iloc[0] == "flagged"
            for k in range(args.reps)
        )
        out.append(_line(f"dilemma flag, gap {gap:g} pp", size, _at(inp, size, "flag"),
                         hits / args.reps, args.reps))  # fmt: skip
    return out


# -- QA ------------------------------------------------------------------------------
def _qa_draw(base: pd.DataFrame, n: int, seed: int) -> pd.DataFrame:
    """One audit of ``n`` answers per cell at the answer shares of ``base`` (the QA
    simulator's audit at a huge size: its parameters, fixed across audits)."""
    rng = np.random.default_rng(seed)
    keys = [c for c in base.columns if c not in ("answer", "n")]
    parts = []
    for _, cell in base.groupby(keys, sort=False, dropna=False):
        p = cell["n"].to_numpy(dtype=float)
        parts.append(cell.assign(n=rng.multinomial(n, p / p.sum())))
    return pd.concat(parts, ignore_index=True)


def _qa_audit(base: pd.DataFrame, n: int, seed: int, n_boot: int):
    counts = _qa_draw(base, n, seed)
    boot = qa_stats.qa_bootstrap(counts, n_boot=n_boot, seed=seed, delta=POLICY.delta_bias)
    v = qa_stats.qa_verdicts(
        boot["cue_gap"],
        delta=POLICY.delta_bias,
        probability=POLICY.probability,
        min_parsable=POLICY.min_parsable,
    )
    return boot, v


def _qa_null(base: pd.DataFrame) -> pd.DataFrame:
    """``base`` with the implicit side's answer shares replaced by the explicit side's:
    a true G of exactly 0 (the simulator's gap-0 audit differs by its draws)."""
    explicit = base[base["cue"] == "explicit"]
    return pd.concat([explicit, explicit.assign(cue="implicit")], ignore_index=True)


def _qa_plan(base: pd.DataFrame, truth: float, args: argparse.Namespace) -> PlanInput:
    """The planner's input from ``--pilots`` pilot audits of ``--qa-ref`` questions per
    cell: their mean bootstrap SD, the gap set to the truth planned for."""
    pilots = [_qa_audit(base, args.qa_ref, 10_000 + k, args.boot) for k in range(args.pilots)]
    inputs = [qa_plan.pilot_inputs(v, b["cue_gap"], b["dimension_gap"], None,
                                   delta=POLICY.delta_bias, policy=POLICY)[0]
              for b, v in pilots]  # fmt: skip
    return replace(inputs[0], se=float(np.mean([i.se for i in inputs])), gap=truth)


def qa(args: argparse.Namespace) -> list[str]:
    """Flag at the simulator's planted G, and pass at G = 0 (:func:`_qa_null`)."""
    base, planted = planted_qa_counts([args.qa_gap], n=1_000_000, seed=args.qa_seed)
    truth = float(next(iter(planted.values())))
    out = []
    for decision, shares, g in (("flag", base, truth), ("pass", _qa_null(base), 0.0)):
        inp = _qa_plan(shares, g, args)
        n = _needed(inp, decision)
        wanted = "flagged" if decision == "flag" else "passed"
        for size in (int(n), int(n // 2)):
            hits = sum(
                _qa_audit(shares, size, k, args.boot)[1]["verdict"].iloc[0] == wanted
                for k in range(args.reps)
            )
            out.append(_line(f"qa {decision}, G {g:.3f}", size, _at(inp, size, decision),
                             hits / args.reps, args.reps))  # fmt: skip
    return out


# -- prompt variance and conversation: planners that simulate ---------------------------
def _z_line(name: str, size: float, predicted: float, got: float, reps: int, plan: int) -> str:
    var = max(predicted * (1 - predicted), 1e-4)
    mc = math.sqrt(var / reps + var / plan)
    z = (got - predicted) / mc
    return f"{name:<34}{size:>8,.0f}{predicted:>11.3f}{got:>9.3f}{mc:>8.3f}{z:>+7.1f}"


def pv(args: argparse.Namespace) -> list[str]:
    from cuegap.designs.prompt_variance._analysis_verdicts import pv_verdict_table
    from cuegap.designs.prompt_variance.stats import pv_scores, simulate_pv_counts
    from cuegap.designs.prompt_variance.stats._plan import (
        PVPlanParams,
        plan_input,
        questions_per_run,
    )

    k, out = 6, []
    for m, run_sd, decision in ((0.10, 0.2, "flag"), (0.0, 0.06, "pass")):
        params = PVPlanParams.of_policy(POLICY, estimate=m, format_sd=0.01, run_sd=run_sd,
                                        combinations=k)  # fmt: skip
        inp = plan_input(params, system="a", score="s_bbq_dis", replicates=2,
                         source="planted", audits=args.plan_audits, seed=11)  # fmt: skip
        n = int(plan_table([inp]).set_index("decision").loc[decision, "required_size"])
        for size in (n, k * max(2, round(n / k / 2))):
            truth = m if decision == "flag" else 0.0
            sim = simulate_pv_counts(
                systems=[f"s{a}" for a in range(args.reps)], categories=("age",),
                factors={"choice_format": [f"c{j}" for j in range(k)]},
                replicates=size // k, n_questions=questions_per_run(truth, run_sd),
                format_sd=0.01, field_sd=0.0, base_scores={"s_bbq_dis": truth}, seed=size + 7,
            )  # fmt: skip
            v = pv_verdict_table(pv_scores(sim.counts, factors=["choice_format"]),
                                 factors=["choice_format"], policy=POLICY)  # fmt: skip
            v = v[v["score"] == "s_bbq_dis"]
            got = float((v["verdict"] == ("flagged" if decision == "flag" else "passed")).mean())
            out.append(_z_line(f"pv {decision}, score {m:g}", size, inp.decide(size, decision),
                               got, args.reps, args.plan_audits))  # fmt: skip
    return out


def conversation(args: argparse.Namespace) -> list[str]:
    from cuegap.designs.conversation._analysis_tables import ConvSettings, conv_audit_tables
    from cuegap.designs.conversation._plan import ConvPlanParams, plan_input
    from cuegap.designs.conversation.stats import conv_design, simulate_conv_counts
    from cuegap.models import Policy

    cells = conv_design(benchmarks={"BBQ": 1, "DiscrimEval": 1},
                        demographics=("black", "white", "older", "young", "female", "male"),
                        personas=("p1", "p2", "p3", "p4", "p5", "p6"))  # fmt: skip
    effect = {("black", "human"): 0.5, ("black", "ai"): 0.5}
    settings = ConvSettings(policy=Policy(min_parsable=100))
    params = ConvPlanParams(cells=cells, disagreements_per_conversation=0.6, lambda_base=0.3,
                            persona_sd=0.2, effects=effect, settings=settings)  # fmt: skip
    inp = plan_input(params, system="a", conversations=10, fewest=36.0, gap=0.1, unit_sd=0.2,
                     units=6, source="planted", audits=args.plan_audits, seed=7)  # fmt: skip
    n = int(plan_table([inp]).set_index("decision").loc["flag", "required_size"])
    out = []
    for size in (n, max(int(inp.min_size), n // 2)):
        many = pd.concat([cells.drop(columns="system").assign(system=f"s{a}")
                          for a in range(args.reps)])  # fmt: skip
        sim = simulate_conv_counts(cells=many, conversations=size, transitions=2,
                                   p_disagree=0.3, lambda_base=0.3, persona_sd=0.2,
                                   base_reveal_effects=effect, seed=size + 7)  # fmt: skip
        v = conv_audit_tables(sim.counts, settings)["verdicts"]
        got = float((v["verdict"] == "flagged").mean())
        out.append(_z_line("conversation flag, reveal +0.5", size, inp.decide(size, "flag"),
                           got, args.reps, args.plan_audits))  # fmt: skip
    return out


# -- generic -------------------------------------------------------------------------
def generic(args: argparse.Namespace) -> list[str]:
    rate, icc, m, delta, q = 0.4, 0.1, 4, 0.02, POLICY.probability
    out = []
    for gap, decision in ((0.06, "flag"), (0.0, "pass")):
        se1 = contrast_se(rate + gap, rate, items=1, responses_per_item=m, icc=icc,
                          paired_correlation=paired_correlation(icc, m))  # fmt: skip
        inp = PlanInput(system="s", design="generic", contrast="", gap=gap, se=se1,
                        current_size=1, size_unit="items", delta=delta, probability=q)  # fmt: skip
        n = _needed(inp, decision)
        for size in (int(n), int(n // 2)):
            got = simulated_decision_rate(items=size, m=m, rate=rate, icc=icc, gap=gap,
                                          delta=delta, probability=q, decision=decision,
                                          replicates=args.reps, seed=size)  # fmt: skip
            out.append(_line(f"generic {decision}, gap {gap:g}", size,
                             _at(inp, size, decision), got, args.reps))  # fmt: skip
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--reps", type=int, default=200, help="simulated audits per size")
    p.add_argument("--pilots", type=int, default=10, help="pilot audits the plan averages")
    p.add_argument("--boot", type=int, default=200, help="bootstrap replicates per audit")
    p.add_argument("--designs", default="generic,dilemma,qa,pv,conversation")
    p.add_argument(
        "--plan-audits",
        type=int,
        default=200,
        help="audits per size the simulating planners (pv, conversation) use",
    )
    p.add_argument("--dilemma-gap", type=float, default=6.0, help="planted macro gap (pp)")
    p.add_argument("--dilemma-ref", type=int, default=100, help="pilot dilemmas")
    p.add_argument("--qa-gap", type=float, default=0.4, help="planted QA gap (simulator's)")
    p.add_argument("--qa-seed", type=int, default=0, help="seed of the QA truth")
    p.add_argument("--qa-ref", type=int, default=40, help="pilot questions per cell")
    args = p.parse_args()
    runs = {"generic": generic, "dilemma": dilemma, "qa": qa, "pv": pv,
            "conversation": conversation}  # fmt: skip
    print(f"{'scenario':<34}{'size':>8}{'predicted':>11}{'decided':>9}{'MC SE':>8}{'z':>7}")
    for name in args.designs.split(","):
        start = time.perf_counter()
        for line in runs[name](args):
            print(line, flush=True)
        print(f"  ({name}: {time.perf_counter() - start:.0f} s)")


if __name__ == "__main__":
    main()
