"""Stated planning assumptions: a small TOML file read by ``cuegap plan --assumptions``.

Before any data exist, a team states what it expects::

    [plan]
    items = 20                  # the audit's size now, in the design's unit
    responses_per_item = 4      # responses per item and side (repeats, individuals)
    rate_explicit = 0.30        # the rate each side's contrast is a difference of
    rate_implicit = 0.30
    icc = 0.10                  # intra-item correlation of the responses
    paired_correlation = 0.5    # correlation of an item's two sides (0: unpaired)
    gap = 5.0                   # the true gap to plan a flag for, on the design's scale
    systems = ["system-a"]      # names for the rows (default: one row, "planned")

That is the *rates* model (dilemma, QA). A design whose size is not items per side reads
its own keys instead, and the file gives ``gap`` and one complete group:

* prompt variance: ``combinations``, ``replicates`` (per combination), ``format_sd`` (SD of
  the true combination means) and ``run_sd`` (SD of one run's score), ``gap`` the score;
* conversation: ``conversations`` (per cell), ``disagreements_per_conversation``,
  ``lambda_base`` (the baseline agent's shift rate), ``units`` (personas) and
  ``benchmarks``, ``gap`` the contrast of shift rates to plan a flag for; optionally
  ``interaction_sd``, the SD (logit) between personas of the reveal effect (a persona ×
  demographics interaction; default 0).

Each side is modelled as one rate from ``items`` clusters of ``responses_per_item``
responses (:func:`cuegap.models.contrast_se`); the design converts a difference of rates
to its own scale (×100 for percentage points). Pure: reads the file, touches no store.
"""

from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass
from pathlib import Path

from cuegap.models._plan import contrast_se, design_effect
from cuegap.models._plan_table import PlanInput

__all__ = ["GROUPS", "PlanAssumptions", "assumed_input", "load_assumptions"]

_RANGES = {
    "items": (0.0, math.inf),
    "responses_per_item": (0.0, math.inf),
    "rate_explicit": (0.0, 1.0),
    "rate_implicit": (0.0, 1.0),
    "icc": (0.0, 1.0),
    "paired_correlation": (-1.0, 1.0),
    "gap": (-math.inf, math.inf),
    "combinations": (0.0, math.inf),
    "replicates": (0.0, math.inf),
    "format_sd": (0.0, math.inf),
    "run_sd": (0.0, math.inf),
    "conversations": (0.0, math.inf),
    "disagreements_per_conversation": (0.0, math.inf),
    "lambda_base": (0.0, 1.0),
    "units": (0.0, math.inf),
    "benchmarks": (0.0, math.inf),
    "interaction_sd": (0.0, math.inf),
}
#: Positive counts: an open lower end.
_OPEN_LOW = ("items", "responses_per_item", "combinations", "replicates", "conversations",
             "disagreements_per_conversation", "units", "benchmarks")  # fmt: skip
#: The groups of keys a size model needs; a file gives ``gap`` and one complete group.
GROUPS = {
    "rates": ("items", "rate_explicit", "rate_implicit"),
    "formats": ("combinations", "replicates", "format_sd", "run_sd"),
    "conversations": ("conversations", "disagreements_per_conversation", "lambda_base",
                      "units", "benchmarks"),
}  # fmt: skip


@dataclass(frozen=True, slots=True)
class PlanAssumptions:
    """The ``[plan]`` table of an assumptions file (module docstring)."""

    gap: float
    items: float = math.nan
    rate_explicit: float = math.nan
    rate_implicit: float = math.nan
    responses_per_item: float = 1.0
    icc: float = 0.0
    paired_correlation: float = 0.0
    systems: tuple[str, ...] = ("planned",)
    path: str = ""
    combinations: float = math.nan
    replicates: float = math.nan
    format_sd: float = math.nan
    run_sd: float = math.nan
    conversations: float = math.nan
    disagreements_per_conversation: float = math.nan
    lambda_base: float = math.nan
    units: float = math.nan
    benchmarks: float = math.nan
    interaction_sd: float = 0.0

    def require(self, group: str, who: str) -> None:
        """Raise ValueError naming the keys of ``group`` (:data:`GROUPS`) the file lacks."""
        missing = [k for k in GROUPS[group] if not math.isfinite(getattr(self, k))]
        if missing:
            raise ValueError(f"{self.path}: the {who} planner needs [plan] {', '.join(missing)}")


def load_assumptions(path: Path | str) -> PlanAssumptions:
    """Read and check an assumptions file.

    Raises
    ------
    ValueError
        When the file is not TOML, has no ``[plan]`` table, lacks a required key, has an
        unknown key, or a value outside its range; the message names the key.
    """
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path}: cannot read the assumptions file: {exc}") from exc
    plan = data.get("plan")
    if not isinstance(plan, dict):
        raise ValueError(f"{path}: the assumptions file needs a [plan] table")
    known = {*_RANGES, "systems"}
    unknown = sorted(set(plan) - known)
    if unknown:
        raise ValueError(
            f"{path}: unknown key {unknown[0]!r} in [plan]; known keys: {', '.join(sorted(known))}"
        )
    if "gap" not in plan:
        raise ValueError(f"{path}: [plan] needs gap")
    if not any(all(k in plan for k in keys) for keys in GROUPS.values()):
        rates = GROUPS["rates"]
        missing = [k for k in rates if k not in plan]
        others = "; ".join(", ".join(keys) for name, keys in GROUPS.items() if name != "rates")
        raise ValueError(f"{path}: [plan] needs {', '.join(missing)} (or one of: {others})")
    values: dict[str, float] = {}
    for key, (low, high) in _RANGES.items():
        if key not in plan:
            continue
        value = plan[key]
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ValueError(f"{path}: [plan] {key} must be a number, but got {value!r}")
        open_low = key in _OPEN_LOW
        inside = (value > low if open_low else value >= low) and value <= high
        if not (math.isfinite(value) and inside):
            raise ValueError(
                f"{path}: [plan] {key} must be in {'(' if open_low else '['}{low:g}, {high:g}], "
                f"but got {value!r}"
            )
        values[key] = float(value)
    systems = plan.get("systems", ["planned"])
    if not (isinstance(systems, list) and systems and all(isinstance(s, str) for s in systems)):
        raise ValueError(f"{path}: [plan] systems must be a list of names, but got {systems!r}")
    return PlanAssumptions(**values, systems=tuple(systems), path=str(path))  # type: ignore[arg-type]


def assumed_input(
    assumptions: PlanAssumptions,
    system: str,
    *,
    design: str,
    contrast: str,
    size_unit: str,
    delta: float,
    probability: float,
    scale_factor: float = 1.0,
    scale: str = "",
    min_size: float = 1.0,
) -> PlanInput:
    """The :class:`PlanInput` of stated assumptions, on the design's scale.

    ``scale_factor`` converts a difference of rates to the design's scale (100 for
    percentage points); the gap and δ are already on that scale.
    """
    a = assumptions
    a.require("rates", design)
    se = scale_factor * contrast_se(
        a.rate_explicit,
        a.rate_implicit,
        items=a.items,
        responses_per_item=a.responses_per_item,
        icc=a.icc,
        paired_correlation=a.paired_correlation,
    )
    return PlanInput(
        system=system,
        design=design,
        contrast=contrast,
        gap=a.gap,
        se=se,
        current_size=a.items,
        size_unit=size_unit,
        delta=delta,
        probability=probability,
        min_size=min_size,
        scale=scale,
        source=f"assumptions {a.path}",
        icc=a.icc,
        deff=design_effect(a.responses_per_item, a.icc),
    )
