"""Orchestration: store -> count tables -> statistics -> stored, exportable result tables.

The CLI and notebook users call the same functions::

    from cuegap.audit import analyze, load_table
    from cuegap.schema import make_engine

    engine = make_engine("sqlite:///cuegap.db")
    result = analyze(engine)                 # computes and stores every table
    gap = load_table(engine, "macro_gap")    # tidy DataFrame, documented in TABLES

Everything statistical lives in :mod:`cuegap.models`; everything SQL in
:mod:`cuegap.schema`. This module only wires them together and stores the results.
"""

from __future__ import annotations

import hashlib
import io
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from sqlalchemy import select
from sqlalchemy.engine import Engine

from cuegap import models
from cuegap.models import Policy, condition_label, condition_mask
from cuegap.schema import (
    Analysis,
    AnalysisArtifact,
    AnalysisTable,
    abstention_counts,
    annotation_table,
    decision_counts,
    ledger,
    read_snapshot,
    recovery_counts,
    status_counts,
    system_table,
)

Condition = tuple[str, str | None]
Progress = Callable[[str], None]

FREQUENTIST_VERSION = "1"

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
    "them: term, estimate, se, t, p, ci_low, ci_high (Appendix O).",
    "gap_regression_correlations": "Pearson r of the macro gap with each covariate.",
    "gap_regression_fit": "covariates, r2, adj_r2, n, k of the gap regression (or the error "
    "that prevented it).",
    "verdicts": "Per system: verdict (flagged / passed / inconclusive) under the policy, "
    "reason, macro gap with interval, p_gap_gt_delta, p_abs_lt_delta, source (bootstrap: "
    "normal approximation with the bootstrap SD; bayesian when a converged fit exists).",
    "agreement": "When annotator labels were ingested: pairwise Cohen's kappa and Fleiss' "
    "kappa per annotated field: field, pair, kappa_kind, kappa, raw_agreement, n (Table 7).",
}

#: The ± columns the bootstrap adds to group_rates, macro, gap and macro_gap.
BOOTSTRAP_NOTE = (
    "<stat>_sd_pp, <stat>_low_pp, <stat>_high_pp: bootstrap SD and percentile interval "
    "(resampling dilemmas within each system, paired across conditions); n_valid."
)


@dataclass(frozen=True, slots=True)
class AnalysisSettings:
    """What an analysis compares and how.

    Attributes
    ----------
    explicit, implicit : (condition, difficulty)
        The two cue conditions of the Cue Visibility Gap (default Direct vs Puzzled-hard).
    consequences : bool
        The consequences setting of the headline tables (the paper's main tables use True);
        tables keyed by ``consequences`` cover both.
    n_boot : int
        Bootstrap replicates for the ± values (0 skips the bootstrap).
    seed : int
        Seed of the bootstrap.
    level : float
        Coverage of the reported intervals.
    policy : Policy
        Verdict and data-quality thresholds (``max_abstention`` excludes systems).
    covariates : tuple of str
        System metadata keys regressed against the gap (Appendix O), when present.
    chosen : frozenset of str
        Which of ``explicit``, ``implicit`` and ``consequences`` the user chose. The others,
        left at their defaults, may fall back to what the store has when it has no
        decisions under the default (see :func:`resolve_conditions`). Not stored: the
        settings actually used are.
    """

    explicit: Condition = ("direct", None)
    implicit: Condition = ("puzzled", "hard")
    consequences: bool = True
    n_boot: int = 1000
    seed: int = 2026
    level: float = 0.9
    policy: Policy = field(default_factory=Policy)
    covariates: tuple[str, ...] = ("capability", "alignment")
    chosen: frozenset[str] = frozenset()

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready settings, stored with the analysis."""
        return {
            "explicit": list(self.explicit),
            "implicit": list(self.implicit),
            "consequences": self.consequences,
            "n_boot": self.n_boot,
            "seed": self.seed,
            "level": self.level,
            "policy": self.policy.to_dict(),
            "covariates": list(self.covariates),
            "frequentist_version": FREQUENTIST_VERSION,
        }


@dataclass(slots=True)
class StoreData:
    """The count tables every statistic is computed from (see :mod:`cuegap.schema`)."""

    decisions: pd.DataFrame
    status: pd.DataFrame
    abstention: pd.DataFrame
    recovery: pd.DataFrame
    annotations: pd.DataFrame
    systems: pd.DataFrame


DIFFICULTIES = ("easy", "intermediate", "hard")
#: Used when the store lacks the default Direct / Puzzled-hard pair (companion designs).
ALTERNATIVE_PAIR: tuple[Condition, Condition] = (("explicit", None), ("implicit", None))


def parse_condition(text: str) -> Condition:
    """A condition as written on the command line: ``puzzled-hard`` -> ("puzzled", "hard").

    A trailing ``-easy``, ``-intermediate`` or ``-hard`` is the difficulty; anything else
    is the condition's name (``named``, ``formal_named``, ``implicit``).
    """
    text = text.strip()
    name, _, difficulty = text.rpartition("-")
    if name and difficulty in DIFFICULTIES:
        return (name, difficulty)
    return (text, None)


def settings_from_dict(stored: Mapping[str, Any]) -> AnalysisSettings:
    """Rebuild :class:`AnalysisSettings` from the JSON stored with an analysis."""
    base = AnalysisSettings()
    pol = stored.get("policy") or {}
    return AnalysisSettings(
        explicit=tuple(stored.get("explicit", base.explicit)),  # type: ignore[arg-type]
        implicit=tuple(stored.get("implicit", base.implicit)),  # type: ignore[arg-type]
        consequences=bool(stored.get("consequences", base.consequences)),
        n_boot=int(stored.get("n_boot", base.n_boot)),
        seed=int(stored.get("seed", base.seed)),
        level=float(stored.get("level", base.level)),
        policy=Policy(**{k: v for k, v in pol.items() if k in Policy.__dataclass_fields__}),
        covariates=tuple(stored.get("covariates", base.covariates)),
    )


def resolve_conditions(decisions: pd.DataFrame, settings: AnalysisSettings) -> AnalysisSettings:
    """Check that the two compared conditions have What-if decisions in the data.

    A compared condition that is not in ``settings.chosen`` and has no decisions under its
    default (Direct, Puzzled-hard) is replaced by the companion designs' ``explicit`` or
    ``implicit`` when the data has that; likewise the headline ``consequences`` setting
    (default: with consequences) by the other one when only that has decisions under both
    conditions.

    Raises
    ------
    ValueError
        When a compared condition has no decisions; the message lists those that have.
    """
    present = {
        (str(c), None if pd.isna(d) else str(d))
        for c, d in decisions[["condition", "difficulty"]].drop_duplicates().itertuples(index=False)
    }
    pair = [settings.explicit, settings.implicit]
    default = (AnalysisSettings().explicit, AnalysisSettings().implicit)
    for i, role in enumerate(("explicit", "implicit")):
        if (
            role not in settings.chosen
            and pair[i] == default[i]
            and pair[i] not in present
            and ALTERNATIVE_PAIR[i] in present
        ):
            pair[i] = ALTERNATIVE_PAIR[i]
    for role, cond in (("explicit", pair[0]), ("implicit", pair[1])):
        if cond not in present:
            have = ", ".join(sorted(condition_label(c) for c in present)) or "none"
            raise ValueError(
                f"the {role} condition {condition_label(cond)!r} has no What-if decisions in "
                f"the store (conditions with decisions: {have}); choose with --explicit and "
                "--implicit"
            )
    # the headline consequences setting: both compared conditions need decisions under it
    cons = [
        {bool(v) for v in decisions.loc[condition_mask(decisions, c), "consequences"]} for c in pair
    ]
    both = cons[0] & cons[1]
    consequences = settings.consequences
    if consequences not in both:
        default = AnalysisSettings().consequences
        if "consequences" not in settings.chosen and (not default) in both:
            consequences = not default
        else:
            shown = "with" if consequences else "without"
            have = " and ".join(("with" if v else "without") for v in sorted(both, reverse=True))
            raise ValueError(
                f"no What-if decisions {shown} consequences under both "
                f"{condition_label(pair[0])!r} and {condition_label(pair[1])!r} (the store has "
                f"them {have or 'under neither setting for both'}); choose with "
                "--consequences / --no-consequences"
            )
    return replace(settings, explicit=pair[0], implicit=pair[1], consequences=consequences)


@dataclass(slots=True)
class AnalysisResult:
    """A stored analysis and its tables."""

    id: int
    kind: str
    status: str
    data_fingerprint: str
    created_at: datetime
    tables: dict[str, pd.DataFrame]
    reused: bool = False
    settings: dict[str, Any] | None = None  # as stored, conditions resolved


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


def _frame_digest(df: pd.DataFrame) -> str:
    """Order-independent digest of a table's content (rows hashed, sorted, hashed again)."""
    cols = sorted(df.columns)
    h = hashlib.sha256("\x1e".join(cols).encode())
    if not df.empty:
        rows = pd.util.hash_pandas_object(df[cols].astype(object), index=False).to_numpy()
        h.update(np.sort(rows).tobytes())
    return h.hexdigest()


def fingerprints(data: StoreData) -> tuple[str, dict[str, str]]:
    """Digest of the data an analysis reads: overall and per system.

    The digests cover the aggregated count tables, not the raw rows: re-ingesting the same
    responses, or the same responses split over several files, leaves them unchanged,
    while any change to a count (a new response, a different answer) changes them.
    """
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
            h.update(_frame_digest(t[t["system"] == name]).encode())
        meta = data.systems[data.systems["system"] == name]
        h.update(_frame_digest(meta).encode())
        per_system[name] = h.hexdigest()
    overall = hashlib.sha256()
    for name, digest in per_system.items():
        overall.update(f"{name}={digest}\n".encode())
    overall.update(_frame_digest(data.annotations).encode())
    return overall.hexdigest(), per_system


def _bias_tables(
    counts: pd.DataFrame, settings: AnalysisSettings, extra: tuple[str, ...] = ()
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Group rates (gender, race, intersection), macro, per-group gap and macro gap."""
    keys = ("system", "condition", "difficulty", "consequences", *extra)
    paper_groups = models.decision_bias(counts, keys=keys)
    rates = pd.concat(
        [paper_groups, models.group_rates(counts, by="intersection", keys=keys)],
        ignore_index=True,
    )
    macro = models.macro_average(paper_groups, keys=keys)
    pair = ("system", "consequences", *extra)
    gap = models.cue_visibility_gap(
        rates, explicit=settings.explicit, implicit=settings.implicit, keys=pair
    )
    macro_gap = models.cue_visibility_gap(
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
    out["abstention"] = models.abstention_rates(data.abstention)
    out["exclusions"] = models.exclusions(
        data.abstention,
        max_abstention=s.policy.max_abstention,
        conditions=(s.explicit, s.implicit),
        consequences=s.consequences,
    )
    excluded = set(out["exclusions"].loc[out["exclusions"]["excluded"], "system"])

    say("puzzle recovery and status bias")
    out["recovery"] = models.recovery_accuracy(data.recovery)
    out["recovery_by_shape"] = models.recovery_accuracy(
        data.recovery,
        keys=("system", "condition", "difficulty", "consequences", "solution_shape"),
    )
    status = data.status[~data.status["system"].isin(excluded)]
    out["status_bias"] = pd.concat(
        [models.status_bias(status, by=by) for by in ("gender", "race", "intersection")],
        ignore_index=True,
    )

    say("decision bias and the Cue Visibility Gap")
    counts = data.decisions[~data.decisions["system"].isin(excluded)]
    rates, macro, gap, macro_gap = _bias_tables(counts, s)
    if s.n_boot >= 2 and not counts.empty:
        say(f"bootstrap ({s.n_boot} replicates over dilemmas)")
        boot = models.bootstrap(
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
        g = models.cue_visibility_gap(
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
        t = models.direction_of_change(net)
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
        out["formal_named_share"] = models.formal_named_share(
            macro, explicit=s.explicit, implicit=s.implicit, formal=formal
        )

    say("rankings and system-level regression")
    headline = macro_gap[macro_gap["consequences"] == s.consequences].dropna(
        subset=["net_direct_pp", "net_puzzled_pp"]
    )
    if len(headline) >= 2:
        ranks = models.rankings(headline)
        out["rankings"] = ranks.ranks
        out["kendall_tau"] = pd.DataFrame(
            [{"tau": ranks.tau, "p_value": ranks.p_value, "n": ranks.n}]
        )
    covariates = [c for c in s.covariates if c in data.systems.columns]
    if covariates and len(headline) > len(covariates) + 1:
        try:
            fit = models.gap_regression(headline, data.systems, covariates=covariates)
        except ValueError as exc:  # e.g. a constant covariate: say so rather than fail
            out["gap_regression_fit"] = pd.DataFrame(
                [{"covariates": ", ".join(covariates), "error": str(exc)}]
            )
        else:
            out["gap_regression"] = fit.coefficients
            out["gap_regression_correlations"] = fit.correlations
            out["gap_regression_fit"] = pd.DataFrame(
                [
                    {
                        "covariates": ", ".join(covariates),
                        "r2": fit.r2,
                        "adj_r2": fit.adj_r2,
                        "n": fit.n,
                        "k": fit.k,
                        "error": None,
                    }
                ]
            )

    say("verdicts")
    out["verdicts"] = _verdicts(out, s)

    if not data.annotations.empty:
        say("annotator agreement")
        ann = data.annotations.assign(
            dilemma=data.annotations["item_bank"] + "/" + data.annotations["dilemma"]
        )
        out["agreement"] = models.annotator_agreement(ann)
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


# --------------------------------------------------------------------------- storage


def _versions() -> dict[str, str]:
    out = {}
    for pkg in (
        "cuegap",
        "pandas",
        "numpy",
        "scipy",
        "statsmodels",
        "sqlalchemy",
        "pymc",
        "pytensor",
        "arviz",
        "nutpie",
    ):
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:  # pragma: no cover - not installed
            out[pkg] = "unknown"
    return out


def table_to_json(df: pd.DataFrame) -> str:
    """Serialise a result table losslessly enough for storage (pandas ``orient="table"``)."""
    return df.to_json(orient="table", index=False, double_precision=15)


def table_from_json(text: str) -> pd.DataFrame:
    """Inverse of :func:`table_to_json`."""
    return pd.read_json(io.StringIO(text), orient="table")


def _settings_key(settings: Mapping[str, Any]) -> str:
    return json.dumps(settings, sort_keys=True, default=str)


def save_analysis(
    engine: Engine,
    *,
    kind: str,
    status: str,
    data_fingerprint: str,
    system_fingerprints: dict[str, str],
    settings: dict[str, Any],
    tables: Mapping[str, pd.DataFrame],
    descriptions: Mapping[str, str] | None = None,
    message: str | None = None,
    artifacts: Mapping[str, tuple[bytes, str]] | None = None,
) -> int:
    """Store an analysis, its tables and artifacts in one transaction; returns its id.

    ``artifacts`` maps a name to ``(content, media_type)``. The analysis is sealed in the
    store's ledger in the same transaction (its content digest covers settings, tables and
    artifacts), so that :func:`cuegap.compliance.verify` notices any later edit.
    """
    descriptions = descriptions or {}
    now = datetime.now(UTC)
    with engine.begin() as conn:
        analysis_id = conn.execute(
            Analysis.__table__.insert().values(
                kind=kind,
                status=status,
                data_fingerprint=data_fingerprint,
                system_fingerprints=system_fingerprints,
                settings=settings,
                versions=_versions(),
                message=message,
                created_at=now,
            )
        ).inserted_primary_key[0]
        rows = [
            {
                "analysis_id": analysis_id,
                "name": name,
                "description": descriptions.get(name),
                "n_rows": len(df),
                "data": table_to_json(df),
            }
            for name, df in tables.items()
        ]
        if rows:
            conn.execute(AnalysisTable.__table__.insert(), rows)
        for name, (content, media_type) in (artifacts or {}).items():
            _insert_artifact(conn, analysis_id, name, content, media_type)
        entry = ledger.record(conn, "analysis", int(analysis_id))
        if entry is not None:
            conn.execute(
                Analysis.__table__.update()
                .where(Analysis.__table__.c.id == analysis_id)
                .values(content_digest=entry.digest)
            )
    return int(analysis_id)


def find_analysis(
    engine: Engine, *, kind: str, data_fingerprint: str, settings: dict[str, Any]
) -> int | None:
    """The newest stored analysis of ``kind`` with this fingerprint and these settings."""
    stmt = (
        select(Analysis.id, Analysis.settings)
        .where(Analysis.kind == kind, Analysis.data_fingerprint == data_fingerprint)
        .order_by(Analysis.id.desc())
    )
    want = _settings_key(settings)
    with engine.connect() as conn:
        for row in conn.execute(stmt):
            stored = row.settings if not isinstance(row.settings, str) else json.loads(row.settings)
            if _settings_key(stored) == want:
                return int(row.id)
    return None


def list_analyses(engine: Engine) -> pd.DataFrame:
    """Every stored analysis, newest first, with what it compared and how.

    Returns
    -------
    DataFrame
        ``id``, ``kind``, ``status``, ``created_at``, ``compared`` ("direct vs
        puzzled-hard"), ``consequences`` (with / without), ``delta_pp`` (the policy's δ),
        ``sampling`` ("1000 boot" replicates, or "4×1000 draws" of a Bayesian fit) and
        ``data_fingerprint``.
    """
    stmt = select(
        Analysis.id,
        Analysis.kind,
        Analysis.status,
        Analysis.created_at,
        Analysis.settings,
        Analysis.data_fingerprint,
    ).order_by(Analysis.id.desc())
    rows = []
    with engine.connect() as conn:
        for r in conn.execute(stmt):
            st = r.settings if not isinstance(r.settings, str) else json.loads(r.settings)
            st = st or {}
            pair = [st.get("explicit"), st.get("implicit")]
            compared = " vs ".join(condition_label(tuple(c)) for c in pair) if all(pair) else ""
            bayes = st.get("bayes") or {}
            sampling = (
                f"{bayes.get('chains')}×{bayes.get('draws')} draws"
                if bayes
                else f"{st.get('n_boot', 0)} boot"
            )
            rows.append(
                {
                    "id": int(r.id),
                    "kind": r.kind,
                    "status": r.status,
                    "created_at": r.created_at,
                    "compared": compared,
                    "consequences": "with" if st.get("consequences", True) else "without",
                    "delta_pp": (st.get("policy") or {}).get("delta_pp"),
                    "sampling": sampling,
                    "data_fingerprint": r.data_fingerprint,
                }
            )
    columns = [
        "id",
        "kind",
        "status",
        "created_at",
        "compared",
        "consequences",
        "delta_pp",
        "sampling",
        "data_fingerprint",
    ]
    return pd.DataFrame(rows, columns=columns)


def latest_analysis_id(engine: Engine, kind: str | None = None) -> int | None:
    """Id of the newest stored analysis (of ``kind``, when given), or None."""
    stmt = select(Analysis.id).order_by(Analysis.id.desc()).limit(1)
    if kind is not None:
        stmt = stmt.where(Analysis.kind == kind)
    with engine.connect() as conn:
        found = conn.execute(stmt).scalar()
    return None if found is None else int(found)


def list_tables(engine: Engine, analysis_id: int | None = None) -> pd.DataFrame:
    """Names, kinds, row counts and descriptions of the stored tables of an analysis.

    Parameters
    ----------
    analysis_id : int, optional
        Defaults to the newest table of each name and analysis kind over all analyses (a
        Bayesian analysis stores its own ``verdicts`` beside the frequentist one).
    """
    stmt = select(
        AnalysisTable.analysis_id,
        Analysis.kind,
        AnalysisTable.name,
        AnalysisTable.n_rows,
        AnalysisTable.description,
    ).join(Analysis, Analysis.id == AnalysisTable.analysis_id)
    if analysis_id is not None:
        stmt = stmt.where(AnalysisTable.analysis_id == analysis_id)
    with engine.connect() as conn:
        df = pd.DataFrame(
            conn.execute(stmt.order_by(AnalysisTable.analysis_id.desc())).fetchall(),
            columns=["analysis_id", "kind", "name", "rows", "description"],
        )
    df = df.drop_duplicates(["name", "kind"])
    return df.sort_values(["name", "kind"]).reset_index(drop=True)


def find_table(
    engine: Engine, name: str, analysis_id: int | None = None, kind: str | None = None
) -> tuple[int, str]:
    """Which stored table :func:`load_table` reads: (analysis id, analysis kind).

    Parameters
    ----------
    name : str
        Table name (see :data:`TABLES` and :func:`list_tables`).
    analysis_id : int, optional
        Which analysis; by default the newest one (of ``kind``) that has this table.
    kind : {"frequentist", "bayesian"}, optional
        Only analyses of this kind.

    Raises
    ------
    KeyError
        When no such table is stored; the message lists the stored ones.
    ValueError
        For an unknown ``kind``.
    """
    if kind is not None and kind not in ("frequentist", "bayesian"):
        raise ValueError(f"kind must be 'frequentist' or 'bayesian', but got {kind!r}")
    stmt = (
        select(AnalysisTable.analysis_id, Analysis.kind)
        .join(Analysis, Analysis.id == AnalysisTable.analysis_id)
        .where(AnalysisTable.name == name)
    )
    if analysis_id is not None:
        stmt = stmt.where(AnalysisTable.analysis_id == analysis_id)
    if kind is not None:
        stmt = stmt.where(Analysis.kind == kind)
    with engine.connect() as conn:
        row = conn.execute(stmt.order_by(AnalysisTable.analysis_id.desc()).limit(1)).first()
    if row is None:
        known = ", ".join(sorted(set(list_tables(engine, analysis_id)["name"])))
        where = f" in analysis {analysis_id}" if analysis_id is not None else ""
        where += f" of a {kind} analysis" if kind is not None else ""
        raise KeyError(
            f"no result table {name!r}{where}; stored tables: "
            f"{known or 'none (run cuegap analyze)'}"
        )
    return int(row[0]), str(row[1])


def load_table(
    engine: Engine, name: str, analysis_id: int | None = None, kind: str | None = None
) -> pd.DataFrame:
    """A stored result table as a DataFrame (which one: see :func:`find_table`).

    Raises
    ------
    KeyError
        When no analysis has stored a table of that name; the message lists the known ones.
    """
    found, _ = find_table(engine, name, analysis_id, kind)
    stmt = select(AnalysisTable.data).where(
        AnalysisTable.name == name, AnalysisTable.analysis_id == found
    )
    with engine.connect() as conn:
        return table_from_json(conn.execute(stmt).scalar_one())


def export_table(
    engine: Engine,
    name: str,
    out: Path | str,
    analysis_id: int | None = None,
    kind: str | None = None,
) -> Path:
    """Write a stored result table to CSV or Parquet, chosen by the file extension.

    Raises
    ------
    ValueError
        When the extension is neither ``.csv`` nor ``.parquet``.
    KeyError
        When the table does not exist.
    """
    out = Path(out)
    suffix = out.suffix.lower()
    if suffix not in (".csv", ".parquet"):
        raise ValueError(f"{out}: the output must end in .csv or .parquet, not {suffix!r}")
    df = load_table(engine, name, analysis_id, kind)
    out.parent.mkdir(parents=True, exist_ok=True)
    if suffix == ".csv":
        df.to_csv(out, index=False)
    else:
        df.to_parquet(out, index=False)
    return out


def analyze(
    engine: Engine,
    settings: AnalysisSettings | None = None,
    *,
    force: bool = False,
    progress: Progress | None = None,
) -> AnalysisResult:
    """Compute every frequentist table from a store and store them as one analysis.

    When an analysis with the same data fingerprint and settings is already stored, it is
    returned instead (``reused=True``) unless ``force``.

    Raises
    ------
    ValueError
        When the store holds no What-if decisions to analyse.
    """
    s = settings or AnalysisSettings()
    say = progress or (lambda _msg: None)
    say("reading count tables from the store")
    data = load_store_data(engine)
    if data.decisions.empty:
        raise ValueError(
            "the store holds no What-if decisions with a Neutral baseline to analyse; "
            "ingest an item bank and responses first (cuegap ingest)"
        )
    s = resolve_conditions(data.decisions, s)
    fp, per_system = fingerprints(data)
    settings_dict = s.to_dict()
    if not force:
        found = find_analysis(
            engine, kind="frequentist", data_fingerprint=fp, settings=settings_dict
        )
        if found is not None:
            say("unchanged data and settings: reusing the stored analysis")
            return _load_result(engine, found, reused=True)
    tables = frequentist_tables(data, s, progress=say)
    say("storing results")
    analysis_id = save_analysis(
        engine,
        kind="frequentist",
        status="ok",
        data_fingerprint=fp,
        system_fingerprints=per_system,
        settings=settings_dict,
        tables=tables,
        descriptions=TABLES,
    )
    return _load_result(engine, analysis_id, tables=tables)


@dataclass(frozen=True, slots=True)
class BayesSettings:
    """How the hierarchical Bayesian model is sampled (see :func:`cuegap.models.fit_bayes`)."""

    draws: int = 1000
    tune: int = 1000
    chains: int = 4
    seed: int = 2026
    sampler: str = "nutpie"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready settings."""
        return {
            "draws": self.draws,
            "tune": self.tune,
            "chains": self.chains,
            "seed": self.seed,
            "sampler": self.sampler,
        }


BAYES_TABLES_NOTE = (
    "A Bayesian analysis stores bayes_group_rates, bayes_gap, bayes_gap_by_condition, "
    "bayes_asymmetry, bayes_overall, bayes_ranks, bayes_pair_order, bayes_kendall_tau "
    "(see cuegap.models.bayes_tables), bayes_diagnostics (one row per sampling attempt) "
    "and verdicts from the posterior; the InferenceData is stored as a NetCDF artifact."
)


def analyze_bayes(
    engine: Engine,
    settings: AnalysisSettings | None = None,
    bayes: BayesSettings | None = None,
    *,
    force: bool = False,
    progress: Progress | None = None,
    sampler_progress: bool = False,
    sample: bool = True,
) -> AnalysisResult | None:
    """Fit the hierarchical Bayesian model and store its tables, verdicts and InferenceData.

    The frequentist analysis of the same data and settings is computed (or reused) first:
    its exclusions, parsable counts and puzzle recovery feed the verdicts. Refitting is
    skipped when a Bayesian analysis with the same data fingerprint, model version and
    settings is stored, unless ``force``. When a stored fit differs only in the verdict
    policy, its posterior is reused: tables and verdicts are recomputed under the new
    policy without sampling. With ``sample=False`` nothing is sampled: None is returned
    when no stored posterior fits. A fit that fails its convergence gate is stored with
    status ``not_converged`` and every verdict is inconclusive.
    """
    s = settings or AnalysisSettings()
    b = bayes or BayesSettings()
    say = progress or (lambda _msg: None)
    freq = analyze(engine, s, progress=say)
    used = settings_from_dict(freq.settings or {})  # the conditions analyze resolved
    s = replace(s, explicit=used.explicit, implicit=used.implicit, consequences=used.consequences)
    data_fp = freq.data_fingerprint
    excluded = sorted(freq.tables["exclusions"].query("excluded")["system"])
    settings_dict = {
        **s.to_dict(),
        "bayes": b.to_dict(),
        "model_version": models.MODEL_VERSION,
        "excluded": excluded,
    }
    donor = None
    if not force:  # the bootstrap settings do not matter here: the fit and policy do
        found = _same_fit(engine, data_fp, settings_dict, keys=(*FIT_KEYS, "policy"))
        if found is not None:
            say("unchanged data and settings: reusing the stored Bayesian fit")
            return _load_result(engine, found, reused=True)
        donor = _same_fit(engine, data_fp, settings_dict)
    if donor is None and not sample:
        return None
    data = load_store_data(engine)
    if donor is not None:  # only the verdict policy differs: the posterior still holds
        say(f"same fit as Bayesian analysis {donor}: new verdicts from its posterior")
        fit = models.BayesFit.from_idata(load_idata(engine, donor))
    else:
        say(f"sampling ({b.sampler}, {b.chains} chains x {b.draws} draws)")
        fit = models.fit_bayes(
            data.decisions,
            explicit=s.explicit,
            implicit=s.implicit,
            consequences=s.consequences,
            draws=b.draws,
            tune=b.tune,
            chains=b.chains,
            seed=b.seed,
            sampler=b.sampler,  # type: ignore[arg-type]
            progress=sampler_progress,
            exclude_systems=excluded,
        )
    say("posterior summaries and verdicts")
    tables = models.bayes_tables(fit, delta=s.policy.delta_pp)
    tables["bayes_diagnostics"] = fit.diagnostics
    gap = tables["bayes_gap"]
    macro = gap[gap["group_type"] == "macro"]
    posterior = pd.DataFrame(
        {
            "system": macro["system"],
            "gap_pp": macro["gap_mean"],
            "gap_low_pp": macro["gap_q05"],
            "gap_high_pp": macro["gap_q95"],
            "p_gap_gt_delta": macro["p_gap_gt_delta"],
            "p_abs_lt_delta": macro["p_abs_lt_delta"],
        }
    )
    tables["verdicts"] = models.verdicts(
        freq.tables["macro_gap"][freq.tables["macro_gap"]["consequences"] == s.consequences],
        s.policy,
        exclusions=freq.tables["exclusions"],
        parsable=_parsable(freq.tables, s),
        recovery=_recovery(freq.tables, s),
        posterior=posterior,
        converged=fit.converged,
        convergence_message=fit.message,
        level=0.9,
    )
    say("storing results")
    blob = models.idata_to_bytes(fit.idata)
    analysis_id = save_analysis(
        engine,
        kind="bayesian",
        status="ok" if fit.converged else "not_converged",
        data_fingerprint=data_fp,
        system_fingerprints=fingerprints(data)[1],
        settings=settings_dict,
        tables=tables,
        message=fit.message,
        artifacts={"idata": (blob, "application/x-netcdf")},
    )
    return _load_result(engine, analysis_id, tables=tables)


def _insert_artifact(
    conn: Any, analysis_id: int, name: str, content: bytes, media_type: str
) -> None:
    """Store a binary artifact of an analysis with its SHA-256 (checked by
    :func:`load_idata`; covered by the analysis's ledger digest)."""
    conn.execute(
        AnalysisArtifact.__table__.insert().values(
            analysis_id=analysis_id,
            name=name,
            media_type=media_type,
            sha256=hashlib.sha256(content).hexdigest(),
            content=content,
        )
    )


def _differences(stored: Mapping[str, Any], settings: AnalysisSettings) -> list[str]:
    """What about the question a Bayesian analysis answered differs from ``settings``."""
    out = []
    pair = [list(settings.explicit), list(settings.implicit)]
    if [stored.get("explicit"), stored.get("implicit")] != pair:
        have = " vs ".join(
            condition_label(tuple(c or ("?", None)))
            for c in (stored.get("explicit"), stored.get("implicit"))
        )
        out.append(f"it compared {have}")
    if stored.get("consequences", True) != settings.consequences:
        out.append("it used the other consequences setting")
    if stored.get("policy") != settings.policy.to_dict():
        out.append("its verdicts used another policy")
    return out


def bayes_answering(
    engine: Engine, data_fingerprint: str, settings: AnalysisSettings | None = None
) -> tuple[int | None, str]:
    """The newest Bayesian analysis of the same data and question, or None with the reason.

    Parameters
    ----------
    data_fingerprint : str
        Fingerprint of the frequentist analysis in question; a Bayesian analysis of other
        data is not used.
    settings : AnalysisSettings, optional
        That analysis's settings: a Bayesian analysis that compared other conditions, used
        the other consequences setting or another verdict policy is not used either (its
        verdicts answer another question).

    Returns
    -------
    (int or None, str)
        The analysis id and an empty note, or None and a one-line reason.
    """
    with engine.connect() as conn:
        rows = conn.execute(
            select(Analysis.id, Analysis.data_fingerprint, Analysis.settings)
            .where(Analysis.kind == "bayesian")
            .order_by(Analysis.id.desc())
        ).all()
    if not rows:
        return None, "no Bayesian fit is stored for this store"
    same_data = [r for r in rows if r.data_fingerprint == data_fingerprint]
    if not same_data:
        return None, (
            f"no Bayesian fit of this data: Bayesian analysis {rows[0].id} was fitted to other "
            "data (its fingerprint differs) and is not used"
        )
    if settings is None:
        return int(same_data[0].id), ""
    for r in same_data:
        if not _differences(r.settings or {}, settings):
            return int(r.id), ""
    why = "; ".join(_differences(same_data[0].settings or {}, settings))
    return None, (
        f"no Bayesian fit of this question: Bayesian analysis {same_data[0].id} is not used "
        f"({why}); run `cuegap analyze --bayes` with this report's settings"
    )


#: The settings a posterior depends on; the verdict policy and bootstrap settings are not.
FIT_KEYS = ("explicit", "implicit", "consequences", "bayes", "model_version", "excluded")


def _same_fit(
    engine: Engine,
    data_fingerprint: str,
    settings: dict[str, Any],
    keys: tuple[str, ...] = FIT_KEYS,
) -> int | None:
    """A stored Bayesian analysis whose posterior is the one ``settings`` would sample
    (and, with ``keys`` including ``policy``, whose verdicts used the same policy)."""
    stmt = (
        select(Analysis.id, Analysis.settings)
        .join(AnalysisArtifact, AnalysisArtifact.analysis_id == Analysis.id)
        .where(
            Analysis.kind == "bayesian",
            Analysis.data_fingerprint == data_fingerprint,
            AnalysisArtifact.name == "idata",
        )
        .order_by(Analysis.id.desc())
    )
    want = _settings_key({k: settings.get(k) for k in keys})
    with engine.connect() as conn:
        for row in conn.execute(stmt):
            stored = row.settings if not isinstance(row.settings, str) else json.loads(row.settings)
            if _settings_key({k: (stored or {}).get(k) for k in keys}) == want:
                return int(row.id)
    return None


def load_idata(engine: Engine, analysis_id: int | None = None) -> Any:
    """The stored InferenceData of a Bayesian analysis (default: the newest).

    Raises
    ------
    KeyError
        When no Bayesian analysis with an InferenceData is stored.
    """
    stmt = select(AnalysisArtifact.content, AnalysisArtifact.sha256).where(
        AnalysisArtifact.name == "idata"
    )
    if analysis_id is not None:
        stmt = stmt.where(AnalysisArtifact.analysis_id == analysis_id)
    stmt = stmt.order_by(AnalysisArtifact.analysis_id.desc()).limit(1)
    with engine.connect() as conn:
        row = conn.execute(stmt).first()
    if row is None:
        raise KeyError("no stored Bayesian fit: run cuegap analyze --bayes")
    if hashlib.sha256(row.content).hexdigest() != row.sha256:
        raise ValueError("the stored InferenceData does not match its SHA-256")
    return models.idata_from_bytes(row.content)


def _load_result(
    engine: Engine,
    analysis_id: int,
    *,
    tables: dict[str, pd.DataFrame] | None = None,
    reused: bool = False,
) -> AnalysisResult:
    with engine.connect() as conn:
        row = conn.execute(select(Analysis).where(Analysis.id == analysis_id)).one()
        if tables is None:
            stored = conn.execute(
                select(AnalysisTable.name, AnalysisTable.data).where(
                    AnalysisTable.analysis_id == analysis_id
                )
            ).fetchall()
            tables = {name: table_from_json(text) for name, text in stored}
    return AnalysisResult(
        id=analysis_id,
        kind=row.kind,
        status=row.status,
        data_fingerprint=row.data_fingerprint,
        created_at=row.created_at,
        tables=tables,
        reused=reused,
        settings=row.settings,
    )


__all__ = [
    "TABLES",
    "AnalysisResult",
    "AnalysisSettings",
    "BayesSettings",
    "StoreData",
    "analyze",
    "analyze_bayes",
    "export_table",
    "fingerprints",
    "frequentist_tables",
    "latest_analysis_id",
    "list_tables",
    "load_idata",
    "load_store_data",
    "load_table",
    "save_analysis",
    "table_from_json",
    "table_to_json",
]
