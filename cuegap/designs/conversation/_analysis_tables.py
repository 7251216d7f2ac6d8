"""Settings and the pure part of the conversation design's analysis: a count frame in,
every table and the verdicts out (no store; :mod:`cuegap.designs.conversation._analysis` stores
them).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import pandas as pd

import cuegap.designs.conversation.stats as conv_stats
from cuegap.designs import BayesSettings, bayes_from_stored, policy_from_stored
from cuegap.designs.conversation.stats._contrasts import CONTRASTS
from cuegap.designs.conversation.stats._frame import ANONYMOUS, DEFAULT_PAIRS, NULL, REVEALED, UNITS
from cuegap.models import Policy

__all__ = ["ConvSettings", "conv_audit_tables", "conv_bayes_audit_tables", "fewest_disagreements"]

Unit = Literal["persona", "question", "category"]


@dataclass(frozen=True, slots=True)
class ConvSettings:
    """How a conversation analysis is run.

    Attributes
    ----------
    unit : {"persona", "question", "category"}
        The observations of the one-sample t-tests (seed 003 does not say; recorded in
        ``conv_tests.unit`` and in the stored settings).
    bh : bool
        Benjamini–Hochberg within each (contrast, benchmark) family; significance then
        means q < ``alpha``.
    alpha : float
        Significance level (and the TOST level of the frequentist pass rule).
    contrast : str
        The contrast the verdict policy is about (default ``demo_rc_base_pair``:
        receptiveness to a revealed disadvantaged vs advantaged identity, seed 003 §5.2.1).
    policy : Policy
        ``delta_shift`` (δ) and ``min_unit_df`` (fewest t-test degrees of freedom that
        count; both in the ``[conversation]`` section of a policy file), ``probability``
        (q) and ``min_parsable`` (fewest disagreements per shift rate).
    bayes : BayesSettings, optional
        Also fit the hierarchical model (``--bayes``); verdicts then come from its
        posterior, gated on convergence.
    level : float
        Mass of the posterior intervals of ``conv_bayes_contrasts``.
    """

    unit: Unit = "persona"
    bh: bool = False
    alpha: float = 0.05
    contrast: str = "demo_rc_base_pair"
    policy: Policy = field(default_factory=Policy)
    bayes: BayesSettings | None = None
    level: float = 0.9

    def __post_init__(self) -> None:
        if self.unit not in UNITS:
            raise ValueError(f"unit must be one of {', '.join(UNITS)}, but got {self.unit!r}")
        if not 0 < self.alpha < 0.5:
            raise ValueError(f"alpha must be in (0, 0.5), but got {self.alpha!r}")
        if self.contrast not in CONTRASTS:
            raise ValueError(
                f"contrast must be one of {', '.join(CONTRASTS)}, got {self.contrast!r}"
            )
        if not 0 < self.level < 1:
            raise ValueError(f"level must be in (0, 1), but got {self.level!r}")

    @property
    def delta(self) -> float:
        """δ on the contrast's scale (a difference of shift rates): ``policy.delta_shift``."""
        return self.policy.delta_shift

    @property
    def correction(self) -> str:
        """``"bh"`` or ``"none"``, as
        :func:`cuegap.designs.conversation.stats.conv_tests` takes it."""
        return "bh" if self.bh else "none"

    def to_dict(self, *, bayes: bool = False) -> dict[str, Any]:
        """JSON-able form, stored with the analysis (the Bayesian settings only with
        ``bayes``, so that a frequentist analysis is reused whatever the sampler)."""
        out: dict[str, Any] = {
            "design": "conversation", "unit": self.unit, "correction": self.correction,
            "alpha": self.alpha, "contrast": self.contrast, "delta": self.delta,
            "policy": self.policy.to_dict(),
        }  # fmt: skip
        if bayes and self.bayes is not None:
            out |= {"bayes": self.bayes.to_dict(), "level": self.level,
                    "model_version": conv_stats.CONV_MODEL_VERSION}  # fmt: skip
        return out

    @classmethod
    def from_dict(cls, stored: Mapping[str, Any]) -> ConvSettings:
        """The settings :meth:`to_dict` stored: unit, correction, α, contrast, policy and,
        for a Bayesian fit, its sampler settings and interval level (``delta`` is the
        policy's)."""
        base = cls()
        bayes = bayes_from_stored(stored)
        return cls(
            unit=stored.get("unit", base.unit),
            bh=stored.get("correction") == "bh",
            alpha=float(stored.get("alpha", base.alpha)),
            contrast=str(stored.get("contrast", base.contrast)),
            policy=policy_from_stored(stored),
            bayes=bayes,
            level=float(stored.get("level", base.level)) if bayes is not None else base.level,
        )


def fewest_disagreements(counts: pd.DataFrame, *, contrast: str = "demo_rc_base_pair") -> pd.Series:
    """Per system, the fewest disagreements behind a shift rate that ``contrast`` uses
    (per benchmark, persona and category pooled), for the policy's ``min_parsable``."""
    rates = conv_stats.conv_shift_rates(counts)
    agent = "iden" if "iden" in contrast else "base"
    r = rates[rates["agent"] == agent]
    r = (
        r[r["reveal"] == ANONYMOUS]
        if agent == "iden"
        else r[r["reveal"].isin([REVEALED, ANONYMOUS])]
    )
    if contrast.endswith("_pair"):
        r = r[r["demographics"].isin({d for pair in DEFAULT_PAIRS for d in pair})]
    elif contrast == "inst_rc_base":
        r = r[r["demographics"] != NULL]
    return r.groupby("system")["disagreements"].min()


def conv_audit_tables(counts: pd.DataFrame, settings: ConvSettings) -> dict[str, pd.DataFrame]:
    """Every frequentist conversation table and the verdicts (pure; no store).

    Parameters
    ----------
    counts : DataFrame
        The transition count frame (:mod:`cuegap.designs.conversation.stats`), with a column
        named ``settings.unit``.
    settings : ConvSettings

    Returns
    -------
    dict of str to DataFrame
        ``conv_shift_rates``, ``conv_contrasts``, ``conv_tests`` (its ``unit`` and
        ``correction`` columns record the test), ``conv_consistency``,
        ``conv_consistency_summary`` and ``verdicts``.
    """
    tests = conv_stats.conv_tests(
        counts, unit=settings.unit, alpha=settings.alpha, correction=settings.correction,
        min_df=settings.policy.min_unit_df,
    )  # fmt: skip
    consistency = conv_stats.conv_consistency(tests)
    verdicts = conv_stats.conv_verdicts(
        tests, consistency, delta=settings.delta, contrast=settings.contrast,
        fewest=fewest_disagreements(counts, contrast=settings.contrast),
        min_parsable=settings.policy.min_parsable,
        systems=sorted(set(counts["system"].astype(str))),
    )  # fmt: skip
    return {
        "conv_shift_rates": conv_stats.conv_shift_rates(counts),
        "conv_contrasts": conv_stats.conv_contrasts(counts),
        "conv_tests": tests,
        "conv_consistency": consistency,
        "conv_consistency_summary": conv_stats.conv_consistency_summary(consistency),
        "verdicts": verdicts,
    }


def conv_bayes_audit_tables(
    counts: pd.DataFrame,
    settings: ConvSettings,
    *,
    fit: conv_stats.ConvBayesFit | None = None,
    sampler_progress: bool = False,
) -> tuple[conv_stats.ConvBayesFit, dict[str, pd.DataFrame]]:
    """Fit the hierarchical model (unless ``fit`` is given) and its tables and verdicts.

    Parameters
    ----------
    counts : DataFrame
        The transition count frame.
    settings : ConvSettings
        ``settings.bayes`` gives the sampler settings (default :class:`BayesSettings`).
    fit : ConvBayesFit, optional
        A fit of ``counts`` to reuse.

    Returns
    -------
    (fit, tables)
        ``tables``: ``conv_bayes_contrasts``, ``conv_bayes_consistency``,
        ``conv_bayes_policy``, ``conv_bayes_diagnostics`` and ``verdicts``.
    """
    b = settings.bayes or BayesSettings()
    if fit is None:
        fit = conv_stats.fit_conv_bayes(counts, **b.fit_kwargs(), progress=sampler_progress)
    tables = conv_stats.conv_bayes_tables(fit, level=settings.level)
    judged = conv_stats.conv_bayes_verdicts(
        fit, delta=settings.delta, probability=settings.policy.probability,
        contrast=settings.contrast,
        fewest=fewest_disagreements(counts, contrast=settings.contrast),
        min_parsable=settings.policy.min_parsable,
        systems=sorted(set(counts["system"].astype(str))),
    )  # fmt: skip
    tables |= judged
    tables["conv_bayes_diagnostics"] = fit.diagnostics
    return fit, tables
