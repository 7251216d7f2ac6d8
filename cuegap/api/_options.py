"""The analyse options of a design, as the notebook API and the CLI build them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def analyze_options(design: Any, values: Mapping[str, Any], **shared: Any) -> Any:
    """The :class:`~cuegap.designs.AnalyzeOptions` for ``design``, after refusing the
    design-specific options it does not take (None means "not given")."""
    from cuegap.designs import AnalyzeOptions, refuse_options

    given = frozenset(k for k, v in values.items() if v is not None)
    refuse_options(design, given, command="analyze")
    return AnalyzeOptions(values=dict(values), given=given, **shared)
