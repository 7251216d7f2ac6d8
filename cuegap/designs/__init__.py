"""Study designs: one :class:`Design` per way of measuring how a system treats groups.

The shared layers never name a design; they ask this registry. The four built-in designs
(``dilemma``, ``qa``, ``prompt-variance``, ``conversation``) register through
:func:`register` like any other (``cuegap/designs/_builtin.py``); a package of its own can
add one through the ``cuegap.designs`` entry point group.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from cuegap.designs._base import (
    AnalyzeOptions,
    Design,
    PlanRequest,
    PlanUnavailable,
    Progress,
    ReportSections,
    SimulateOptions,
    StatusPart,
)
from cuegap.designs._counting import Counting
from cuegap.designs._registry import (
    analysis_kinds,
    for_kind,
    get,
    refuse_options,
    register,
    registered,
    unregister,
)
from cuegap.designs._settings import (
    BayesSettings,
    analysis_kind,
    bayes_from_stored,
    matching_fit,
    policy_from_stored,
    stored_settings,
)
from cuegap.designs._store import designs_in_store, has_rows, resolve_design, varying_factor
from cuegap.designs._verdicts import (
    RECORD_COLUMNS,
    column_or,
    gate_applied,
    policy_of,
    records_frame,
    two_sided_rule,
)


class _Designs(Mapping[str, Design]):
    """The registered designs by name, read live from the registry."""

    def __getitem__(self, name: str) -> Design:
        return registered()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(registered())

    def __len__(self) -> int:
        return len(registered())


#: The registered designs by name (a live view of :func:`registered`).
DESIGNS: Mapping[str, Design] = _Designs()

__all__ = [
    "DESIGNS",
    "RECORD_COLUMNS",
    "AnalyzeOptions",
    "BayesSettings",
    "Counting",
    "Design",
    "PlanRequest",
    "PlanUnavailable",
    "Progress",
    "ReportSections",
    "SimulateOptions",
    "StatusPart",
    "analysis_kind",
    "analysis_kinds",
    "bayes_from_stored",
    "column_or",
    "designs_in_store",
    "for_kind",
    "gate_applied",
    "get",
    "has_rows",
    "matching_fit",
    "policy_from_stored",
    "policy_of",
    "records_frame",
    "refuse_options",
    "register",
    "registered",
    "resolve_design",
    "stored_settings",
    "two_sided_rule",
    "unregister",
    "varying_factor",
]
