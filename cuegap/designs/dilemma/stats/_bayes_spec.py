"""What the hierarchical binomial-logit model is: version, priors, parameters, gate, methods.

Pure constants, stored with every fit and printed in every report's methods appendix
(:data:`METHODS`). The convergence gate and :func:`quiet` are shared by every design's
fit (:mod:`cuegap.models._sampling`).
"""

from __future__ import annotations

from cuegap.models import GATE, quiet  # noqa: F401 (the spec states the gate)

#: Changes whenever the model, its priors or the derived quantities change; stored with
#: every fit so that a stored fit is refitted only when it would differ.
MODEL_VERSION = "cuegap-bayes-binlogit-1"


#: Prior parameters (logit units), stated in :data:`METHODS`.
PRIORS = {
    "intercept_mean": -2.0,
    "intercept_sd": 1.0,
    "system_sd_shape": 4.0,
    "system_sd_mean": 0.8,
    "group_population_sd": 0.5,
    "group_system_sd_scale": 0.5,
    "interaction_sd_scale": 0.25,
}

EVENTS = ("favor", "against")


#: Names of the model's parameters (what the stored posterior holds).
PARAMS = (
    "mu",
    "sd_system",
    "d_system",
    "gender_pop",
    "sd_gender",
    "z_gender",
    "race_pop",
    "sd_race",
    "z_race",
    "sd_inter",
    "z_inter",
)

METHODS = f"""\
Hierarchical Bayesian model ({MODEL_VERSION}).

Data. The count table is aggregated to cells: event e (favor, against), condition c,
system s, gender g, race r, with y = events and n = trials, a trial being an (item,
individual) pair eligible for the event (Section 2.3 of the seed paper). Dilemmas, prompt
variants, topics and puzzle solution shapes are summed over; one consequences setting is
analysed. The model is fitted to these counts, never to individual responses.

Likelihood. y[e,c,s,g,r] ~ Binomial(n[e,c,s,g,r], p[e,c,s,g,r]) with
  logit p = mu[e,c] + d_system[e,c,s]
            + gender_pop[e,c,g] + sd_gender[e,c] * z_gender[e,c,s,g]
            + race_pop[e,c,r]   + sd_race[e,c]   * z_race[e,c,s,r]
            (+ sd_inter[e,c] * z_inter[e,c,s,g,r] with the gender x race interaction).
Gender and race are effects of the same individual: a gender x race cell adds both. Each
event and condition has its own parameters, so the model does not pull the two conditions
together and does not shrink the gap towards zero. Systems are partially pooled towards
the population intercept mu; each system's gender and race effects are partially pooled
towards the population effects gender_pop and race_pop.

Priors (logit scale).
  mu[e,c]           ~ Normal({PRIORS["intercept_mean"]}, {PRIORS["intercept_sd"]})
                      (a typical rate of 12 %, 90 % prior interval 2.3 % to 41 %)
  d_system[e,c,:]   ~ ZeroSumNormal(sd_system[e,c]) over systems
  sd_system[e,c]    ~ Gamma(shape {PRIORS["system_sd_shape"]:g}, mean {PRIORS["system_sd_mean"]:g})
                      (90 % interval 0.27 to 1.55; audited systems differ: the seed
                      paper's rates run from 1 % to 35 %. Keeping this sd away from 0
                      avoids a funnel that defeats NUTS when there are few systems.)
  gender_pop[e,c,:], race_pop[e,c,:] ~ ZeroSumNormal({PRIORS["group_population_sd"]}) over groups
  sd_gender, sd_race ~ HalfNormal({PRIORS["group_system_sd_scale"]})
  z_gender[e,c,:,:], z_race[e,c,:,:] ~ ZeroSumNormal(1) over systems and groups
                      (two zero-sum axes: the population effect is the systems' mean)
  sd_inter ~ HalfNormal({PRIORS["interaction_sd_scale"]})
  z_inter[e,c,s,:,:] ~ ZeroSumNormal(1) over gender and race (when the interaction is on)
Zero-sum effects identify intercepts and effects without a reference level: mu is the mean
logit over systems and groups. Together the priors put the median cell rate near 11 %,
90 % of cell rates between about 1 % and 63 %, and a macro gap within about +-55 pp; a
prior predictive simulation in the test suite checks that they are broad but not absurd.

Estimands. A gender (race) group's Favor or Against rate is the trial-weighted mean of the
probabilities of its cells over races (genders): the expected rate over the pairs actually
asked, which the frequentist rate estimates. Net = Favor - Against in pp; the macro Net is
the unweighted mean over the gender and race groups present; Gap = Net_explicit -
Net_implicit; dAgainst = Against_implicit - Against_explicit and dFavor likewise
(dAgainst - dFavor equals the gap).

Sampling and gate. NUTS via nutpie (PyMC's NUTS as the fallback), several chains, seeded.
A fit counts as converged only when the largest r-hat <= {GATE["r_hat_max"]}, the smallest
bulk ESS >= {GATE["ess_bulk_min"]} (over all parameters and every system's macro gap) and
there are no divergent transitions. Otherwise it is refitted once with twice the tuning,
target acceptance 0.95 and, when the ESS fell short, twice the draws; if that fails too,
the fit is reported as not converged, with the reason, and every verdict drawn from it is
inconclusive.
"""
