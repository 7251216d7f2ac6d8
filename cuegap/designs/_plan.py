"""What every design's planner reads back from a stored analysis: its settings and the
policy it was run under. Cheap to import (the statistics load inside the functions)."""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy import select
from sqlalchemy.engine import Engine


def stored_settings(engine: Engine, analysis_id: int) -> dict[str, Any]:
    """The settings stored with an analysis, as a dict."""
    from cuegap.schema import Analysis

    with engine.connect() as conn:
        raw = conn.execute(select(Analysis.settings).where(Analysis.id == analysis_id)).scalar_one()
    return json.loads(raw) if isinstance(raw, str) else dict(raw or {})


def stored_policy(settings: dict[str, Any]) -> Any:
    """The :class:`cuegap.models.Policy` stored in an analysis's settings (the built-in one
    where none was stored)."""
    from cuegap.models import Policy

    pol = settings.get("policy") or {}
    return Policy(**{k: v for k, v in pol.items() if k in Policy.__dataclass_fields__})
