"""The Nemenyi post-hoc between systems' ranks across prompt combinations (pv_nemenyi).

Golden values: Demšar (2006), "Statistical comparisons of classifiers over multiple data
sets", JMLR 7, §3.2.2: four classifiers on 14 data sets with average ranks C4.5 3.143,
C4.5+m 2.000, C4.5+cf 2.893, C4.5+m+cf 1.964; critical difference CD = 1.25 at α = 0.05
(q = 2.569) and 1.12 at α = 0.10 (q = 2.291). The paper: no pair differs at 0.05, and
C4.5+m and C4.5+m+cf are significantly better than C4.5 at 0.10. The rank matrix below is
ours, built to have exactly those average ranks (Nemenyi depends on them only).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from cuegap.designs.prompt_variance.stats import nemenyi_cd, pv_nemenyi

NAMES = ["C4.5", "C4.5+m", "C4.5+cf", "C4.5+m+cf"]
RANKS = [
    [4.0, 2.0, 3.0, 1.0], [2.0, 2.0, 2.0, 4.0], [4.0, 2.5, 2.5, 1.0], [3.0, 2.0, 4.0, 1.0],
    [2.0, 1.0, 3.0, 4.0], [3.0, 4.0, 1.0, 2.0], [4.0, 1.0, 3.0, 2.0], [3.5, 1.0, 3.5, 2.0],
    [2.5, 1.0, 4.0, 2.5], [1.0, 2.0, 4.0, 3.0], [4.0, 1.5, 3.0, 1.5], [3.5, 3.5, 2.0, 1.0],
    [3.5, 1.5, 3.5, 1.5], [4.0, 3.0, 2.0, 1.0],
]  # fmt: skip


def _demsar(transform=lambda r: r, metric: str = "m") -> pd.DataFrame:
    """Demšar's example as a per-run score table: the 14 data sets are the blocks
    (combinations of a factor), the classifiers the systems, one replicate."""
    rows = [
        {"system": name, "category": "all", "metric": metric, "fmt": f"d{j:02d}",
         "replicate": 0, "score": transform(r[i])}
        for j, r in enumerate(RANKS) for i, name in enumerate(NAMES)
    ]  # fmt: skip
    return pd.DataFrame(rows)


def test_critical_difference_matches_demsar() -> None:
    assert nemenyi_cd(4, 14) == pytest.approx(1.25, abs=0.005)
    assert nemenyi_cd(4, 14, alpha=0.10) == pytest.approx(1.12, abs=0.005)
    # q_α of Demšar's Table 5 (α = 0.05, k = 2..10), i.e. CD with k(k+1)/(6n) = 1
    q05 = [1.960, 2.343, 2.569, 2.728, 2.850, 2.949, 3.031, 3.102, 3.164]
    for k, q in enumerate(q05, start=2):
        assert nemenyi_cd(k, k * (k + 1) / 6) == pytest.approx(q, abs=0.0015), k


def test_demsar_example_pairs() -> None:
    out = pv_nemenyi(_demsar(), factors="fmt", direction={"m": "low"}).set_index(
        ["system_a", "system_b"]
    )
    assert len(out) == 6 and (out["n_combinations"] == 14).all()
    ranks = dict(zip(NAMES, [3.143, 2.000, 2.893, 1.964], strict=True))
    for (a, b), r in out.iterrows():
        assert r["mean_rank_a"] == pytest.approx(ranks[a], abs=5e-4)
        assert r["rank_diff"] == pytest.approx(ranks[a] - ranks[b], abs=1e-3)
        assert r["cd"] == pytest.approx(1.25, abs=0.005)
    assert not out["significant"].any()  # "the post-hoc test is not powerful enough"
    for pair in [("C4.5", "C4.5+m"), ("C4.5", "C4.5+m+cf")]:  # significant at 0.10 only
        assert 0.05 < out.loc[pair, "p"] < 0.10, pair
    others = out.drop([("C4.5", "C4.5+m"), ("C4.5", "C4.5+m+cf")])
    assert (others["p"] > 0.10).all()


def test_two_systems_reduce_to_a_normal_test() -> None:
    """With k = 2 systems the studentized range of two standard normals is √2 |Z|, so
    p = 2 Φ(−|R̄_x − R̄_y| / √(1/n)) (hand formula); system x is first in a of n blocks,
    so |R̄_x − R̄_y| = |n − 2a| / n."""
    from scipy.stats import norm

    n = 24
    for a in (0, 3, 12):
        rows = [{"system": s, "category": "c", "metric": "m", "fmt": f"b{j}", "replicate": 0,
                 "score": float((s == "x") == (j < a))}
                for j in range(n) for s in ("x", "y")]  # fmt: skip
        out = pv_nemenyi(pd.DataFrame(rows), factors="fmt", direction={"m": "high"})
        diff = abs(n - 2 * a) / n
        z = diff / np.sqrt(2 * 3 / (6 * n))
        assert out["p"].iloc[0] == pytest.approx(2 * norm.sf(z), rel=1e-4, abs=1e-9), a


def test_direction_abs_ranks_by_magnitude_and_drops_incomplete_combinations() -> None:
    # |score| ascending is fairest for BBQ scores: a negative score can rank first.
    df = _demsar(lambda r: -(r - 0.5) if r % 2 else r - 0.5, metric="s_bbq_dis")
    base = pv_nemenyi(_demsar(), factors="fmt", direction={"m": "low"})
    out = pv_nemenyi(df, factors="fmt")
    assert np.allclose(out["p"], base["p"]) and np.allclose(out["mean_rank_a"], base["mean_rank_a"])
    gap = df[~((df["fmt"] == "d00") & (df["system"] == "C4.5"))]
    assert (pv_nemenyi(gap, factors="fmt")["n_combinations"] == 13).all()


def test_too_few_systems_give_no_rows_and_bad_arguments_are_named() -> None:
    one = _demsar()[lambda d: d["system"] == "C4.5"]
    assert pv_nemenyi(one, factors="fmt", direction={"m": "low"}).empty
    with pytest.raises(ValueError, match="alpha should be in the interval"):
        pv_nemenyi(_demsar(), factors="fmt", alpha=1.5)
    with pytest.raises(ValueError, match="by must include 'metric'"):
        pv_nemenyi(_demsar(), factors="fmt", by=["category"])
    with pytest.raises(ValueError, match="no rank direction for metric 'm'"):
        pv_nemenyi(_demsar(), factors="fmt")
