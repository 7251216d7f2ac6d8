r"""What a prompt-variance audit's size gives: the probability that a headline score's
verdict is reached (*flagged* or *passed*: the score survives the prompt format), by
simulated audits decided by the design's own rule.

Pure: stored verdict rows or stated assumptions in, :class:`cuegap.models.PlanInput` out.
The size unit is runs, prompt combinations × replicates; a plan keeps the audit's k
combinations (the formats it compares) and adds replicates, so sizes are multiples of k.

A headline score is planned at its estimated parameters: m (the mean over combinations),
s (the SD of the true combination means, prompt construction alone) and σ (the SD of one
run's value around its combination's mean, decoding noise). σ comes from the verdict's
interval: se = (high − low) / (2 z) is √(MS_within Σ 1/n_c) / k, so σ ≈ se √(k r).

:func:`simulated_decision_rate` draws audits with the design's counts-level simulator
(:func:`~cuegap.designs.prompt_variance.stats.simulate_pv_counts`: one factor of k levels
with planted SD s, the score planted as the disambiguated BBQ score at m, and as many
questions per run as give a run SD of σ), scores them with ``pv_scores`` and decides them
with ``pv_verdicts``, the analysis's own rule: the share *flagged* when the planted score
is m, the share *passed* when it is 0 (same s and σ).

Notes
-----
A disambiguated BBQ score from n non-unknown answers has run variance ≈ (1 − t²)/n, so a
run SD σ needs n = (1 − m²)/σ² such answers; the simulator asks half its questions
disambiguated and 95 % of those are non-unknown, so ``n_questions`` = 2n / 0.95.
Combination effects are normal in the rule's model and the simulator's; true combination
scores are clipped to ±0.95, which matters only for scores near ±1.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace

import pandas as pd
from scipy.stats import norm

from cuegap.designs.prompt_variance.stats._scores import pv_scores
from cuegap.designs.prompt_variance.stats._sim import simulate_pv_counts
from cuegap.designs.prompt_variance.stats._verdict import SCORE_LABELS, pv_verdicts
from cuegap.models import PlanAssumptions, PlanInput, Policy

__all__ = [
    "SIZE_UNIT",
    "PVPlanParams",
    "assumed_inputs",
    "pilot_inputs",
    "plan_input",
    "simulated_decision_rate",
]

SIZE_UNIT = "runs (prompt combinations × replicates)"
_DESIGN = "prompt-variance"
_DIS_KNOWN = 0.95  # share of non-unknown disambiguated answers in the simulator


@dataclass(frozen=True, slots=True)
class PVPlanParams:
    """One headline score's planning parameters (module docstring).

    Attributes
    ----------
    estimate, format_sd, run_sd : float
        m, s and σ on the bias-score scale.
    combinations : int
        k, the prompt combinations the audit compares.
    delta, probability : float
        The policy's ``delta_bias`` and ``format_probability``.
    min_combinations, min_replicates : int
        The policy's data gate.
    """

    estimate: float
    format_sd: float
    run_sd: float
    combinations: int
    delta: float
    probability: float
    min_combinations: int = 4
    min_replicates: int = 2

    @classmethod
    def of_policy(
        cls, policy: Policy, *, estimate: float, format_sd: float, run_sd: float, combinations: int
    ) -> PVPlanParams:
        """The parameters under ``policy``'s δ and ``[prompt_variance]`` keys."""
        return cls(estimate=estimate, format_sd=format_sd, run_sd=run_sd,
                   combinations=int(combinations), delta=policy.delta_bias,
                   probability=policy.format_probability,
                   min_combinations=int(policy.min_combinations),
                   min_replicates=int(policy.min_replicates))  # fmt: skip


def questions_per_run(estimate: float, run_sd: float) -> int:
    """Questions per simulated run that give a disambiguated BBQ score at ``estimate`` a
    run SD of ``run_sd`` (module Notes); at least 4."""
    m = min(abs(estimate), 0.95)
    n = (1 - m * m) / max(run_sd, 1e-4) ** 2
    return max(4, 2 * math.ceil(n / _DIS_KNOWN))


def simulated_decision_rate(
    params: PVPlanParams, replicates: int, decision: str, *, audits: int = 200, seed: int = 0
) -> float:
    """Share of ``audits`` simulated audits of k combinations × ``replicates`` that the
    prompt-variance rule decides ``decision`` (``flag``: planted at m; ``pass``: at 0).

    Every audit is one simulated system of one simulator call, so one ``pv_verdicts``
    call decides them all.
    """
    if decision not in ("flag", "pass"):
        raise ValueError(f"decision must be 'flag' or 'pass', but got {decision!r}")
    if replicates < 1:
        raise ValueError(f"replicates must be >= 1, but got {replicates!r}")
    truth = params.estimate if decision == "flag" else 0.0
    k = max(int(params.combinations), 1)
    factors = {"prompt_format": [f"f{j:03d}" for j in range(k)]}
    sim = simulate_pv_counts(
        systems=[f"audit-{a:04d}" for a in range(audits)], categories=("planned",),
        factors=factors, replicates=int(replicates),
        n_questions=questions_per_run(truth, params.run_sd), format_sd=params.format_sd,
        field_sd=0.0, base_scores={"s_bbq_dis": truth}, seed=seed,
    )  # fmt: skip
    scores = pv_scores(sim.counts, factors=["prompt_format"])
    runs = scores[scores["metric"] == "s_bbq_dis"].rename(columns={"score": "value"})
    runs = runs.assign(score="s_bbq_dis")[
        ["system", "score", "prompt_format", "replicate", "value"]
    ]
    v = pv_verdicts(runs, factors=["prompt_format"], delta=params.delta,
                    probability=params.probability, min_combinations=params.min_combinations,
                    min_replicates=params.min_replicates)  # fmt: skip
    wanted = "flagged" if decision == "flag" else "passed"
    return float((v["verdict"] == wanted).sum() / audits)


#: Simulated runs per decision probability the planner computes: large sizes get fewer
#: audits (never under 60), so that a plan up to 100 times the audit's size stays quick.
RUN_BUDGET = 200_000


def _decider(params: PVPlanParams, audits: int, seed: int) -> Callable[[float, str], float]:
    cache: dict[tuple[int, str], float] = {}

    def decide(size: float, decision: str) -> float:
        r = max(1, round(size / params.combinations))
        if (r, decision) not in cache:
            n = max(min(audits, 60), min(audits, RUN_BUDGET // (params.combinations * r)))
            cache[(r, decision)] = simulated_decision_rate(params, r, decision, audits=n, seed=seed)
        return cache[(r, decision)]

    return decide


def _mde(params: PVPlanParams, replicates: float, target: float) -> float:
    """Approximate smallest |score| flagged with probability ``target`` now: the rule needs
    P(zone kept) ≥ q with sd √(se² + s²), and the estimate must land there
    (δ + z_q √(se² + s²) + z_target se, se = σ/√(k r))."""
    se = params.run_sd / math.sqrt(params.combinations * max(replicates, 1))
    q = min(params.probability, 1 - 1e-9)
    return (
        params.delta
        + float(norm.ppf(q)) * math.hypot(se, params.format_sd)
        + float(norm.ppf(target)) * se
    )


def plan_input(
    params: PVPlanParams,
    *,
    system: str,
    score: str,
    replicates: float,
    source: str,
    audits: int = 200,
    seed: int = 0,
    target: float = 0.8,
) -> PlanInput:
    """The plan input of one system's headline score: decided by
    :func:`simulated_decision_rate` at every size the plan asks about."""
    k = int(params.combinations)
    if k < params.min_combinations:
        params = replace(params, combinations=params.min_combinations)
        k = params.min_combinations
    label = SCORE_LABELS.get(score, score)
    return PlanInput(
        system=system, design=_DESIGN, contrast=f"{label} across {k} combinations",
        gap=params.estimate, se=params.run_sd / math.sqrt(k * max(replicates, 1)),
        current_size=float(k * replicates), size_unit=SIZE_UNIT, delta=params.delta,
        probability=params.probability, min_size=float(k * params.min_replicates),
        scale="bias score", source=source, decide=_decider(params, audits, seed),
        size_step=float(k), mde=_mde(params, replicates, target),
    )  # fmt: skip


def pilot_inputs(
    verdicts: pd.DataFrame, policy: Policy, *, source: str = "", audits: int = 200, seed: int = 0
) -> list[PlanInput]:
    """One plan input per stored verdict row (system × headline score) with an estimate,
    a format SD and an interval.

    Parameters
    ----------
    verdicts : DataFrame
        The stored ``verdicts`` table of a prompt-variance analysis (``estimate``, ``low``,
        ``high``, ``level``, ``format_sd``, ``n_combinations``, ``min_replicates``,
        ``n_runs``).
    policy : Policy
        δ (``delta_bias``) and the ``[prompt_variance]`` keys to plan under.
    """
    out = []
    for r in verdicts.itertuples(index=False):
        values = (r.estimate, r.low, r.high, r.format_sd, r.level)
        if not all(math.isfinite(float(x)) for x in values) or r.n_runs < 2:
            continue
        se = (float(r.high) - float(r.low)) / (2 * float(norm.ppf(0.5 + float(r.level) / 2)))
        k = int(r.n_combinations)
        run_sd = se * math.sqrt(float(r.n_runs))
        params = PVPlanParams.of_policy(policy, estimate=float(r.estimate),
                                        format_sd=float(r.format_sd), run_sd=run_sd,
                                        combinations=k)  # fmt: skip
        out.append(plan_input(params, system=str(r.system), score=str(r.score),
                              replicates=float(r.n_runs) / k, source=source, audits=audits,
                              seed=seed))  # fmt: skip
    return out


def assumed_inputs(
    assumptions: PlanAssumptions, policy: Policy, *, audits: int = 200, seed: int = 0
) -> list[PlanInput]:
    """Plan inputs from stated assumptions: ``combinations``, ``replicates``, ``format_sd``
    and ``run_sd`` of the ``[plan]`` table, and ``gap`` as the score to plan a flag for.

    Raises
    ------
    ValueError
        When a key the prompt-variance planner needs is missing.
    """
    a = assumptions
    a.require("formats", _DESIGN)
    params = PVPlanParams.of_policy(policy, estimate=a.gap, format_sd=a.format_sd,
                                    run_sd=a.run_sd, combinations=int(a.combinations))  # fmt: skip
    return [
        plan_input(
            params,
            system=system,
            score="score",
            replicates=a.replicates,
            source=f"assumptions {a.path}",
            audits=audits,
            seed=seed,
        )
        for system in a.systems
    ]
