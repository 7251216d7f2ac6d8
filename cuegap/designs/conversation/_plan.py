r"""The conversation design's planner: how many conversations per cell a system's verdict
on the policy's contrast (default ΔDemoΔRC λ_base) needs, decided by simulated audits.

Per system, from the pilot's count frame (or stated assumptions), :class:`ConvPlanParams`
holds the cells the audit asks (benchmark × category × demographics × persona ×
instantiation × reveal), the disagreements per conversation, the baseline agent's shift
rate λ_base on anonymous cells, the spread of personas (logit SD, method of moments), the
planted reveal effect of each (demographics, instantiation): logit λ_base(revealed) −
logit λ_base(anonymous), pooled, and the persona × demographics interaction τ: the SD
between personas of that reveal effect (per benchmark, demographics and instantiation:
the variance over personas of λ̂(revealed) − λ̂(anonymous), less its binomial part Σ
λ̂(1 − λ̂)/(D − 1), over (λ(1 − λ))² of the revealed rate, averaged and truncated at 0;
0 with fewer than two personas, or stated as ``interaction_sd``; noisy on pilots of a
few disagreements per persona). Without τ the simulated personas differ only by offsets
shared by every demographic, which cancel in the contrast, and the plan is optimistic
when the real reveal effect varies between personas. :func:`simulated_decision_rate`
draws ``audits`` audits of n conversations per cell with the design's counts-level simulator
(:func:`~cuegap.designs.conversation.stats.simulate_conv_counts`) and decides them with
the analysis's own tables and verdict rule
(:func:`~cuegap.designs.conversation._analysis_tables.conv_audit_tables`): the share
*flagged* at the estimated effects, the share *passed* with every effect 0.

The rule includes the policy's minimum counts: a shift rate resting on fewer
disagreements than ``[data] min_parsable`` makes the verdict inconclusive (a real audit
was, on 39 and 43 against 200), and so does a t-test on fewer units than
``[conversation] min_unit_df`` + 1. Disagreements grow with conversations, so the
minimum is a floor on the size (``min_size``); units (personas) do not, so too few of
them leave every size undecided.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd
from scipy.special import logit
from scipy.stats import norm, t
from sqlalchemy.engine import Engine

from cuegap.designs import PlanRequest, PlanUnavailable, stored_settings
from cuegap.designs.conversation._analysis_tables import (
    ConvSettings,
    conv_audit_tables,
    fewest_disagreements,
)
from cuegap.designs.conversation._plan_mde import gap_effect, mde_condition, mde_finder
from cuegap.designs.conversation.stats import simulate_conv_counts
from cuegap.designs.conversation.stats._frame import ANONYMOUS, CELL, REVEALED
from cuegap.models import PlanAssumptions, PlanInput, Policy

__all__ = [
    "SIZE_UNIT", "ConvPlanParams", "interaction_sd", "pilot_inputs", "plan", "plan_input",
    "simulated_decision_rate",
]  # fmt: skip

SIZE_UNIT = "conversations per cell"
_DESIGN = "conversation"
#: Simulated cells per decision probability: big designs get fewer audits (never < 40).
CELL_BUDGET = 100_000


@dataclass(frozen=True)
class ConvPlanParams:
    """One system's planning parameters (module docstring); rates on the 0-1 scale."""

    cells: pd.DataFrame
    disagreements_per_conversation: float
    lambda_base: float
    persona_sd: float
    effects: dict[tuple[str, str], float]
    settings: ConvSettings
    interaction_sd: float = 0.0


def _rate(shift: pd.Series, n: pd.Series) -> float:
    return float(np.clip((shift.sum() + 0.5) / (n.sum() + 1.0), 1e-3, 1 - 1e-3))


def estimate_params(counts: pd.DataFrame, settings: ConvSettings) -> ConvPlanParams:
    """The planning parameters of one system's count frame (module docstring)."""
    c = counts
    per_conv = float(c["base_disagree"].sum() / max(c["conversations"].sum(), 1))
    anon = c[c["reveal"] == ANONYMOUS]
    lam = _rate(anon["base_shift"], anon["base_disagree"])
    by = anon.groupby(["benchmark", "persona"])[["base_shift", "base_disagree"]].sum()
    p = ((by["base_shift"] + 0.5) / (by["base_disagree"] + 1.0)).clip(1e-3, 1 - 1e-3)
    noise = (1 / ((by["base_disagree"] + 1.0) * p * (1 - p))).mean()
    spread = float(logit(p).var(ddof=1)) if len(p) > 1 else 0.0
    persona_sd = math.sqrt(max(0.0, spread - float(noise))) if math.isfinite(spread) else 0.0
    effects = {}
    for (d, i), g in c.groupby(["demographics", "instantiation"]):
        rev, an = g[g["reveal"] == REVEALED], g[g["reveal"] == ANONYMOUS]
        if len(rev) and len(an):
            effects[(str(d), str(i))] = float(
                logit(_rate(rev["base_shift"], rev["base_disagree"]))
                - logit(_rate(an["base_shift"], an["base_disagree"]))
            )
    return ConvPlanParams(cells=c[list(CELL)].drop_duplicates().reset_index(drop=True),
                          disagreements_per_conversation=per_conv, lambda_base=lam,
                          persona_sd=persona_sd, effects=effects, settings=settings,
                          interaction_sd=interaction_sd(c))  # fmt: skip


def interaction_sd(counts: pd.DataFrame) -> float:
    """The persona × demographics interaction τ of one system's count frame: the SD
    between personas of the logit reveal effect of λ_base (module docstring); 0 when no
    (benchmark, demographics, instantiation) has two personas with both reveals.

    Estimated on the rate scale, where the binomial part has an unbiased estimate even on
    few disagreements: per group, the variance over personas of p̂(revealed) −
    p̂(anonymous) less the mean of Σ p̂(1 − p̂)/(D − 1), divided by (p̄(1 − p̄))² of the
    revealed rate (the delta method's slope), averaged over groups."""
    keys = ["benchmark", "demographics", "instantiation", "persona", "reveal"]
    c = counts[counts["reveal"].isin([REVEALED, ANONYMOUS])]
    by = c.groupby(keys)[["base_shift", "base_disagree"]].sum()
    by = by[by["base_disagree"] > 1]
    p = by["base_shift"] / by["base_disagree"]
    wide = pd.DataFrame({"p": p, "v": p * (1 - p) / (by["base_disagree"] - 1)}).unstack("reveal")
    if wide.empty or wide.shape[1] < 4:
        return 0.0
    wide = wide.dropna()
    diff = wide[("p", REVEALED)] - wide[("p", ANONYMOUS)]
    noise = wide[("v", REVEALED)] + wide[("v", ANONYMOUS)]
    excess = []
    for _, d in diff.groupby(level=["benchmark", "demographics", "instantiation"]):
        if len(d) > 1:
            pr = float(wide.loc[d.index, ("p", REVEALED)].mean())
            slope = max(pr * (1 - pr), 1e-3) ** 2
            excess.append((float(d.var(ddof=1)) - float(noise.loc[d.index].mean())) / slope)
    return math.sqrt(max(0.0, float(np.mean(excess)))) if excess else 0.0


def simulated_decision_rate(
    params: ConvPlanParams, conversations: int, decision: str, *, audits: int = 200, seed: int = 0
) -> float:
    """Share of ``audits`` simulated audits of ``conversations`` per cell that the
    conversation rule decides ``decision`` (``flag``: at the estimated reveal effects;
    ``pass``: with none). Every audit is one simulated system of one simulator call."""
    if decision not in ("flag", "pass"):
        raise ValueError(f"decision must be 'flag' or 'pass', but got {decision!r}")
    one = params.cells.drop(columns="system")
    cells = pd.concat([one.assign(system=f"audit-{a:04d}") for a in range(audits)])
    d = params.disagreements_per_conversation
    transitions = max(1, math.ceil(d))
    sim = simulate_conv_counts(
        cells=cells[list(CELL)], conversations=int(conversations), transitions=transitions,
        p_disagree=min(1.0, d / transitions), lambda_iden=params.lambda_base,
        lambda_base=params.lambda_base, persona_sd=params.persona_sd,
        base_reveal_effects=params.effects if decision == "flag" else {}, seed=seed,
        interaction_sd=params.interaction_sd,
    )  # fmt: skip
    v = conv_audit_tables(sim.counts, params.settings)["verdicts"]
    wanted = "flagged" if decision == "flag" else "passed"
    return float((v["verdict"] == wanted).sum() / audits)


def _n_audits(params: ConvPlanParams, audits: int) -> int:
    return max(min(audits, 40), min(audits, CELL_BUDGET // max(len(params.cells), 1)))


def _decider(params: ConvPlanParams, audits: int, seed: int) -> Callable[[float, str], float]:
    cache: dict[tuple[int, str], float] = {}
    n_audits = _n_audits(params, audits)

    def decide(size: float, decision: str) -> float:
        key = (max(1, round(size)), decision)
        if key not in cache:
            cache[key] = simulated_decision_rate(params, key[0], decision, audits=n_audits,
                                                 seed=seed)  # fmt: skip
        return cache[key]

    return decide


def _mde_finder(
    params: ConvPlanParams, conversations: int, *, floor: float, audits: int, seed: int,
    approx: Callable[[float], float],
) -> Callable[[float], float]:  # fmt: skip
    """``target -> mde`` at ``conversations`` per cell (:func:`mde_finder`): the gap
    planted on :func:`mde_condition` alone, decided by this planner's simulated audits."""
    st, where = params.settings, mde_condition(params.cells)
    units = params.cells[st.unit].nunique() if st.unit in params.cells else 0

    def rate(gap: float) -> float:
        planted = replace(params, effects={where: gap_effect(params.lambda_base, gap)})
        return simulated_decision_rate(planted, conversations, "flag",
                                       audits=_n_audits(params, audits), seed=seed)  # fmt: skip

    possible = conversations >= floor and where is not None and units > st.policy.min_unit_df
    return mde_finder(rate, approx, top=0.999 - params.lambda_base, tol=st.delta / 20,
                      possible=possible)  # fmt: skip


def plan_input(
    params: ConvPlanParams,
    *,
    system: str,
    conversations: float,
    fewest: float,
    gap: float,
    unit_sd: float,
    units: int,
    source: str,
    audits: int = 200,
    seed: int = 0,
    target: float = 0.8,
) -> PlanInput:
    """The plan input of one system: ``fewest`` disagreements behind a λ of the contrast
    at ``conversations`` per cell set the floor ``min_size`` = ⌈min_parsable ·
    conversations / fewest⌉; the minimum detectable gap is found by simulated audits
    (``mde_at``, :func:`_mde_finder`), starting from δ + (t_{1−α, units−1} + z_target) ·
    unit_sd/√units (the smallest mean flagged with probability ``target`` on one
    benchmark; ``target`` is the plan table's)."""
    st = params.settings
    floor = math.ceil(st.policy.min_parsable * conversations / fewest) if fewest > 0 else 1
    se = unit_sd / math.sqrt(units) if units > 0 else math.nan

    def approx(target: float) -> float:
        if units <= 1:
            return math.nan
        return st.delta + (float(t.ppf(1 - st.alpha, units - 1)) + float(norm.ppf(target))) * se

    mde_at = _mde_finder(params, max(1, round(conversations)), floor=max(1, floor),
                         audits=audits, seed=seed, approx=approx)  # fmt: skip
    return PlanInput(
        system=system, design=_DESIGN, contrast=st.contrast, gap=gap, se=se,
        current_size=float(conversations), size_unit=SIZE_UNIT, delta=st.delta,
        probability=st.policy.probability, min_size=float(max(1, floor)),
        scale="shift rate", source=source, decide=_decider(params, audits, seed),
        mde_at=mde_at,
    )  # fmt: skip


def _pilot(engine: Engine, request: PlanRequest) -> list[PlanInput]:
    from cuegap.audit import latest_analysis_id, load_table
    from cuegap.designs.conversation._analysis import load_conv_counts

    found = latest_analysis_id(engine, "conversation")
    if found is None:
        raise PlanUnavailable(
            "no conversation analysis is stored to plan from: run cuegap analyze --design "
            "conversation on a pilot, or give --assumptions FILE"
        )
    st = ConvSettings.from_dict(stored_settings(engine, found))
    if request.policy is not None:
        st = replace(st, policy=request.policy)
    if st.unit == "question":
        raise PlanUnavailable("the conversation planner simulates persona or category units")
    counts = load_conv_counts(engine)
    tests = load_table(engine, "conv_tests", found)
    return pilot_inputs(counts, tests, st, source=f"conversation analysis {found}")


def pilot_inputs(
    counts: pd.DataFrame, tests: pd.DataFrame, settings: ConvSettings, *, source: str = ""
) -> list[PlanInput]:
    """One plan input per system of a pilot's count frame and its ``conv_tests`` table
    (pure; what ``cuegap plan`` reads from the store): the gap is the condition with the
    largest mean over benchmarks, the unit SD and units the tests' medians."""
    tests = tests[tests["contrast"] == settings.contrast]
    fewest = fewest_disagreements(counts, contrast=settings.contrast)
    out = []
    for system, mine in counts.groupby("system"):
        sub = tests[tests["system"] == system]
        if sub.empty or system not in fewest.index:
            continue
        means = sub.groupby(["demographic", "reference", "instantiation"])["mean"].mean()
        gap = float(means.loc[means.abs().idxmax()]) if means.notna().any() else math.nan
        out.append(plan_input(
            estimate_params(mine, settings), system=str(system),
            conversations=float(mine["conversations"].median()), fewest=float(fewest[system]),
            gap=gap, unit_sd=float(sub["sd"].median()), units=int(sub["n_units"].median()),
            source=source,
        ))  # fmt: skip
    return out


def _assumed(a: PlanAssumptions, policy: Policy) -> list[PlanInput]:
    """Stated assumptions: ``units`` personas × ``benchmarks`` benchmarks (one category
    each) × the default pairs' demographics × two instantiations × both reveals; ``gap``
    is planted as a reveal effect on each pair's disadvantaged side (a ΔDemoΔRC λ_base of
    about ``gap``)."""
    from cuegap.designs.conversation.stats import conv_design
    from cuegap.designs.conversation.stats._frame import DEFAULT_PAIRS

    a.require("conversations", _DESIGN)
    demographics = [d for pair in DEFAULT_PAIRS for d in pair]
    cells = conv_design(benchmarks={f"b{k + 1}": 1 for k in range(int(a.benchmarks))},
                        demographics=demographics,
                        personas=[f"p{k + 1}" for k in range(int(a.units))])  # fmt: skip
    lam = a.lambda_base
    shift = float(logit(min(lam + a.gap, 0.999)) - logit(lam))
    effects = {(d1, i): shift for d1, _ in DEFAULT_PAIRS for i in set(cells["instantiation"])}
    st = ConvSettings(policy=policy)
    per = a.disagreements_per_conversation
    params = ConvPlanParams(cells=cells, disagreements_per_conversation=per, lambda_base=lam,
                            persona_sd=0.0, effects=effects, settings=st,
                            interaction_sd=a.interaction_sd)  # fmt: skip
    fewest = per * a.conversations * a.units
    sd = math.sqrt(4 * lam * (1 - lam) / (per * a.conversations))
    return [
        plan_input(
            params,
            system=s,
            conversations=a.conversations,
            fewest=fewest,
            gap=a.gap,
            unit_sd=sd,
            units=int(a.units),
            source=f"assumptions {a.path}",
        )
        for s in a.systems
    ]


def plan(engine: Engine | None, request: PlanRequest) -> list[PlanInput]:
    """The conversation design's plan inputs (:meth:`cuegap.designs.Design.plan`); under
    ``request.policy``, or when it is None the policy stored with the analysis."""
    if request.assumptions is not None:
        return _assumed(request.assumptions, request.policy or Policy())
    if engine is None:
        raise PlanUnavailable("give a store or an assumptions file to plan the conversation design")
    return _pilot(engine, request)
