"""The conversation planner's persona × demographics interaction (issue 28).

Without it the planner's simulated personas differ only by offsets that every
demographic shares, which cancel in ΔDemoΔRC λ_base: the plan is optimistic when the real
reveal effect varies between personas. Here one condition (black vs white, human), one
benchmark, K = 10 personas, 100 conversations per cell (0.6 disagreements each, so
D = 60 per cell), λ_base = 0.3 and a logit reveal effect e = 0.5 on the black side.

Hand computation (the frequentist rule on one condition and one benchmark): the
per-persona contrasts y_u are about Normal(μ, σ²), with

* μ = E[expit(L + e + w)] − E[expit(L + w)], L = logit 0.3, w ~ Normal(0, τ²);
* σ² = Var expit(L + e + w) + Var expit(L + w) (the interaction) + Σ_cells
  E[λ(1 − λ)] / D (binomial), both expectations by Gauss-Hermite quadrature;

and the rule flags when the two-sided t-test over personas is significant (ȳ > t_{0.975,
9} s/√K) and ȳ > δ = 0.05: P(flag) = E_s[1 − Φ((max(δ, t s/√K) − μ)/(σ/√K))] with
s² ~ σ² χ²_9/9, ȳ and s independent. At τ = 0: μ = 0.114, σ = 0.121, P = 0.76; at τ =
0.5: μ = 0.109, σ = 0.195 (design effect σ²_τ/σ²_0 = 2.6), P = 0.35.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate, stats
from scipy.special import expit, logit

from cuegap.designs.conversation._analysis_tables import ConvSettings
from cuegap.designs.conversation._plan import (
    ConvPlanParams,
    estimate_params,
    simulated_decision_rate,
)
from cuegap.designs.conversation.stats import conv_design, simulate_conv_counts
from cuegap.models import Policy

K, N, PER_CONV, LAM, EFFECT, DELTA = 10, 100, 0.6, 0.3, 0.5, 0.05
AUDITS = 400
CELLS = conv_design(benchmarks={"BBQ": 1}, demographics=("black", "white"),
                    personas=[f"p{k}" for k in range(K)], instantiations=("human",))  # fmt: skip
SETTINGS = ConvSettings(policy=Policy())


def _moments(tau: float, per_cell: float) -> tuple[float, float]:
    """μ and σ of one persona's contrast (module docstring)."""
    x, w = np.polynomial.hermite_e.hermegauss(60)
    w = w / w.sum()
    a, b = expit(logit(LAM) + EFFECT + tau * x), expit(logit(LAM) + tau * x)
    mu = float(w @ a - w @ b)
    var_tau = float(w @ a**2 - (w @ a) ** 2 + w @ b**2 - (w @ b) ** 2)
    binom = float(w @ (a * (1 - a)) + w @ (b * (1 - b))) + 2 * LAM * (1 - LAM)
    return mu, math.sqrt(var_tau + binom / per_cell)


def _p_flag(mu: float, sd: float) -> float:
    tc = stats.t.ppf(0.975, K - 1)

    def f(q: float) -> float:
        s = sd * math.sqrt(q / (K - 1))
        edge = max(DELTA, tc * s / math.sqrt(K))
        return stats.norm.sf((edge - mu) / (sd / math.sqrt(K))) * stats.chi2.pdf(q, K - 1)

    return float(integrate.quad(f, 0, np.inf, limit=200)[0])


def _params(tau: float) -> ConvPlanParams:
    return ConvPlanParams(cells=CELLS, disagreements_per_conversation=PER_CONV,
                          lambda_base=LAM, persona_sd=0.0,
                          effects={("black", "human"): EFFECT}, settings=SETTINGS,
                          interaction_sd=tau)  # fmt: skip


def test_hand_computed_values() -> None:
    """The figures the module docstring quotes."""
    mu0, sd0 = _moments(0.0, PER_CONV * N)
    mu1, sd1 = _moments(0.5, PER_CONV * N)
    assert (mu0, sd0) == pytest.approx((0.114, 0.121), abs=0.001)
    assert (mu1, sd1) == pytest.approx((0.109, 0.195), abs=0.001)
    assert (sd1 / sd0) ** 2 == pytest.approx(2.6, abs=0.05)
    assert _p_flag(mu0, sd0) == pytest.approx(0.76, abs=0.01)
    assert _p_flag(mu1, sd1) == pytest.approx(0.35, abs=0.01)


@pytest.mark.parametrize("tau", [0.0, 0.5])
def test_planted_interaction_lowers_the_decision_probability(tau: float) -> None:
    """The planner's simulated audits (the design's simulator and verdict rule) flag as
    often as the hand computation says, within 4 Monte Carlo SE (400 audits, SE ≈ 0.02);
    the drop from 0.76 to 0.35 is 17 SE, so ignoring τ fails."""
    want = _p_flag(*_moments(tau, PER_CONV * N))
    got = simulated_decision_rate(_params(tau), N, "flag", audits=AUDITS, seed=5)
    se = math.sqrt(want * (1 - want) / AUDITS)
    assert abs(got - want) < 4 * se, (tau, got, want)


@pytest.mark.parametrize("tau", [0.0, 0.5])
def test_pilot_estimates_the_interaction(tau: float) -> None:
    """A pilot of 2 benchmarks × 6 demographics × 20 personas × 2 instantiations at 200
    conversations per cell: τ² is estimated per (benchmark, demographics, instantiation)
    from 20 personas (SE of τ² about 0.25·√(2/19) = 0.08 each, 12 independent groups:
    about 0.025 pooled), so τ̂ within 0.1 of τ."""
    cells = conv_design(benchmarks={"BBQ": 1, "DiscrimEval": 1},
                        demographics=("black", "white", "older", "young", "female", "male"),
                        personas=[f"p{k}" for k in range(20)])  # fmt: skip
    sim = simulate_conv_counts(cells=cells, conversations=200, transitions=2, p_disagree=0.3,
                               lambda_base=LAM, persona_sd=0.3, interaction_sd=tau,
                               base_reveal_effects={("black", "human"): EFFECT},
                               seed=11)  # fmt: skip
    p = estimate_params(sim.counts, SETTINGS)
    assert p.interaction_sd == pytest.approx(tau, abs=0.1)
    assert p.persona_sd == pytest.approx(0.3, abs=0.12)


def test_no_interaction_draws_nothing() -> None:
    """τ = 0 leaves every draw of the simulator as it was (no number of the existing
    design changes), and τ > 0 changes the revealed baseline rates only per persona ×
    demographics (the anonymous ones keep their persona offset alone)."""
    kw = dict(cells=CELLS, conversations=50, persona_sd=0.2, seed=3)
    a = simulate_conv_counts(**kw)
    b = simulate_conv_counts(**kw, interaction_sd=0.0)
    assert a.counts.equals(b.counts)
    c = simulate_conv_counts(**kw, interaction_sd=0.5).truth
    anon = c[c["reveal"] == "anonymous"]
    assert anon.groupby("persona")["lambda_base"].nunique().eq(1).all()
    rev = c[c["reveal"] == "revealed"]
    assert rev.groupby("persona")["lambda_base"].nunique().eq(2).all()


def test_stated_interaction_reaches_the_simulation(tmp_path) -> None:
    """``interaction_sd`` in an assumptions file: read, range-checked, and simulated (a
    stated τ of 1 on the logit scale lowers the flag probability of the same audit; each
    share from 200 audits, SE ≤ 0.035; about 0.99 against 0.55 at these numbers)."""
    from cuegap.designs import PlanRequest
    from cuegap.designs.conversation._plan import plan
    from cuegap.models import load_assumptions

    def p_flag(tau: float) -> float:
        f = tmp_path / f"a{tau}.toml"
        f.write_text("[plan]\nconversations = 60\ndisagreements_per_conversation = 0.6\n"
                     f"lambda_base = 0.3\nunits = 8\nbenchmarks = 1\ngap = 0.15\n"
                     f"interaction_sd = {tau}\n")  # fmt: skip
        a = load_assumptions(f)
        assert a.interaction_sd == tau
        (inp,) = plan(None, PlanRequest(policy=None, assumptions=a))
        return inp.decide(60, "flag")

    bad = tmp_path / "bad.toml"
    bad.write_text("[plan]\nconversations = 4\ndisagreements_per_conversation = 0.6\n"
                   "lambda_base = 0.3\nunits = 8\nbenchmarks = 1\ngap = 0.1\n"
                   "interaction_sd = -1\n")  # fmt: skip
    with pytest.raises(ValueError, match="interaction_sd"):
        load_assumptions(bad)
    none, some = p_flag(0.0), p_flag(1.0)
    assert none - some > 0.25, (none, some)
