"""Rank discordance across prompt combinations (``pv_rank_discordance``, ``kendall_w``).

Hand calculations of Kendall's W (m raters × n objects, W = 12 S / (m²(n³ − n) − m ΣT)):

* no ties, m = 3, n = 4, ranks (1,2,3,4), (1,3,2,4), (2,1,3,4):
  R = (4, 6, 8, 12), mean 7.5, S = 12.25 + 2.25 + 0.25 + 20.25 = 35,
  W = 12·35 / (9·60) = 420/540 = 7/9.
* ties, ranks (1,2,3,4), (1.5,1.5,3,4), (1,2,3.5,3.5):
  R = (3.5, 5.5, 9.5, 11.5), S = 16 + 4 + 4 + 16 = 40, ΣT = (2³ − 2) + (2³ − 2) = 12,
  W = 480 / (540 − 36) = 480/504 = 20/21.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from cuegap.designs.prompt_variance.stats import kendall_w, pv_rank_discordance


def test_kendall_w_by_hand() -> None:
    assert kendall_w(np.array([[1, 2, 3, 4], [1, 3, 2, 4], [2, 1, 3, 4]])) == pytest.approx(7 / 9)
    tied = np.array([[1, 2, 3, 4], [1.5, 1.5, 3, 4], [1, 2, 3.5, 3.5]])
    assert kendall_w(tied) == pytest.approx(20 / 21)
    assert kendall_w(np.array([[1, 2, 3], [1, 2, 3]])) == pytest.approx(1.0)
    assert kendall_w(np.array([[1, 2], [2, 1]])) == pytest.approx(0.0)
    assert np.isnan(kendall_w(np.array([[1.5, 1.5], [1.5, 1.5]])))
    assert np.isnan(kendall_w(np.array([[1, 2, 3]])))


def _scores(means: dict[str, list[float]], metric: str, reps: int = 3) -> pd.DataFrame:
    """Replicates ± a small symmetric offset around the given combination means."""
    off = np.linspace(-0.001, 0.001, reps) if reps > 1 else np.zeros(1)
    rows = [
        ("c", metric, sysname, f"f{j}", r, m + off[r])
        for sysname, ms in means.items()
        for j, m in enumerate(ms)
        for r in range(reps)
    ]
    cols = ["category", "metric", "system", "fmt", "replicate", "score"]
    return pd.DataFrame(rows, columns=cols)


def test_rank_direction_bbq_abs_ascending() -> None:
    """BBQ: closest to 0 ranks first, whatever the sign."""
    out = pv_rank_discordance(
        _scores({"a": [-0.01, 0.3], "b": [0.05, -0.02], "c": [-0.2, 0.1]}, "s_bbq_dis"),
        factors="fmt",
    )
    ranks = out.ranks.set_index(["system", "combination"])["rank"]
    assert [ranks["a", "f0"], ranks["b", "f0"], ranks["c", "f0"]] == [1, 2, 3]
    assert [ranks["a", "f1"], ranks["b", "f1"], ranks["c", "f1"]] == [3, 1, 2]
    sys = out.systems.set_index("system")
    assert sys.loc["a", "rank_range"] == 2 and sys.loc["b", "rank_range"] == 1
    assert sys.loc["a", "best_combination"] == "f0" and sys.loc["a", "worst_combination"] == "f1"


def test_rank_direction_difference_awareness_descending() -> None:
    out = pv_rank_discordance(
        _scores({"a": [0.9, 0.2], "b": [0.5, 0.6], "c": [0.1, 0.7]}, "s_diffaware"), factors="fmt"
    )
    ranks = out.ranks.set_index(["system", "combination"])["rank"]
    assert [ranks["a", "f0"], ranks["b", "f0"], ranks["c", "f0"]] == [1, 2, 3]
    assert [ranks["a", "f1"], ranks["b", "f1"], ranks["c", "f1"]] == [3, 2, 1]
    summary = out.summary.iloc[0]
    assert summary["tau_b_min"] == pytest.approx(-1.0)
    assert summary["kendall_w"] == pytest.approx(0.0)
    assert summary["max_rank_range"] == 2


def test_against_scipy_friedman_and_kendalltau() -> None:
    rng = np.random.default_rng(4)
    base = rng.normal(0, 0.1, 6)
    # Rounded to 2 decimals so that |s| ties occur.
    means = {f"s{i}": list(np.round(base[i] + rng.normal(0, 0.05, 8), 2)) for i in range(6)}
    out = pv_rank_discordance(_scores(means, "s_bbq_amb", reps=1), factors="fmt")
    wide = np.abs(np.array([means[f"s{i}"] for i in range(6)]))  # systems × combinations
    chi2, p = stats.friedmanchisquare(*wide)
    summary = out.summary.iloc[0]
    assert summary["friedman_chi2"] == pytest.approx(chi2, rel=1e-9)
    assert summary["friedman_p"] == pytest.approx(p, rel=1e-7)
    ranks = np.array([stats.rankdata(wide[:, j]) for j in range(8)])
    assert summary["kendall_w"] == pytest.approx(kendall_w(ranks))
    taus = [
        stats.kendalltau(wide[:, a], wide[:, b]).statistic
        for a in range(8)
        for b in range(a + 1, 8)
    ]
    np.testing.assert_allclose(np.sort(out.pairs["tau_b"]), np.sort(taus))
    assert summary["tau_b_median"] == pytest.approx(np.median(taus))
    assert summary["share_tau_negative"] == pytest.approx(np.mean(np.array(taus) < 0))
    assert len(out.pairs) == 28 and summary["n_combinations"] == 8


def test_incomplete_combinations_are_dropped_and_groups_split() -> None:
    df = pd.concat(
        [
            _scores({"a": [0.1, 0.2, 0.3], "b": [0.2, 0.1, 0.4]}, "s_bbq_dis"),
            _scores({"a": [0.5, 0.6, 0.7], "b": [0.6, 0.5, 0.8]}, "s_ctxtaware"),
        ]
    )
    df = df[~((df["system"] == "b") & (df["fmt"] == "f2") & (df["metric"] == "s_bbq_dis"))]
    out = pv_rank_discordance(df, factors="fmt")
    n = out.summary.set_index("metric")["n_combinations"]
    assert n["s_bbq_dis"] == 2 and n["s_ctxtaware"] == 3


def test_unknown_metric_needs_a_direction() -> None:
    df = _scores({"a": [0.1, 0.2], "b": [0.3, 0.0]}, "my_gap")
    with pytest.raises(ValueError, match="no rank direction for metric 'my_gap'"):
        pv_rank_discordance(df, factors="fmt")
    out = pv_rank_discordance(df, factors="fmt", direction={"my_gap": "low"})
    ranks = out.ranks.set_index(["system", "combination"])["rank"]
    assert ranks["a", "f0"] == 1 and ranks["b", "f1"] == 1
