"""The conversation planner's minimum detectable gap is found by simulated audits, and
an independent simulation at that gap flags with the target probability (issue 28).

One pair (black vs white, human), 2 benchmarks, 6 personas, 60 conversations per cell
(0.6 disagreements each), λ_base 0.3, persona SD 0.2, min_parsable 100. The planner
bisects on the gap (its own 400 audits per gap, one seed); fresh audits (800, another
seed) drawn by the design's simulator and decided by ``conv_audit_tables`` at that gap
flag 80 % of the time within Monte Carlo error (planner SE 0.02, check SE 0.014, the
bisection's δ/20 about 0.01 more: 0.1 allowed). The analytic approximation δ + (t_{0.95,
5} + z_0.8)·sd/√6 is not the rule (flagged only if significant *and* beyond δ on *both*
benchmarks): fresh audits at its gap flag about 0.64, well under 0.8.
"""

from __future__ import annotations

import math

import pandas as pd
from scipy.stats import norm, t

from cuegap.designs.conversation._analysis_tables import ConvSettings, conv_audit_tables
from cuegap.designs.conversation._plan import ConvPlanParams, plan_input
from cuegap.designs.conversation._plan_mde import gap_effect, mde_condition, mde_search
from cuegap.designs.conversation.stats import conv_design, simulate_conv_counts
from cuegap.models import Policy

N, LAM, PERSONA_SD = 60, 0.3, 0.2
CELLS = conv_design(benchmarks={"BBQ": 1, "DiscrimEval": 1}, demographics=("black", "white"),
                    personas=[f"p{k}" for k in range(6)], instantiations=("human",))  # fmt: skip
SETTINGS = ConvSettings(policy=Policy(min_parsable=100))
#: One persona's contrast: four λ's of about 0.21/36 variance each (36 disagreements).
UNIT_SD = math.sqrt(4 * LAM * (1 - LAM) / (0.6 * N))


def _flagged(gap: float, audits: int, seed: int) -> float:
    many = pd.concat([CELLS.drop(columns="system").assign(system=f"s{a}")
                      for a in range(audits)])  # fmt: skip
    sim = simulate_conv_counts(cells=many, conversations=N, transitions=2, p_disagree=0.3,
                               lambda_base=LAM, persona_sd=PERSONA_SD,
                               base_reveal_effects={("black", "human"): gap_effect(LAM, gap)},
                               seed=seed)  # fmt: skip
    v = conv_audit_tables(sim.counts, SETTINGS)["verdicts"]
    return float((v["verdict"] == "flagged").mean())


def test_simulated_mde_is_flagged_with_the_target_probability() -> None:
    params = ConvPlanParams(cells=CELLS, disagreements_per_conversation=0.6, lambda_base=LAM,
                            persona_sd=PERSONA_SD, effects={}, settings=SETTINGS)  # fmt: skip
    assert mde_condition(CELLS) == ("black", "human")
    inp = plan_input(params, system="a", conversations=N, fewest=0.6 * N * 6, gap=0.1,
                     unit_sd=UNIT_SD, units=6, source="planted", audits=400, seed=3)  # fmt: skip
    assert inp.mde_at is not None
    mde = inp.mde_at(0.8)
    assert 0.05 < mde < 0.6
    assert abs(_flagged(mde, 800, 99) - 0.8) < 0.1, mde
    approx = 0.05 + (t.ppf(0.95, 5) + norm.ppf(0.8)) * UNIT_SD / math.sqrt(6)
    assert _flagged(approx, 800, 98) < 0.72, approx


def test_mde_search_on_a_known_curve() -> None:
    """On a normal power curve P(g) = Φ((g − 0.1)/0.05) the 80 % gap is 0.1 + 0.05 z_0.8
    = 0.1421; the search returns it within its tolerance, from below or above, and NaN
    when the largest plantable gap does not reach the target."""
    curve = lambda g: float(norm.cdf((g - 0.1) / 0.05))  # noqa: E731
    want = 0.1 + 0.05 * norm.ppf(0.8)
    for start in (0.02, 0.5):
        got = mde_search(curve, 0.8, start=start, top=0.7, tol=0.001)
        assert want <= got <= want + 0.001, (start, got)
    assert math.isnan(mde_search(curve, 0.8, start=0.05, top=0.12, tol=0.001))
