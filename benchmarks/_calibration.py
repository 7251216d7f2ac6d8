"""The calibration harness shared by every design's Bayesian validation.

A design's validation script (``validate_bayes.py`` for the dilemma design,
``validate_qa_bayes.py`` for the QA design) simulates audits with planted gaps, fits each
with exactly the settings its ``cuegap analyze --bayes`` uses, and returns one row per
audited system with the columns of :data:`ROW_COLUMNS`. Everything after that lives here,
once: the loop over audits with its progress display (:func:`run_audits`), and the
figures (:func:`calibration_figures`) and their printout (:func:`summarise`, over all
audits and per audit size with :func:`summarise_by_size`):

* the convergence gate's pass rate, over audits (one fit per audit);
* coverage of the 90 % posterior interval of the planted gap over the systems of the fits
  that passed the gate and over all fits, and of the bootstrap's interval, each with its
  Monte Carlo standard error ``sqrt(p (1 - p) / n)``;
* RMSE of the posterior mean and of the bootstrap's point estimate;
* the verdict rates a deployment board cares about, Bayesian and bootstrap (normal
  approximation) side by side: planted gap 0 flagged (should be about 0), planted
  |gap| < δ/2 passed and planted gap 2δ flagged (higher is better). A fit that missed the
  gate gives inconclusive Bayesian verdicts, so these rates are over all fits.
"""

from __future__ import annotations

import csv
import math
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pandas as pd

#: One row per audited system. ``seed`` identifies the audit (one fit), ``kind`` the
#: planted gap: ``zero`` (0), ``small`` (0 < |gap| < δ/2), ``two_delta`` (2δ) or
#: anything else (e.g. ``drawn``), which enters coverage and RMSE but no verdict rate.
ROW_COLUMNS = (
    "seed", "n", "system", "kind", "planted", "passed", "seconds",
    "bayes", "bayes_low", "bayes_high", "bayes_verdict",
    "boot", "boot_low", "boot_high", "boot_verdict",
)  # fmt: skip

#: The verdict rates: label, the kinds it is over, the verdict counted.
VERDICT_RATES = (
    ("planted {name} = 0 flagged (should be ~0)", ("zero",), "flagged"),
    ("planted |{name}| < δ/2 passed (higher is better)", ("zero", "small"), "passed"),
    ("planted {name} = 2δ flagged (higher is better)", ("two_delta",), "flagged"),
)


class Share(NamedTuple):
    """A proportion ``k / n`` with its Monte Carlo standard error."""

    k: int
    n: int

    @property
    def p(self) -> float:
        """The proportion (NaN when ``n`` is 0)."""
        return self.k / self.n if self.n else math.nan

    @property
    def se(self) -> float:
        """Monte Carlo standard error ``sqrt(p (1 - p) / n)`` (NaN when ``n`` is 0)."""
        return math.sqrt(self.p * (1 - self.p) / self.n) if self.n else math.nan

    def __str__(self) -> str:
        if not self.n:
            return "–"
        return f"{self.p:.3f} ± {self.se:.3f} (n={self.n})"


def share(mask: pd.Series | Sequence[bool]) -> Share:
    """How many of ``mask`` are true, as a :class:`Share`."""
    values = np.asarray(mask, dtype=bool)
    return Share(int(values.sum()), int(values.size))


def _covered(df: pd.DataFrame, prefix: str) -> pd.Series:
    return (df[f"{prefix}_low"] <= df["planted"]) & (df["planted"] <= df[f"{prefix}_high"])


def _rmse(err: pd.Series) -> float:
    return float(np.sqrt(np.mean(np.square(err)))) if len(err) else math.nan


def calibration_figures(df: pd.DataFrame) -> dict[str, object]:
    """The validation figures from one row per audited system.

    Parameters
    ----------
    df : DataFrame
        The columns of :data:`ROW_COLUMNS`; rows of one audit share ``seed``, ``passed``
        and ``seconds``.

    Returns
    -------
    dict
        ``audits`` and ``systems`` (int); ``gate`` (:class:`Share` of audits whose fit
        passed); ``coverage_passed``, ``coverage_all`` and ``coverage_boot``
        (:class:`Share` of systems whose 90 % interval holds the planted gap);
        ``rmse_bayes`` and ``rmse_boot`` (float); ``verdicts`` (DataFrame: label,
        bayes, boot, each a :class:`Share` of the kind's systems with that verdict);
        ``seconds_median`` (per fit); ``retried`` and ``retried_passed`` (fits that
        sampled twice, and those of them that then passed; None without an ``attempts``
        column, the number of sampling attempts of the audit's fit).
    """
    fits = df.drop_duplicates("seed")
    passed = df["passed"].astype(bool)
    covered = _covered(df, "bayes")
    rows = []
    for label, kinds, verdict in VERDICT_RATES:
        sub = df[df["kind"].isin(kinds)]
        rows.append(
            {
                "label": label,
                "bayes": share(sub["bayes_verdict"] == verdict),
                "boot": share(sub["boot_verdict"] == verdict),
            }
        )
    return {
        "audits": len(fits),
        "systems": len(df),
        "gate": share(fits["passed"].astype(bool)),
        "coverage_passed": share(covered[passed]),
        "coverage_all": share(covered),
        "coverage_boot": share(_covered(df, "boot")),
        "rmse_bayes": _rmse(df["bayes"] - df["planted"]),
        "rmse_boot": _rmse(df["boot"] - df["planted"]),
        "verdicts": pd.DataFrame(rows),
        "seconds_median": float(fits["seconds"].median()) if len(fits) else math.nan,
        # fits that needed the retry (sampling attempts > 1), and of those how many passed
        "retried": int((fits["attempts"] > 1).sum()) if "attempts" in fits else None,
        "retried_passed": (
            int(((fits["attempts"] > 1) & fits["passed"].astype(bool)).sum())
            if "attempts" in fits
            else None
        ),
    }


def summarise(df: pd.DataFrame, *, name: str = "G", digits: int = 4) -> str:
    """The printed figures (see :func:`calibration_figures`).

    Parameters
    ----------
    df : DataFrame
        One row per audited system (:data:`ROW_COLUMNS`).
    name : str
        What the gap is called in the printout (``G`` for the QA design).
    digits : int
        Decimals of the RMSE.
    """
    f = calibration_figures(df)
    lines = [f"{f['audits']} audits, {f['systems']} systems; gate passed in {f['gate']}"]
    lines.append(f"90% posterior interval covers {name}, passed fits: {f['coverage_passed']}")
    lines.append(f"90% posterior interval covers {name}, all fits:    {f['coverage_all']}")
    lines.append(f"90% bootstrap interval covers {name}:              {f['coverage_boot']}")
    lines.append(f"RMSE of {name}, bayes: {f['rmse_bayes']:.{digits}f}")
    lines.append(f"RMSE of {name}, boot: {f['rmse_boot']:.{digits}f}")
    lines.append(f"{'verdict rate':<44}{'Bayesian':>18}{'bootstrap':>18}{'systems':>9}")
    for row in f["verdicts"].itertuples(index=False):  # type: ignore[union-attr]
        rates = [f"{s.p:.3f}" if s.n else "–" for s in (row.bayes, row.boot)]
        label = row.label.format(name=name)
        lines.append(f"{label:<44}{rates[0]:>18}{rates[1]:>18}{row.bayes.n:>9}")
    if f["retried"] is not None:
        lines.append(
            f"fits that needed the retry: {f['retried']} of {f['audits']} "
            f"({f['retried_passed']} passed the gate after it)"
        )
    lines.append(f"seconds per fit: median {f['seconds_median']:.1f}")
    return "\n".join(lines)


def summarise_by_size(df: pd.DataFrame, *, name: str = "G", digits: int = 4) -> str:
    """:func:`summarise` over all audits, then over the audits of each size ``n``."""
    parts = [("all audits", df), *((f"audits of size {n}", sub) for n, sub in df.groupby("n"))]
    return "\n\n".join(
        f"{label}:\n{summarise(sub, name=name, digits=digits)}" for label, sub in parts
    )


def run_audits(
    one_audit: Callable[[int, int], pd.DataFrame],
    *,
    audits: int,
    sizes: Sequence[int],
    first_seed: int = 0,
    max_seconds: float | None = None,
    out: Path | None = None,
    stream=None,
) -> pd.DataFrame:
    """Run ``one_audit(seed, size)`` for each audit, showing progress, and stack the rows.

    Parameters
    ----------
    one_audit : callable
        ``(seed, size) -> DataFrame`` of :data:`ROW_COLUMNS` for one simulated audit.
    audits : int
        How many audits; audit ``i`` has seed ``first_seed + i`` and size
        ``sizes[i % len(sizes)]`` (so sizes alternate).
    max_seconds : float, optional
        Start no new audit after this much wall time; the audits done are returned.
    out : Path, optional
        CSV the rows are appended to after every audit, so that an interrupted run keeps
        what it did.
    stream : file, optional
        Where the progress lines go (default standard error).
    """
    stream = stream or sys.stderr
    frames: list[pd.DataFrame] = []
    start = time.perf_counter()
    for i in range(audits):
        elapsed = time.perf_counter() - start
        if max_seconds is not None and i and elapsed > max_seconds:
            print(f"time budget reached after {i} audits ({elapsed:.0f} s)", file=stream)
            break
        seed, size = first_seed + i, sizes[i % len(sizes)]
        t0 = time.perf_counter()
        frame = one_audit(seed, size)
        frames.append(frame)
        if out is not None:
            new = not out.exists()
            frame.to_csv(out, mode="a", header=new, index=False, quoting=csv.QUOTE_MINIMAL)
        took = time.perf_counter() - t0
        left = (time.perf_counter() - start) / (i + 1) * (audits - i - 1)
        state = "passed" if bool(frame["passed"].iloc[0]) else "MISSED the gate"
        print(
            f"audit {i + 1}/{audits} (seed {seed}, size {size}): {took:.0f} s, {state}; "
            f"about {left / 60:.0f} min left",
            file=stream,
            flush=True,
        )
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=ROW_COLUMNS)
