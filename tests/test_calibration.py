"""The shared Bayesian-validation harness (benchmarks/_calibration.py) and the planted gaps
of the dilemma simulator it relies on. Nothing here samples."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

sys.path.insert(0, str(Path(__file__).parent.parent / "benchmarks"))

from _calibration import (
    ROW_COLUMNS,
    Share,
    calibration_figures,
    run_audits,
    share,
    summarise,
    summarise_by_size,
)

from cuegap.designs.dilemma.stats._bayes_sim import simulate_counts


def _frame() -> pd.DataFrame:
    """Two audits of three systems. Audit 1 passed the gate (10 s), audit 2 missed it
    (30 s). Which interval covers the planted gap, per system:

    ====  =========  =======  ================  ==============
    sys   kind       planted  posterior         bootstrap
    ====  =========  =======  ================  ==============
    A     zero       0.0      0.5 [-1, 2] yes   1 [-2, 3] yes
    B     small      0.5      3 [1, 5] no       2 [-1, 4] yes
    C     two_delta  4.0      4 [2, 6] yes      6 [5, 7] no
    D     zero       0.0      -1 [-3, -0.5] no  0 [-1, 1] yes
    E     two_delta  4.0      3 [1, 5] yes      2 [0, 3] no
    F     drawn      1.0      1 [0, 2] yes      1 [0, 2] yes
    ====  =========  =======  ================  ==============
    """
    rows = [
        (1, 14, "A", "zero", 0.0, True, 10.0, 0.5, -1, 2, "passed", 1.0, -2, 3, "inconclusive"),
        (1, 14, "B", "small", 0.5, True, 10.0, 3.0, 1, 5, "passed", 2.0, -1, 4, "passed"),
        (1, 14, "C", "two_delta", 4.0, True, 10.0, 4.0, 2, 6, "flagged", 6.0, 5, 7, "flagged"),
        (2, 80, "D", "zero", 0.0, False, 30.0, -1.0, -3, -0.5, "inconclusive", 0.0, -1, 1,
         "flagged"),
        (2, 80, "E", "two_delta", 4.0, False, 30.0, 3.0, 1, 5, "inconclusive", 2.0, 0, 3,
         "flagged"),
        (2, 80, "F", "drawn", 1.0, False, 30.0, 1.0, 0, 2, "passed", 1.0, 0, 2, "passed"),
    ]  # fmt: skip
    return pd.DataFrame(rows, columns=list(ROW_COLUMNS))


def test_figures_by_hand() -> None:
    """Hand-computed from the table in :func:`_frame`:

    * gate 1 of 2 audits: 0.5, MCSE sqrt(0.25 / 2) = 0.35355;
    * posterior coverage over the passed fit (A, B, C): A and C, 2/3, MCSE
      sqrt((2/9) / 3) = 0.27217; over all fits: A, C, E, F, 4/6, MCSE sqrt((2/9) / 6) =
      0.19245; bootstrap: A, B, D, F, 4/6;
    * RMSE, posterior: errors 0.5, 2.5, 0, -1, -1, 0, mean square 8.5 / 6, root 1.19024;
      bootstrap: 1, 1.5, 2, 0, -2, 0, mean square 11.25 / 6, root 1.36931;
    * planted 0 flagged (A, D): Bayesian 0/2, bootstrap 1/2 (D); planted |gap| < δ/2
      passed (A, B, D): Bayesian 2/3 (A, B), bootstrap 1/3 (B); planted 2δ flagged
      (C, E): Bayesian 1/2 (C; E's fit missed the gate), bootstrap 2/2. F (drawn) is in
      no verdict rate;
    * median seconds per fit (10, 30): 20.
    """
    f = calibration_figures(_frame())
    assert (f["audits"], f["systems"]) == (2, 6)
    assert f["gate"] == Share(1, 2)
    assert f["gate"].se == pytest.approx(0.353553, abs=1e-6)
    assert f["coverage_passed"] == Share(2, 3)
    assert f["coverage_passed"].se == pytest.approx(0.272166, abs=1e-6)
    assert f["coverage_all"] == Share(4, 6)
    assert f["coverage_all"].se == pytest.approx(0.192450, abs=1e-6)
    assert f["coverage_boot"] == Share(4, 6)
    assert f["rmse_bayes"] == pytest.approx(1.190238, abs=1e-6)
    assert f["rmse_boot"] == pytest.approx(1.369306, abs=1e-6)
    rates = f["verdicts"]
    assert list(rates["bayes"]) == [Share(0, 2), Share(2, 3), Share(1, 2)]
    assert list(rates["boot"]) == [Share(1, 2), Share(1, 3), Share(2, 2)]
    assert f["seconds_median"] == 20.0


def test_summary_prints_the_hand_computed_figures() -> None:
    out = summarise(_frame(), name="gap", digits=3)
    assert "2 audits, 6 systems; gate passed in 0.500 ± 0.354 (n=2)" in out
    assert "covers gap, passed fits: 0.667 ± 0.272 (n=3)" in out
    assert "covers gap, all fits:    0.667 ± 0.192 (n=6)" in out
    assert "RMSE of gap, bayes: 1.190" in out and "RMSE of gap, boot: 1.369" in out
    lines = {line.split("  ")[0]: line.split() for line in out.splitlines()}
    assert lines["planted gap = 0 flagged (should be ~0)"][-3:] == ["0.000", "0.500", "2"]
    assert lines["planted |gap| < δ/2 passed (higher is better)"][-3:] == ["0.667", "0.333", "3"]
    assert lines["planted gap = 2δ flagged (higher is better)"][-3:] == ["0.500", "1.000", "2"]


def test_retries_are_counted_per_fit() -> None:
    """Audit 1 sampled once and passed; audit 2 needed the retry and still missed."""
    df = _frame().assign(attempts=lambda d: d["seed"].map({1: 1, 2: 2}))
    f = calibration_figures(df)
    assert (f["retried"], f["retried_passed"]) == (1, 0)
    assert "fits that needed the retry: 1 of 2 (0 passed the gate after it)" in summarise(df)
    assert calibration_figures(_frame())["retried"] is None  # no attempts column


def test_share_edges() -> None:
    assert str(Share(0, 0)) == "–" and math.isnan(Share(0, 0).p) and math.isnan(Share(0, 0).se)
    assert Share(3, 3).se == 0.0
    assert share(pd.Series([True, False, False, True])) == Share(2, 4)


def test_run_audits_alternates_sizes_keeps_rows_and_stops_on_time(tmp_path: Path) -> None:
    calls = []

    def fake(seed: int, size: int) -> pd.DataFrame:
        calls.append((seed, size))
        row = dict.fromkeys(ROW_COLUMNS, 0.0) | {"seed": seed, "n": size, "passed": True}
        return pd.DataFrame([row])

    out = tmp_path / "rows.csv"
    rows = run_audits(fake, audits=3, sizes=(14, 80), first_seed=7, out=out, stream=sys.stdout)
    assert calls == [(7, 14), (8, 80), (9, 14)]
    assert list(pd.read_csv(out)["seed"]) == [7, 8, 9] == list(rows["seed"])
    calls.clear()
    rows = run_audits(fake, audits=5, sizes=(1,), max_seconds=0.0, stream=sys.stdout)
    assert calls == [(0, 1)] and len(rows) == 1  # the first audit always runs


def test_planted_gaps_are_the_truth_and_cells_keep_their_trials() -> None:
    """The truth tables (computed independently of the planting) show the planted macro
    gaps; systems planted None keep the drawn one; every cell's trials over the 100
    dilemma rows add up to its pairs."""
    planted = [0.0, 0.5, 4.0, None]
    sim = simulate_counts(n_systems=4, pairs=80, gaps=planted, dilemmas=100, seed=5)
    free = simulate_counts(n_systems=4, pairs=80, dilemmas=100, seed=5)
    macro = sim.gap[sim.gap["group_type"] == "macro"].set_index("system")["gap_pp"]
    drawn = free.gap[free.gap["group_type"] == "macro"].set_index("system")["gap_pp"]
    np.testing.assert_allclose(macro.iloc[:3], planted[:3], atol=1e-9)
    assert macro.iloc[3] == pytest.approx(drawn.iloc[3], abs=1e-12)
    assert abs(drawn.iloc[0]) > 1e-3  # planting changed something
    cells = sim.counts.groupby(["system", "condition", "gender", "race"])
    trials = cells[["favor_trials", "against_trials"]].sum().sum(axis=1)
    assert (trials == 80).all() and sim.counts["dilemma"].nunique() == 100


def test_planting_refuses_a_wrong_length_or_an_impossible_gap() -> None:
    with pytest.raises(ValueError, match="one entry per system"):
        simulate_counts(n_systems=3, gaps=[0.0])
    with pytest.raises(ValueError, match="cannot be planted"):
        simulate_counts(n_systems=2, gaps=[500.0, None])


def test_summary_by_size_splits_the_audits() -> None:
    """Audit 1 (size 14) passed the gate and covers A and C of A, B, C; audit 2 (size 80)
    missed it and covers E and F of D, E, F (see :func:`_frame`)."""
    out = summarise_by_size(_frame(), name="gap")
    assert "all audits:\n2 audits, 6 systems; gate passed in 0.500" in out
    assert "audits of size 14:\n1 audits, 3 systems; gate passed in 1.000 ± 0.000 (n=1)" in out
    assert "audits of size 80:\n1 audits, 3 systems; gate passed in 0.000 ± 0.000 (n=1)" in out
    assert "covers gap, all fits:    0.667 ± 0.272 (n=3)" in out  # either size: 2 of 3
    assert out.count("covers gap, passed fits: –") == 1  # size 80: no fit passed
