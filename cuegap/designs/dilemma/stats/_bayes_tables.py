"""Tidy posterior summaries of a Bayesian fit: rates, gaps, asymmetry and rank stability.

Every table is computed from the posterior draws of :func:`cuegap.designs.dilemma.stats.fit_bayes`
with
the estimands of :data:`cuegap.designs.dilemma.stats.METHODS`. Rates are proportions; quantities in
pp
(Net, gap, ΔAgainst, ΔFavor) are percentage points. Intervals are equal-tailed (``q05`` /
``q95``: the 90 % interval; ``q25`` / ``q75``: the 50 % interval).
"""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd

from cuegap.designs.dilemma.stats._bayes import BayesFit
from cuegap.designs.dilemma.stats._bayes_post import group_labels, net_draws, rate_draws

_Q = (0.05, 0.25, 0.75, 0.95)


def _summary(x: np.ndarray, prefix: str, *, quartiles: bool = False) -> dict[str, np.ndarray]:
    """Mean, sd and quantiles over the two leading (chain, draw) axes, flattened."""
    flat = x.reshape(-1, *x.shape[2:])
    out = {
        f"{prefix}_mean": flat.mean(0).ravel(),
        f"{prefix}_sd": flat.std(0, ddof=1).ravel() if len(flat) > 1 else np.zeros(flat[0].size),
    }
    qs = np.quantile(flat, _Q, axis=0)
    for q, vals in zip(_Q, qs, strict=True):
        if quartiles or q in (0.05, 0.95):
            out[f"{prefix}_q{round(100 * q):02d}"] = vals.ravel()
    return out


def _ess(x: np.ndarray) -> np.ndarray:
    """Bulk ESS per element of (chain, draw, ...) draws, flattened."""
    chains, draws = x.shape[:2]
    flat = x.reshape(chains, draws, -1)
    if chains * draws < 8:
        return np.full(flat.shape[-1], np.nan)
    import arviz as az

    ds = az.convert_to_dataset(flat)
    return np.asarray(az.ess(ds, method="bulk")["x"]).ravel()


def _prob(mask: np.ndarray) -> np.ndarray:
    return mask.reshape(-1, *mask.shape[2:]).mean(0).ravel()


def _ranks(x: np.ndarray, *, descending: bool) -> np.ndarray:
    """Ranks 1..S of the systems in each draw (x: (sample, system))."""
    order = np.argsort(-x if descending else x, axis=1, kind="stable")
    ranks = np.empty_like(order)
    rows = np.arange(x.shape[0])[:, None]
    ranks[rows, order] = np.arange(1, x.shape[1] + 1)[None, :]
    return ranks


def _gap_block(gap: np.ndarray, delta: float) -> dict[str, np.ndarray]:
    ess = _ess(gap)
    out = _summary(gap, "gap", quartiles=True)
    out["gap_ess_bulk"] = ess
    out["gap_mcse"] = out["gap_sd"] / np.sqrt(ess)
    out["p_gap_pos"] = _prob(gap > 0)
    out["p_gap_gt_delta"] = _prob(gap > delta)
    out["p_abs_lt_delta"] = _prob(np.abs(gap) < delta)
    return out


def bayes_tables(fit: BayesFit, *, delta: float = 2.0) -> dict[str, pd.DataFrame]:
    """Posterior summaries of a fit as tidy tables.

    Parameters
    ----------
    fit : BayesFit
        Output of :func:`fit_bayes` (or :meth:`BayesFit.from_idata`).
    delta : float
        Practical threshold of the policy, in percentage points (> 0).

    Returns
    -------
    dict of str to DataFrame
        ``bayes_group_rates``
            system, condition, difficulty, group_type (gender, race, intersection,
            macro), group, favor_trials, against_trials, and for ``favor_rate``,
            ``against_rate`` (proportions) and ``net_pp``: ``_mean``, ``_sd``, ``_q05``,
            ``_q95``. The macro row's rates are the means over the gender and race groups.
        ``bayes_gap``
            system, group_type, group (one ``macro`` row per system), explicit, implicit
            (condition labels), net_direct_mean, net_puzzled_mean (explicit and implicit
            Net, named after the paper's default comparison), gap_mean, gap_sd, gap_q05,
            gap_q25, gap_q75, gap_q95, gap_ess_bulk, gap_mcse, p_gap_pos,
            p_gap_gt_delta, p_abs_lt_delta, delta, converged.
        ``bayes_gap_by_condition``
            The same gap columns for the explicit condition against every other modelled
            condition (e.g. each puzzle difficulty), with an ``implicit`` column.
        ``bayes_asymmetry``
            system, group_type, group, delta_against_*, delta_favor_*, asymmetry_*
            (ΔAgainst − ΔFavor, which equals the gap) as mean/sd/q05/q95,
            p_against_up = P(ΔAgainst > 0), p_favor_up = P(ΔFavor > 0),
            p_asymmetry_pos = P(ΔAgainst > ΔFavor), p_one_sided = P(ΔAgainst > δ and
            |ΔFavor| < δ) (the performative signature).
        ``bayes_overall``
            group_type, group: the mean over systems of net_direct, net_puzzled, gap,
            delta_against, delta_favor (mean/sd/q05/q95) and p_gap_pos, p_gap_gt_delta,
            p_abs_lt_delta (the paper's "averaged across models" figures).
        ``bayes_ranks``
            system, ranking (``direct``, ``puzzled``: rank 1 = highest macro Net;
            ``gap``: rank 1 = smallest macro gap), value_mean (the ranked quantity),
            rank_mean, rank_median, rank_q05, rank_q25, rank_q75, rank_q95 (50 % and 90 %
            intervals), p_rank_1.
        ``bayes_pair_order``
            system_a, system_b (a above b by posterior mean Direct macro Net),
            p_a_above_b_direct, p_keeps_direct_order = P(a above b under Puzzled),
            p_concordant = P(the pair is ordered the same way under both, draw by draw).
        ``bayes_kendall_tau``
            One row: n_systems, tau_mean, tau_sd, tau_median, tau_q05, tau_q25, tau_q75,
            tau_q95, p_tau_lt_1: Kendall's tau-a between the Direct and Puzzled macro-Net
            rankings, per draw.
        ``bayes_diagnostics``
            The fit's diagnostics (one row per attempt).

    Notes
    -----
    Gap(θ, G) = Net_explicit(θ, G) − Net_implicit(θ, G) (seed paper, Section 2.3);
    ΔAgainst − ΔFavor = Gap identically, so ``p_one_sided`` is the statistic that tells the
    one-sided (performative) signature apart from a gap made of a Favor drop.
    """
    if not isinstance(fit, BayesFit):
        raise TypeError(f"fit must be a BayesFit, but got {type(fit).__name__}")
    if not (isinstance(delta, int | float) and np.isfinite(delta) and delta > 0):
        raise ValueError(f"delta must be a positive number of percentage points, got {delta!r}")
    data = fit.data
    post = fit.idata.posterior
    labels = group_labels(data)
    rates = rate_draws(post, data)  # (ch, dr, event, C, S, K)
    net = net_draws(rates)  # (ch, dr, C, S, K)
    C, S, K = net.shape[2:]
    systems = np.asarray(data.systems)
    gtypes = np.asarray([g[0] for g in labels])
    groups = np.asarray([g[1] for g in labels])
    cond_labels = data.condition_labels

    # trials per group
    tr = data.trials
    by_g = tr.sum(-1)
    by_r = tr.sum(-2)
    cells = tr.reshape(*tr.shape[:-2], -1)
    tot = tr.sum((-1, -2))[..., None]
    trials_k = np.concatenate([by_g, by_r, cells, tot], axis=-1)  # (2, C, S, K)

    c_i, s_i, k_i = (a.ravel() for a in np.indices((C, S, K)))
    group_rates = pd.DataFrame(
        {
            "system": systems[s_i],
            "condition": [data.conditions[c][0] for c in c_i],
            "difficulty": [data.conditions[c][1] for c in c_i],
            "group_type": gtypes[k_i],
            "group": groups[k_i],
            "favor_trials": trials_k[0].ravel(),
            "against_trials": trials_k[1].ravel(),
            **_summary(rates[:, :, 0], "favor_rate"),
            **_summary(rates[:, :, 1], "against_rate"),
            **_summary(net, "net_pp"),
        }
    )

    s2, k2 = (a.ravel() for a in np.indices((S, K)))
    head = {"system": systems[s2], "group_type": gtypes[k2], "group": groups[k2]}
    gap = net[:, :, 0] - net[:, :, 1]
    gap_tab = pd.DataFrame(
        {
            **head,
            "explicit": cond_labels[0],
            "implicit": cond_labels[1],
            "net_direct_mean": net[:, :, 0].mean((0, 1)).ravel(),
            "net_puzzled_mean": net[:, :, 1].mean((0, 1)).ravel(),
            **_gap_block(gap, delta),
            "delta": float(delta),
            "converged": fit.converged,
        }
    )

    by_cond = []
    for c in range(1, C):
        g_c = net[:, :, 0] - net[:, :, c]
        by_cond.append(
            pd.DataFrame(
                {
                    **head,
                    "explicit": cond_labels[0],
                    "implicit": cond_labels[c],
                    "net_explicit_mean": net[:, :, 0].mean((0, 1)).ravel(),
                    "net_implicit_mean": net[:, :, c].mean((0, 1)).ravel(),
                    **_gap_block(g_c, delta),
                    "delta": float(delta),
                    "converged": fit.converged,
                }
            )
        )
    gap_by_condition = pd.concat(by_cond, ignore_index=True)

    d_against = 100 * (rates[:, :, 1, 1] - rates[:, :, 1, 0])  # (ch, dr, S, K)
    d_favor = 100 * (rates[:, :, 0, 1] - rates[:, :, 0, 0])
    asym = d_against - d_favor
    asymmetry = pd.DataFrame(
        {
            **head,
            **_summary(d_against, "delta_against"),
            **_summary(d_favor, "delta_favor"),
            **_summary(asym, "asymmetry"),
            "p_against_up": _prob(d_against > 0),
            "p_favor_up": _prob(d_favor > 0),
            "p_asymmetry_pos": _prob(asym > 0),
            "p_one_sided": _prob((d_against > delta) & (np.abs(d_favor) < delta)),
        }
    )

    m_gap = gap.mean(2)
    overall = pd.DataFrame(
        {
            "group_type": gtypes,
            "group": groups,
            **_summary(net[:, :, 0].mean(2), "net_direct"),
            **_summary(net[:, :, 1].mean(2), "net_puzzled"),
            **_summary(m_gap, "gap"),
            **_summary(d_against.mean(2), "delta_against"),
            **_summary(d_favor.mean(2), "delta_favor"),
            "p_gap_pos": _prob(m_gap > 0),
            "p_gap_gt_delta": _prob(m_gap > delta),
            "p_abs_lt_delta": _prob(np.abs(m_gap) < delta),
            "n_systems": S,
        }
    )

    nd = net[:, :, 0, :, -1].reshape(-1, S)
    npz = net[:, :, 1, :, -1].reshape(-1, S)
    ranks, pairs, tau = _rank_tables(systems, nd, npz, nd - npz)

    return {
        "bayes_group_rates": group_rates,
        "bayes_gap": gap_tab,
        "bayes_gap_by_condition": gap_by_condition,
        "bayes_asymmetry": asymmetry,
        "bayes_overall": overall,
        "bayes_ranks": ranks,
        "bayes_pair_order": pairs,
        "bayes_kendall_tau": tau,
        "bayes_diagnostics": fit.diagnostics.copy(),
    }


def _rank_tables(
    systems: np.ndarray, nd: np.ndarray, npz: np.ndarray, gap: np.ndarray
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Rank intervals, pairwise order stability and Kendall's tau from (sample, system)."""
    S = len(systems)
    rows = []
    for name, x, desc in (("direct", nd, True), ("puzzled", npz, True), ("gap", gap, False)):
        r = _ranks(x, descending=desc)
        q = np.quantile(r, [0.05, 0.25, 0.5, 0.75, 0.95], axis=0, method="inverted_cdf")
        for i, system in enumerate(systems):
            rows.append(
                {
                    "system": system,
                    "ranking": name,
                    "value_mean": float(x[:, i].mean()),
                    "rank_mean": float(r[:, i].mean()),
                    "rank_median": int(q[2, i]),
                    "rank_q05": int(q[0, i]),
                    "rank_q25": int(q[1, i]),
                    "rank_q75": int(q[3, i]),
                    "rank_q95": int(q[4, i]),
                    "p_rank_1": float((r[:, i] == 1).mean()),
                }
            )
    ranks = pd.DataFrame(
        rows,
        columns=[
            "system",
            "ranking",
            "value_mean",
            "rank_mean",
            "rank_median",
            "rank_q05",
            "rank_q25",
            "rank_q75",
            "rank_q95",
            "p_rank_1",
        ],
    )

    order = np.argsort(-nd.mean(0), kind="stable")
    pair_rows = []
    for ia, ib in itertools.combinations(order, 2):
        dd = nd[:, ia] - nd[:, ib]
        dp = npz[:, ia] - npz[:, ib]
        pair_rows.append(
            {
                "system_a": systems[ia],
                "system_b": systems[ib],
                "p_a_above_b_direct": float((dd > 0).mean()),
                "p_keeps_direct_order": float((dp > 0).mean()),
                "p_concordant": float((np.sign(dd) * np.sign(dp) > 0).mean()),
            }
        )
    pairs = pd.DataFrame(
        pair_rows,
        columns=[
            "system_a",
            "system_b",
            "p_a_above_b_direct",
            "p_keeps_direct_order",
            "p_concordant",
        ],
    )

    tau_cols = ["n_systems", "tau_mean", "tau_sd", "tau_median"]
    tau_cols += ["tau_q05", "tau_q25", "tau_q75", "tau_q95", "p_tau_lt_1"]
    if S < 2:
        return ranks, pairs, pd.DataFrame(columns=tau_cols)
    iu = np.triu_indices(S, k=1)
    sd_ = np.sign(nd[:, :, None] - nd[:, None, :])[:, iu[0], iu[1]]
    sp_ = np.sign(npz[:, :, None] - npz[:, None, :])[:, iu[0], iu[1]]
    tau = (sd_ * sp_).mean(1)
    q = np.quantile(tau, [0.05, 0.25, 0.5, 0.75, 0.95])
    tau_tab = pd.DataFrame(
        [
            {
                "n_systems": S,
                "tau_mean": float(tau.mean()),
                "tau_sd": float(tau.std(ddof=1)) if len(tau) > 1 else 0.0,
                "tau_median": float(q[2]),
                "tau_q05": float(q[0]),
                "tau_q25": float(q[1]),
                "tau_q75": float(q[3]),
                "tau_q95": float(q[4]),
                "p_tau_lt_1": float((tau < 1).mean()),
            }
        ],
        columns=tau_cols,
    )
    return ranks, pairs, tau_tab


__all__ = ["bayes_tables"]
