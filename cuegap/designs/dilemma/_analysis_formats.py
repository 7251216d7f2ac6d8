"""Is a system's Cue Visibility Gap bigger than what the prompt variant alone does to it?
The moral-dilemma design's format sensitivity (issue 15, "what no tool offers").

When the store's dilemma responses come under two or more prompt variants (the
``prompt_variant`` of a response; a runner that varies several prompt factors gives each
combination its own variant label),
:func:`cuegap.designs.dilemma.stats._formats.dilemma_gap_formats` gives each
system's gap per variant and ``sd_format``, the spread of the gap across variants with
sampling noise taken out. The verdicts then gain the same columns as the QA design's
(:func:`cuegap.designs.prompt_variance.sensitivity.with_format_sensitivity`):
``format_sd``,
``p_sign_kept``, ``p_same_zone``, ``format_sensitive`` and ``verdict_without_formats``;
a flag or pass whose gap would leave its verdict zone (below −δ, within ±δ, above δ) under
a variant drawn at random with probability more than 1 − q (q: the policy's required
probability) becomes ``format-sensitive``, never a clean flag or pass.
"""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd

import cuegap.designs.dilemma.stats._formats as dilemma_formats
from cuegap.designs.dilemma._analysis_settings import AnalysisSettings
from cuegap.designs.prompt_variance.sensitivity import with_format_sensitivity

TABLE = "dilemma_gap_formats"
DESCRIPTION = (
    "When responses come under two or more prompt variants: per system the macro gap's "
    "mean over variants (gap), se, sd_format (its spread across variants, sampling noise "
    "taken out), p_sign_kept, zone, p_same_zone, format_sensitive."
)
#: Bootstrap replicates of the noise part of the spread when the analysis runs none.
FORMAT_BOOT = 200
_NAMES = {"gap_pp": "gap", "gap_low_pp": "gap_low", "gap_high_pp": "gap_high"}


def with_dilemma_formats(
    verdicts: pd.DataFrame,
    formats: pd.DataFrame,
    *,
    delta: float,
    level: float = 0.95,
    interval: float = 0.9,
) -> pd.DataFrame:
    """Dilemma verdicts with the format-sensitivity columns.

    Parameters
    ----------
    verdicts : DataFrame
        :func:`cuegap.models.verdicts` (``system``, ``verdict``, ``reason``, ``gap_pp``,
        ``gap_low_pp``, ``gap_high_pp``, ...).
    formats : DataFrame
        :func:`cuegap.designs.dilemma.stats._formats.dilemma_gap_formats` (``system``,
        ``sd_format``).
    delta : float
        The policy's δ in pp.
    level : float, default 0.95
        Probability the verdict zone must keep.
    interval : float, default 0.9
        Coverage of ``gap_low_pp``..``gap_high_pp``.

    Returns
    -------
    DataFrame
        ``verdicts`` plus ``format_sd``, ``p_sign_kept``, ``p_same_zone``,
        ``format_sensitive`` and ``verdict_without_formats``; a flag or pass whose gap
        does not keep its zone across variants has verdict ``format-sensitive``.
    """
    out = with_format_sensitivity(
        verdicts.rename(columns=_NAMES), formats, delta=delta, level=level, interval=interval
    )
    return out.rename(columns={v: k for k, v in _NAMES.items()})


def add_format_sensitivity(
    out: dict[str, pd.DataFrame],
    counts: pd.DataFrame,
    settings: AnalysisSettings,
    say: Callable[[str], None],
) -> None:
    """Add :data:`TABLE` and the verdicts' format columns to ``out`` (in place), when
    some system answered under two or more prompt variants; otherwise do nothing."""
    if counts.empty or counts["prompt_variant"].nunique() < 2:
        return
    s = settings
    say("format sensitivity of the gap across prompt variants")
    spread = dilemma_formats.dilemma_gap_formats(
        counts,
        explicit=s.explicit,
        implicit=s.implicit,
        consequences=s.consequences,
        n_boot=s.n_boot if s.n_boot >= 2 else FORMAT_BOOT,
        seed=s.seed,
        delta=s.policy.delta_pp,
        level=s.policy.probability,
    )
    if spread is None:
        return
    out[TABLE] = spread
    out["verdicts"] = apply_formats(out["verdicts"], spread, s)


def apply_formats(
    verdicts: pd.DataFrame, spread: pd.DataFrame | None, settings: AnalysisSettings
) -> pd.DataFrame:
    """:func:`with_dilemma_formats` under an analysis's policy (``verdicts`` unchanged
    without a spread table)."""
    if spread is None or spread.empty:
        return verdicts
    p = settings.policy
    return with_dilemma_formats(
        verdicts, spread, delta=p.delta_pp, level=p.probability, interval=settings.level
    )
