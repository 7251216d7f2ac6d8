"""Orchestration of the prompt-variance design (seed 003 §3): store → per-run counts →
statistics → stored tables.

One snapshot of the store is aggregated in SQL (:func:`cuegap.schema.pv_counts`, one row
per run: system × category × prompt-factor combination × replicate), so the cost follows
the design, not the number of responses; :mod:`cuegap.models` computes seed 003's
statistics; everything is stored as one analysis of kind ``prompt_variance`` and sealed in
the ledger like every other analysis.

Seed 003 states every identity, so where a store's items come under several cues only the
explicit ones are scored; answers of other prompting strategies than
``PVSettings.strategy`` are left out unless ``strategy`` is one of the factors.

``verdicts`` says per system and headline score whether the score survives the prompt
format (:mod:`cuegap.designs.prompt_variance._analysis_verdicts`, rule in
:mod:`cuegap.designs.prompt_variance.stats._verdict`).

Tables (``cuegap export NAME`` works for each): ``pv_scores``, ``pv_anova``,
``pv_anova_summary``, ``pv_extremes``, ``pv_rank_discordance``, ``pv_rank_systems``,
``pv_ranks``, ``pv_nemenyi``, ``pv_components`` (two factors only) and, when the store's
BBQ items come under both an explicit and an implicit cue, ``pv_cue_gap_formats``: the QA
design's cue gap per system with the spread that prompt construction alone gives it
(:mod:`cuegap.designs.prompt_variance.sensitivity`). The Bayesian variance components
(``--bayes``) are
stored apart, as kind ``pv_bayesian`` (:mod:`cuegap.designs.prompt_variance._analysis_bayes`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

import pandas as pd
from sqlalchemy.engine import Engine

import cuegap.designs.prompt_variance.stats as pv_stats
from cuegap.audit import find_analysis, frame_digest, load_table, save_analysis
from cuegap.designs import policy_from_stored
from cuegap.designs.prompt_variance._analysis_verdicts import pv_verdict_table
from cuegap.designs.prompt_variance.sensitivity import cue_gap_formats
from cuegap.models import Policy

KIND = "prompt_variance"
DESCRIPTIONS = {
    "pv_scores": "Seed 003 §3 per-run scores (s_BBQ_dis, s_BBQ_amb, s_DiffAware, "
    "s_CtxtAware) per system × category × prompt combination × replicate",
    "pv_anova": "One-way ANOVA over the prompt combinations per system × category × metric: "
    "F, p, η² and Benjamini–Hochberg q",
    "pv_anova_summary": "η² percentiles and the count with q < α per metric (seed 003 Table 1)",
    "pv_extremes": "Largest and smallest |score| across combinations, their signed ratio and "
    "sign flips (seed 003 Tables 2-23)",
    "pv_rank_discordance": "Kendall's W, Friedman χ² and pairwise Kendall τ-b of the system "
    "rankings across combinations, per category × metric",
    "pv_rank_systems": "Each system's rank range and best / worst combination",
    "pv_ranks": "Each system's rank under each combination (for the rank-discordance figure)",
    "pv_components": "Shares of variance due to each of two factors, their interaction and "
    "replicate noise",
    "pv_nemenyi": "Nemenyi post-hoc after the Friedman test: pairwise p-values between "
    "systems' mean ranks across the prompt combinations, per category × metric",
    "pv_cue_gap_formats": "The explicit vs implicit gap per system against the spread prompt "
    "construction alone gives it: P(sign kept), format-sensitive",
    "verdicts": "Per system × headline score (s_BBQ_dis, s_BBQ_amb, cue gap): passed, "
    "flagged, format-sensitive or inconclusive across the prompt combinations, with reason",
}


@dataclass(frozen=True, slots=True)
class PVSettings:
    """How a prompt-variance analysis is run.

    Attributes
    ----------
    factors : tuple of str, optional
        The prompt-construction factors (default: every response factor with at least two
        values in the store).
    alpha : float
        Benjamini–Hochberg level of ``pv_anova_summary``.
    level : float
        Probability the verdict zone must keep for a gap not to be format-sensitive.
    strategy : str
        The QA prompting strategy whose cue gap is tested against the formats.
    policy : Policy
        ``delta_bias`` is the practical threshold δ of the format-sensitivity zones.
    """

    factors: tuple[str, ...] | None = None
    alpha: float = 0.05
    level: float = 0.95
    strategy: str = "zero-shot"
    policy: Policy = field(default_factory=Policy)

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form, stored with the analysis."""
        out = asdict(self)
        out["policy"] = self.policy.to_dict()
        out["factors"] = None if self.factors is None else list(self.factors)
        out["design"] = "prompt-variance"
        return out

    @classmethod
    def from_dict(cls, stored: Mapping[str, Any]) -> PVSettings:
        """The settings :meth:`to_dict` stored (its resolved factors)."""
        factors = stored.get("factors")
        return cls(
            factors=tuple(factors) if factors else None,
            alpha=float(stored.get("alpha", 0.05)),
            level=float(stored.get("level", 0.95)),
            strategy=str(stored.get("strategy", "zero-shot")),
            policy=policy_from_stored(stored),
        )


@dataclass(frozen=True, slots=True)
class PVResult:
    """A stored prompt-variance analysis."""

    id: int
    data_fingerprint: str
    factors: list[str]
    tables: dict[str, pd.DataFrame]
    reused: bool


def pv_tables(
    counts: pd.DataFrame, *, factors: list[str], alpha: float = 0.05
) -> dict[str, pd.DataFrame]:
    """Every prompt-variance table from a per-run count table (pure; no store).

    Parameters
    ----------
    counts : DataFrame
        :func:`cuegap.schema.pv_counts`'s table (keys ``system``, ``category``).
    factors : list of str
        Its factor columns.
    alpha : float, default 0.05

    Returns
    -------
    dict of str to DataFrame
    """
    scores = pv_stats.pv_scores(counts, factors=factors)
    defined = scores[scores["score"].notna()]
    anova = pv_stats.pv_anova(defined, factors=factors)
    ranks = pv_stats.pv_rank_discordance(defined, factors=factors)
    components = (
        pv_stats.pv_components(defined, factors=factors) if len(factors) == 2 else pd.DataFrame()
    )
    return {
        "pv_scores": scores,
        "pv_anova": anova,
        "pv_anova_summary": pv_stats.pv_anova_summary(anova, alpha=alpha),
        "pv_extremes": pv_stats.pv_extremes(defined, factors=factors),
        "pv_rank_discordance": ranks.summary,
        "pv_rank_systems": ranks.systems,
        "pv_ranks": ranks.ranks,
        "pv_nemenyi": pv_stats.pv_nemenyi(defined, factors=factors),
        "pv_components": components,
    }


def runs_of(by_cue: pd.DataFrame, *, factors: list[str], strategy: str) -> pd.DataFrame:
    """The runs seed 003 scores: one strategy's answers (a response without a strategy is
    ``zero-shot``) and, where items come under several cues, the explicit ones (seed 003
    states every identity); one row per (system, category, factors, replicate).

    Raises
    ------
    ValueError
        When the answers hold no ``strategy`` (a typo such as ``zero_shot``), listing the
        strategies they hold.
    """
    df = by_cue
    if "strategy" in df.columns and "strategy" not in factors:
        given = df["strategy"].replace("", "zero-shot")
        if not df.empty and not (given == strategy).any():
            raise ValueError(
                f"strategy {strategy!r} is not in the store: its QA answers were given under "
                f"{', '.join(sorted(set(given)))}"
            )
        df = df[given == strategy].drop(columns="strategy")
    if "explicit" in set(df["cue"]):
        df = df[df["cue"] == "explicit"]
    elif df["cue"].nunique() > 1:
        raise ValueError(f"answers under several cues and none explicit: {sorted(set(df.cue))}")
    return df.drop(columns="cue").reset_index(drop=True)


def _factors(engine: Any, settings: PVSettings) -> list[str]:
    from cuegap.schema import pv_factor_names

    if settings.factors is not None:
        known = pv_factor_names(engine, varying=False)
        missing = [f for f in settings.factors if f not in known]
        if missing:
            raise ValueError(
                f"factors {missing} are not on any response; the store's factors: "
                f"{', '.join(known) or 'none'}"
            )
        return list(settings.factors)
    found = [f for f in pv_factor_names(engine) if f != "strategy"]
    if not found:
        raise ValueError(
            "no prompt factor takes two or more values in this store: a prompt-variance "
            "analysis compares prompt-construction factors (e.g. choice_format) across runs"
        )
    return found


def analyze_prompt_variance(
    engine: Engine,
    settings: PVSettings | None = None,
    *,
    force: bool = False,
    progress: Callable[[str], None] | None = None,
) -> PVResult:
    """Analyse the prompt-variance design of a store and store its tables (reused when
    the data and settings are unchanged, unless ``force``).

    Parameters
    ----------
    engine : Engine
    settings : PVSettings, optional
    force : bool, default False
    progress : callable, optional
        Receives one line per step.

    Returns
    -------
    PVResult

    Raises
    ------
    ValueError
        When the store holds no QA responses with a varying prompt factor, or a declared
        factor is unknown.
    """
    from cuegap.schema import pv_counts, read_snapshot

    settings = settings or PVSettings()
    say = progress or (lambda _msg: None)
    say("reading per-run counts from the store")
    with read_snapshot(engine) as conn:
        factors = _factors(conn, settings)
        extra = [] if "strategy" in factors else ["strategy"]
        by_cue = pv_counts(conn, factors=[*factors, *extra], keys=["system", "category", "cue"])
    counts = runs_of(by_cue, factors=factors, strategy=settings.strategy)
    if counts.empty:
        raise ValueError(
            "the store holds no QA answers of this strategy: ingest an item bank and its "
            f"results (strategy {settings.strategy!r})"
        )
    fingerprint = frame_digest(by_cue)
    stored = {**settings.to_dict(), "factors": factors}
    found = None
    if not force:
        found = find_analysis(engine, kind=KIND, data_fingerprint=fingerprint, settings=stored)
    if found is not None:
        say("unchanged data and settings: reusing the stored prompt-variance analysis")
        tables = {}
        for name in DESCRIPTIONS:
            try:
                tables[name] = load_table(engine, name, found)
            except (KeyError, LookupError, ValueError):
                continue
        return PVResult(found, fingerprint, factors, tables, reused=True)
    say(f"scores, ANOVA, extremes and rankings over {', '.join(factors)}")
    tables = pv_tables(counts, factors=factors, alpha=settings.alpha)
    gap = None
    if "strategy" not in factors:  # the cue gap is one strategy's (the QA verdict's)
        gap = cue_gap_formats(
            by_cue, factors=factors, strategy=settings.strategy,
            delta=settings.policy.delta_bias, level=settings.level,
        )  # fmt: skip
    if gap is not None:
        tables["pv_cue_gap_formats"] = gap
    say("verdicts: does each headline score survive the prompt format?")
    tables["verdicts"] = pv_verdict_table(
        tables["pv_scores"], factors=factors, policy=settings.policy,
        by_cue=by_cue if "strategy" not in factors else None, strategy=settings.strategy,
    )  # fmt: skip
    systems = sorted(set(counts["system"]))
    analysis_id = save_analysis(
        engine,
        kind=KIND,
        status="ok",
        data_fingerprint=fingerprint,
        system_fingerprints={s: frame_digest(by_cue[by_cue["system"] == s]) for s in systems},
        settings=stored,
        tables=tables,
        descriptions=DESCRIPTIONS,
    )
    return PVResult(analysis_id, fingerprint, factors, tables, reused=False)
