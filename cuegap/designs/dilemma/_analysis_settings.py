"""Settings of the moral-dilemma design: which conditions an analysis compares and how.

Plain data and validation: no database access, no statistics.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import pandas as pd

from cuegap.designs import BayesSettings, policy_from_stored
from cuegap.designs.dilemma.stats import condition_label, condition_mask
from cuegap.models import Policy

Condition = tuple[str, str | None]
Progress = Callable[[str], None]

FREQUENTIST_VERSION = "1"


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

    @classmethod
    def from_dict(cls, stored: Mapping[str, Any]) -> AnalysisSettings:
        """The settings :meth:`to_dict` stored (defaults for keys an older cuegap did not
        store; ``chosen`` is not stored: the settings actually used are)."""
        base = cls()
        return cls(
            explicit=tuple(stored.get("explicit", base.explicit)),  # type: ignore[arg-type]
            implicit=tuple(stored.get("implicit", base.implicit)),  # type: ignore[arg-type]
            consequences=bool(stored.get("consequences", base.consequences)),
            n_boot=int(stored.get("n_boot", base.n_boot)),
            seed=int(stored.get("seed", base.seed)),
            level=float(stored.get("level", base.level)),
            policy=policy_from_stored(stored),
            covariates=tuple(stored.get("covariates", base.covariates)),
        )


#: Text levels of system covariates, lowest first, that the analysis codes 1, 2, 3, ... for
#: the gap regression (seed 000's alignment tier); other text covariates are an error
#: that says to give numbers (see :func:`cuegap.designs.dilemma.stats.gap_regression`).
COVARIATE_ORDER: dict[str, tuple[str, ...]] = {"alignment": ("low", "medium", "high")}

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
    """Rebuild :class:`AnalysisSettings` from the JSON stored with an analysis
    (:meth:`AnalysisSettings.from_dict`)."""
    return AnalysisSettings.from_dict(stored)


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


__all__ = [
    "ALTERNATIVE_PAIR",
    "COVARIATE_ORDER",
    "DIFFICULTIES",
    "FREQUENTIST_VERSION",
    "AnalysisSettings",
    "BayesSettings",
    "Condition",
    "Progress",
    "parse_condition",
    "resolve_conditions",
    "settings_from_dict",
]
