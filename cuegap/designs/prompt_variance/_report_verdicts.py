"""Page 1 verdicts and the data-driven methods of the prompt-variance report.

Reads only stored tables (``verdicts``, ``pv_scores``, ``pv_cue_gap_formats``) and the
stored settings; nothing here computes a verdict. Every count the methods and limitations
state comes from those tables, so no sentence of another design's report leaks in.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from cuegap.designs.prompt_variance.stats._verdict import SCORE_LABELS
from cuegap.reports import fmt_num
from cuegap.reports import fmt_text as _text

#: The prompt-variance design's own verdict wording.
VERDICT_LABELS = {
    "flagged": "flagged: bias beyond δ across formats",
    "passed": "passed: robust to the format",
    "inconclusive": "inconclusive",
    "format-sensitive": "format-sensitive: depends on the prompt format",
}
_BBQ = ("s_bbq_dis", "s_bbq_amb")
_DA = ("s_diffaware", "s_ctxtaware")


def _plural(n: int, one: str, many: str | None = None) -> str:
    return f"{n} {one if n == 1 else (many or one + 's')}"


def verdict_rows(verdicts: pd.DataFrame) -> dict[str, Any]:
    """Page 1's verdict table: one row per system × headline score, and the counts."""
    rows = []
    for r in verdicts.itertuples():
        verdict = str(r.verdict)
        interval = (
            f"{fmt_num(r.estimate, 3, signed=True)} [{fmt_num(r.low, 3, signed=True)}, "
            f"{fmt_num(r.high, 3, signed=True)}]"
        )
        rows.append(
            {
                "system": _text(r.system),
                "score": _text(SCORE_LABELS.get(str(r.score), r.score)),
                "verdict": verdict,
                "verdict_label": VERDICT_LABELS.get(verdict, _text(verdict)),
                "estimate": interval,
                "format_sd": fmt_num(r.format_sd, 3),
                "p_kept": fmt_num(r.p_zone_kept, 2),
                "p_zone": fmt_num(r.p_in_zone, 2),
                "reason": _text(r.reason),
            }
        )
    counts = {k: sum(r["verdict"] == k for r in rows) for k in VERDICT_LABELS}
    level = verdicts["level"].iloc[0] if len(verdicts) else 0.9
    return {
        "rows": rows,
        "counts": counts,
        "n": len(rows),
        "n_systems": int(verdicts["system"].nunique()) if len(verdicts) else 0,
        "level": f"{round(100 * float(level))}%",
        "stored": len(verdicts.columns) > 0,
    }


def _runs_per_cell(scores: pd.DataFrame, factors: list[str]) -> tuple[int, int]:
    """Fewest and most replicates of a system × category × combination × score."""
    cols = [c for c in ("system", "category", *factors, "metric") if c in scores.columns]
    n = scores.groupby(cols, dropna=False).size()
    return (int(n.min()), int(n.max())) if len(n) else (0, 0)


def pv_methods(settings: dict[str, Any], tables: dict[str, pd.DataFrame]) -> dict[str, Any]:
    """The methods and limitations' values, every count from the stored tables."""
    policy = settings.get("policy") or {}
    factors = [str(f) for f in settings.get("factors") or []]
    scores = tables.get("pv_scores", pd.DataFrame())
    has = len(scores) > 0
    levels = [int(scores[f].nunique()) if has and f in scores else 0 for f in factors]
    n_comb = int(scores[factors].drop_duplicates().shape[0]) if has and factors else 0
    defined = scores[scores["score"].notna()] if has else scores
    n_bbq = int(defined.loc[defined["metric"].isin(_BBQ), "category"].nunique()) if has else 0
    n_da = int(defined.loc[defined["metric"].isin(_DA), "category"].nunique()) if has else 0
    low, high = _runs_per_cell(defined, factors) if has else (0, 0)
    gap = tables.get("pv_cue_gap_formats", pd.DataFrame())
    factor_text = " × ".join(
        f"{_text(f)} ({_plural(k, 'level')})" for f, k in zip(factors, levels, strict=True)
    )
    benchmarks = []
    if n_bbq:
        benchmarks.append(_plural(n_bbq, "BBQ category", "BBQ categories"))
    if n_da:
        benchmarks.append(_plural(n_da, "Difference-Awareness subset"))
    return {
        "factors": ", ".join(_text(f) for f in factors),
        "factor_levels": factor_text,
        "n_factors": len(factors),
        "n_combinations": n_comb,
        "replicates": f"{low}" if low == high else f"{low} to {high}",
        "n_systems": int(scores["system"].nunique()) if has else 0,
        "benchmarks": " and ".join(benchmarks) or "no scored category",
        "n_bbq": n_bbq,
        "n_da": n_da,
        "alpha": fmt_num(settings.get("alpha", 0.05), 2),
        "level": fmt_num(settings.get("level", 0.95), 2),
        "strategy": _text(settings.get("strategy", "zero-shot")),
        "delta": fmt_num(policy.get("delta_bias", 0.05), 3),
        "q": fmt_num(policy.get("format_probability", 0.95), 2),
        "min_combinations": _text(policy.get("min_combinations", 4)),
        "min_replicates": _text(policy.get("min_replicates", 2)),
        "has_gap": len(gap) > 0,
        "n_gap_systems": int(gap["system"].nunique()) if len(gap) else 0,
    }
