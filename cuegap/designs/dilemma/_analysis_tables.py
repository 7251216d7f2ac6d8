"""The moral-dilemma design's frequentist tables: store counts in, result tables out.

:func:`load_store_data` reads the count tables of :mod:`cuegap.schema` in one snapshot;
:func:`frequentist_tables` computes every table of seed 000 from them with
:mod:`cuegap.models`, without touching the database.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

import pandas as pd
from sqlalchemy.engine import Engine

import cuegap.designs.dilemma.stats as dilemma_stats
from cuegap import models
from cuegap.audit import frame_digest
from cuegap.designs.dilemma._analysis_formats import DESCRIPTION as FORMATS_DESCRIPTION
from cuegap.designs.dilemma._analysis_formats import TABLE as FORMATS_TABLE
from cuegap.designs.dilemma._analysis_formats import add_format_sensitivity
from cuegap.designs.dilemma._analysis_regression import regression_tables
from cuegap.designs.dilemma._analysis_settings import AnalysisSettings, Progress
from cuegap.designs.dilemma.stats import condition_label, condition_mask
from cuegap.schema import (
    abstention_counts,
    annotation_table,
    decision_counts,
    read_snapshot,
    recovery_counts,
    status_counts,
    system_table,
)

#: Result tables of a frequentist analysis: name -> what each row is and its columns.
TABLES: dict[str, str] = {
    "abstention": "Per system x condition x difficulty x consequences x probe: responses, "
    "abstained, counts per parse status, abstention_rate, parse_failure_rate (Table 8).",
    "exclusions": "Per system: worst_condition, abstention_rate (What-if), excluded, reason "
    "(the policy's max_abstention).",
    "recovery": "Puzzle recovery per system x condition x difficulty x consequences: "
    "responses, slots, parsable, correct, incorrect, accuracy, parsability (Tables 5-6).",
    "recovery_by_shape": "Puzzle recovery as above, also split by solution_shape.",
    "status_bias": "Could-be yes-rate per system x condition x difficulty x consequences x "
    "person_status x group: yes, trials, rate (Appendix K).",
    "group_rates": "Favor/Against/Net per system x condition x difficulty x consequences x "
    "group (gender, race, intersection): counts, favor_rate, against_rate, net_pp "
    "(Tables 3-4).",
    "macro": "Macro average over the gender and race groups per system x condition x "
    "difficulty x consequences: favor_rate, against_rate, net_pp, groups.",
    "gap": "Cue Visibility Gap per system x consequences x group: net_direct_pp, "
    "net_puzzled_pp, gap_pp, delta_against_pp, delta_favor_pp.",
    "macro_gap": "The macro Cue Visibility Gap per system x consequences, same columns.",
    "gap_by_difficulty": "Macro gap of the explicit condition vs each puzzle difficulty "
    "(Appendix P): difficulty + the macro_gap columns.",
    "sign_tests": "Direction-of-change sign tests across systems per consequences x group: "
    "adverse, favorable, tie, n, p_value, p_adjusted (Benjamini-Hochberg) (Table 13).",
    "correct_only": "Macro and per-group gap on all parsable items and on items whose puzzle "
    "the system recovered (subset = all_parsable | correct_only) (Section 4.2).",
    "breakdown": "Macro net per breakdown (topic_group, prompt_variant, solution_shape) x "
    "level x system x condition x difficulty x consequences (Appendices N, Q, R).",
    "breakdown_gap": "Macro gap per breakdown level where both conditions have it.",
    "condition_nets": "Macro net per system x consequences for every condition "
    "(direct, puzzled-easy/intermediate/hard, named, formal_named-...) (Tables 33, 42).",
    "formal_named_share": "When FormalNamed was run: per system x consequences, D->P and "
    "D->FN macro gaps, share = D->FN / D->P, share_capped, reason (Appendix S, Table 42).",
    "rankings": "Systems ranked by Direct and by Puzzled macro net (rank 1 = highest net), "
    "rank_shift, rank_gap (Section 4.4).",
    "kendall_tau": "Kendall's tau-b between the Direct and Puzzled rankings: tau, p_value, n.",
    "gap_regression": "When system metadata has the covariates: OLS of the macro gap on "
    "them: term, estimate, se, t, p, ci_low, ci_high (Appendix O). An alignment tier given "
    "as text low / medium / high is coded 1, 2, 3.",
    "gap_regression_correlations": "Pearson r of the macro gap with each covariate.",
    "gap_regression_fit": "covariates, r2, adj_r2, n, k of the gap regression (or the error "
    "that prevented it).",
    "verdicts": "Per system: verdict (flagged / passed / inconclusive) under the policy, "
    "reason, macro gap with interval, p_gap_gt_delta, p_abs_lt_delta, source (bootstrap: "
    "normal approximation with the bootstrap SD; bayesian when a converged fit exists).",
    FORMATS_TABLE: FORMATS_DESCRIPTION,
    "agreement": "When annotator labels were ingested: pairwise Cohen's kappa and Fleiss' "
    "kappa per annotated field: field, pair, kappa_kind, kappa, raw_agreement, n (Table 7).",
}

#: The ± columns the bootstrap adds to group_rates, macro, gap and macro_gap.
BOOTSTRAP_NOTE = (
    "<stat>_sd_pp, <stat>_low_pp, <stat>_high_pp: bootstrap SD and percentile interval "
    "(resampling dilemmas within each system, paired across conditions); n_valid."
)


@dataclass(slots=True)
class StoreData:
    """The count tables every statistic is computed from (see :mod:`cuegap.schema`)."""

    decisions: pd.DataFrame
    status: pd.DataFrame
    abstention: pd.DataFrame
    recovery: pd.DataFrame
    annotations: pd.DataFrame
    systems: pd.DataFrame
    #: :func:`fingerprints` of these tables, once computed (they do not change).
    digests: tuple[str, dict[str, str]] | None = field(default=None, repr=False, compare=False)


def load_store_data(engine: Engine) -> StoreData:
    """Run the aggregation queries of :mod:`cuegap.schema` against one snapshot of a store.

    All queries read in one transaction (:func:`cuegap.schema.read_snapshot`), so an
    ingest committing meanwhile is either wholly in every table or in none: the data
    fingerprint computed from the result describes one state of the store.
    """
    with read_snapshot(engine) as conn:
        return StoreData(
            decisions=decision_counts(conn),
            status=status_counts(conn),
            abstention=abstention_counts(conn),
            recovery=recovery_counts(conn),
            annotations=annotation_table(conn),
            systems=system_table(conn),
        )


def fingerprints(data: StoreData) -> tuple[str, dict[str, str]]:
    """Digest of the data an analysis reads: overall and per system.

    The digests cover the aggregated count tables, not the raw rows: re-ingesting the same
    responses, or the same responses split over several files, leaves them unchanged,
    while any change to a count (a new response, a different answer) changes them.
    """
    if data.digests is not None:
        return data.digests
    per_system: dict[str, str] = {}
    tables = {
        "decisions": data.decisions,
        "status": data.status,
        "abstention": data.abstention,
        "recovery": data.recovery,
    }
    names = sorted(set().union(*(set(t["system"]) for t in tables.values() if not t.empty)))
    for name in names:
        h = hashlib.sha256()
        for key, t in tables.items():
            h.update(key.encode())
            h.update(frame_digest(t[t["system"] == name]).encode())
        meta = data.systems[data.systems["system"] == name]
        h.update(frame_digest(meta).encode())
        per_system[name] = h.hexdigest()
    overall = hashlib.sha256()
    for name, digest in per_system.items():
        overall.update(f"{name}={digest}\n".encode())
    overall.update(frame_digest(data.annotations).encode())
    data.digests = (overall.hexdigest(), per_system)
    return data.digests


def _bias_tables(
    counts: pd.DataFrame, settings: AnalysisSettings, extra: tuple[str, ...] = ()
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Group rates (gender, race, intersection), macro, per-group gap and macro gap."""
    keys = ("system", "condition", "difficulty", "consequences", *extra)
    paper_groups = dilemma_stats.decision_bias(counts, keys=keys)
    rates = pd.concat(
        [paper_groups, dilemma_stats.group_rates(counts, by="intersection", keys=keys)],
        ignore_index=True,
    )
    macro = dilemma_stats.macro_average(paper_groups, keys=keys)
    pair = ("system", "consequences", *extra)
    gap = dilemma_stats.cue_visibility_gap(
        rates, explicit=settings.explicit, implicit=settings.implicit, keys=pair
    )
    macro_gap = dilemma_stats.cue_visibility_gap(
        macro, explicit=settings.explicit, implicit=settings.implicit, keys=pair
    )
    return rates, macro, gap, macro_gap


def frequentist_tables(
    data: StoreData,
    settings: AnalysisSettings | None = None,
    *,
    progress: Progress | None = None,
) -> dict[str, pd.DataFrame]:
    """Every frequentist table of seed 000 from the count tables (no database access).

    Parameters
    ----------
    data : StoreData
        Count tables, from :func:`load_store_data`.
    settings : AnalysisSettings, optional
        Conditions compared, bootstrap and policy; defaults to :class:`AnalysisSettings`.
    progress : callable, optional
        Called with a short description before each step.

    Returns
    -------
    dict of str to DataFrame
        The tables named in :data:`TABLES`.
    """
    s = settings or AnalysisSettings()
    say = progress or (lambda _msg: None)
    out: dict[str, pd.DataFrame] = {}

    say("abstention and exclusions")
    out["abstention"] = dilemma_stats.abstention_rates(data.abstention)
    out["exclusions"] = dilemma_stats.exclusions(
        data.abstention,
        max_abstention=s.policy.max_abstention,
        conditions=(s.explicit, s.implicit),
        consequences=s.consequences,
    )
    excluded = set(out["exclusions"].loc[out["exclusions"]["excluded"], "system"])

    say("puzzle recovery and status bias")
    out["recovery"] = dilemma_stats.recovery_accuracy(data.recovery)
    out["recovery_by_shape"] = dilemma_stats.recovery_accuracy(
        data.recovery,
        keys=("system", "condition", "difficulty", "consequences", "solution_shape"),
    )
    status = data.status[~data.status["system"].isin(excluded)]
    out["status_bias"] = pd.concat(
        [dilemma_stats.status_bias(status, by=by) for by in ("gender", "race", "intersection")],
        ignore_index=True,
    )

    say("decision bias and the Cue Visibility Gap")
    counts = data.decisions[~data.decisions["system"].isin(excluded)]
    rates, macro, gap, macro_gap = _bias_tables(counts, s)
    if s.n_boot >= 2 and not counts.empty:
        say(f"bootstrap ({s.n_boot} replicates over dilemmas)")
        boot = dilemma_stats.bootstrap(
            counts,
            n_boot=s.n_boot,
            seed=s.seed,
            explicit=s.explicit,
            implicit=s.implicit,
            level=s.level,
        )
        rates, macro, gap, macro_gap = (
            boot[k] for k in ("group_rates", "macro", "gap", "macro_gap")
        )
    out["group_rates"] = rates
    out["macro"] = macro
    out["gap"] = gap
    out["macro_gap"] = macro_gap

    say("gap by difficulty")
    by_diff = []
    implicit_diffs = sorted(
        counts.loc[counts["condition"] == s.implicit[0], "difficulty"].dropna().unique()
    )
    for diff in implicit_diffs:
        g = dilemma_stats.cue_visibility_gap(
            macro,
            explicit=s.explicit,
            implicit=(s.implicit[0], diff),
            keys=("system", "consequences"),
        )
        g.insert(1, "difficulty", diff)
        by_diff.append(g)
    out["gap_by_difficulty"] = (
        pd.concat(by_diff, ignore_index=True) if by_diff else macro_gap.iloc[0:0]
    )

    say("sign tests")
    tests = []
    paper_groups = gap[gap["group_type"].isin(("gender", "race"))]
    for cons, sub in paper_groups.groupby("consequences", sort=True):
        net = sub.rename(columns={"net_direct_pp": "net_direct", "net_puzzled_pp": "net_puzzled"})
        net = net.dropna(subset=["net_direct", "net_puzzled"])
        if net.empty:
            continue
        t = dilemma_stats.direction_of_change(net)
        t.insert(0, "consequences", cons)
        tests.append(t)
    out["sign_tests"] = pd.concat(tests, ignore_index=True) if tests else pd.DataFrame()

    say("correct-only restriction")
    implicit_rows = condition_mask(counts, s.implicit)
    correct = counts[~implicit_rows | (counts["recovered"] == True)]  # noqa: E712
    _, _, gap_c, macro_gap_c = _bias_tables(correct, s)
    parts = []
    for subset, g, mg in (("all_parsable", gap, macro_gap), ("correct_only", gap_c, macro_gap_c)):
        mg = mg.assign(group_type="macro", group="macro")
        parts.append(pd.concat([mg, g], ignore_index=True).assign(subset=subset))
    out["correct_only"] = pd.concat(parts, ignore_index=True)

    say("breakdowns")
    out["breakdown"], out["breakdown_gap"] = _breakdowns(counts, s)

    say("conditions")
    nets = macro.copy()
    nets["setting"] = [
        condition_label((c, None if pd.isna(d) else d))
        for c, d in zip(nets["condition"], nets["difficulty"], strict=True)
    ]
    out["condition_nets"] = (
        nets.pivot_table(
            index=["system", "consequences"], columns="setting", values="net_pp", aggfunc="first"
        )
        .reset_index()
        .rename_axis(columns=None)
    )
    formal = (s.implicit[0].replace("puzzled", "formal_named"), s.implicit[1])
    if condition_mask(macro, formal).any():
        out["formal_named_share"] = dilemma_stats.formal_named_share(
            macro, explicit=s.explicit, implicit=s.implicit, formal=formal
        )

    say("rankings and system-level regression")
    headline = macro_gap[macro_gap["consequences"] == s.consequences].dropna(
        subset=["net_direct_pp", "net_puzzled_pp"]
    )
    if len(headline) >= 2:
        ranks = dilemma_stats.rankings(headline)
        out["rankings"] = ranks.ranks
        out["kendall_tau"] = pd.DataFrame(
            [{"tau": ranks.tau, "p_value": ranks.p_value, "n": ranks.n}]
        )
    out.update(regression_tables(headline, data.systems, s.covariates))

    say("verdicts")
    out["verdicts"] = _verdicts(out, s)
    add_format_sensitivity(out, counts, s, say)  # two or more prompt variants only

    if not data.annotations.empty:
        say("annotator agreement")
        ann = data.annotations.assign(
            dilemma=data.annotations["item_bank"] + "/" + data.annotations["dilemma"]
        )
        out["agreement"] = dilemma_stats.annotator_agreement(ann)
    return out


def _parsable(out: dict[str, pd.DataFrame], s: AnalysisSettings) -> pd.DataFrame:
    """Fewest parsable What-if decisions per system over the two compared conditions."""
    rates = out["group_rates"]
    gender = rates[(rates["group_type"] == "gender") & (rates["consequences"] == s.consequences)]
    sides = []
    for cond in (s.explicit, s.implicit):
        side = gender[condition_mask(gender, cond)]
        sides.append((side["favor_trials"] + side["against_trials"]).groupby(side["system"]).sum())
    return pd.concat(sides, axis=1).fillna(0).min(axis=1).rename("decisions").reset_index()


def _recovery(out: dict[str, pd.DataFrame], s: AnalysisSettings) -> pd.DataFrame | None:
    rec = out["recovery"]
    rec = rec[condition_mask(rec, s.implicit) & (rec["consequences"] == s.consequences)]
    return rec[["system", "accuracy"]] if len(rec) else None


def _verdicts(out: dict[str, pd.DataFrame], s: AnalysisSettings) -> pd.DataFrame:
    """Frequentist verdicts (bootstrap normal approximation) for the headline setting."""
    gap = out["macro_gap"]
    return models.verdicts(
        gap[gap["consequences"] == s.consequences],
        s.policy,
        exclusions=out["exclusions"],
        parsable=_parsable(out, s),
        recovery=_recovery(out, s),
        level=s.level,
    )


def _breakdowns(
    counts: pd.DataFrame, settings: AnalysisSettings
) -> tuple[pd.DataFrame, pd.DataFrame]:
    macros, gaps = [], []
    for col in ("topic_group", "prompt_variant", "solution_shape"):
        sub = counts.dropna(subset=[col]) if col != "solution_shape" else counts
        sub = sub.assign(level=sub[col].fillna("none"))
        _, macro, _, macro_gap = _bias_tables(sub, settings, extra=("level",))
        macros.append(macro.assign(breakdown=col))
        if col != "solution_shape":  # the explicit condition has no puzzle shape
            gaps.append(macro_gap.assign(breakdown=col))
    first = ["breakdown", "level"]
    macro = pd.concat(macros, ignore_index=True)
    gap = pd.concat(gaps, ignore_index=True)
    return (
        macro[first + [c for c in macro.columns if c not in first]],
        gap[first + [c for c in gap.columns if c not in first]],
    )


__all__ = [
    "BOOTSTRAP_NOTE",
    "TABLES",
    "StoreData",
    "fingerprints",
    "frequentist_tables",
    "load_store_data",
]
