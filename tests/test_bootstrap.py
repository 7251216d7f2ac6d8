"""Bootstrap SDs by resampling dilemmas (``cuegap.designs.dilemma.stats._bootstrap``).

Golden values come from two hand calculations and one brute-force oracle:

* Two dilemmas, one cell (man, Asian), system "s". The three distinct resamples
  (d1, d1), (d1, d2), (d2, d2) have probabilities 1/4, 1/2, 1/4.

      Direct   d1: favor 1/2, against 0/1     d2: favor 0/2, against 1/1
      Puzzled  d1: favor 2/2, against 0/1     d2: favor 0/2, against 0/1   (hard)

  Direct Favor  = 2/4, 1/4, 0    -> mean 0.25, values ±25 pp about it
  Direct Against = 0/2, 1/2, 2/2 -> ±50 pp;  Direct Net = +50, -25, -100 -> ±75 pp
  Puzzled Favor = 4/4, 2/4, 0/4, Against 0 -> Puzzled Net = +100, +50, 0
  Gap = Direct Net - Puzzled Net = -50, -75, -100 -> ±25 pp (paired: same resample)
  ΔAgainst = 0 - Direct Against = 0, -50, -100 pp;  ΔFavor = +50, +25, 0 pp

  A value m ± δ with probability 1/4 each and m with probability 1/2 has SD δ/√2, so the
  ideal bootstrap SDs are Favor 17.68, Against 35.36, Net 53.03, Gap 17.68,
  ΔAgainst 35.36, ΔFavor 17.68 pp. Were the two conditions resampled independently, the
  gap's SD would be √(53.03² + 35.36²) = 63.74 pp.

* A brute-force oracle: for three dilemmas, all 3³ = 27 equally likely ordered resamples
  are enumerated in plain Python (no cuegap code), giving the exact bootstrap distribution
  of every rate, with undefined rates dropped.

* Planted beta-binomial data, whose true sampling SD is known in closed form.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest

from cuegap.designs.dilemma.stats._bootstrap import bootstrap
from cuegap.designs.dilemma.stats._rates import (
    cue_visibility_gap,
    decision_bias,
    group_rates,
    macro_average,
)
from cuegap.schema import COUNT_COLUMNS

COLUMNS = list(COUNT_COLUMNS)  # the layout decision_counts returns


def _row(system, cond, diff, dilemma, gender, race, f, ft, a, at, cons=True) -> dict:
    return {
        "system": system,
        "condition": cond,
        "difficulty": diff,
        "consequences": cons,
        "prompt_variant": 0,
        "dilemma": dilemma,
        "topic_group": "t",
        "solution_shape": "orig",
        "gender": gender,
        "race": race,
        "recovered": None,
        "favor": f,
        "favor_trials": ft,
        "against": a,
        "against_trials": at,
    }


def _two_dilemmas() -> pd.DataFrame:
    rows = [
        _row("s", "direct", None, "d1", "man", "Asian", 1, 2, 0, 1),
        _row("s", "direct", None, "d2", "man", "Asian", 0, 2, 1, 1),
        _row("s", "puzzled", "hard", "d1", "man", "Asian", 2, 2, 0, 1),
        _row("s", "puzzled", "hard", "d2", "man", "Asian", 0, 2, 0, 1),
    ]
    return pd.DataFrame(rows, columns=COLUMNS)


def _sd_tolerance(values: np.ndarray, probs: np.ndarray, n_valid: int) -> float:
    """Six standard errors of a sample SD from ``n_valid`` draws of a discrete law.

    Var(s²) ≈ (μ4 − σ⁴)/n and s ≈ σ + (s² − σ²)/(2σ), so SE(s) ≈ √(μ4 − σ⁴)/(2σ√n).
    """
    mean = float(np.sum(probs * values))
    var = float(np.sum(probs * (values - mean) ** 2))
    if var < 1e-18:
        return 1e-9
    mu4 = float(np.sum(probs * (values - mean) ** 4))
    return 6 * math.sqrt(max(mu4 - var**2, 0.0)) / (2 * math.sqrt(var) * math.sqrt(n_valid))


@pytest.fixture(scope="module")
def two_dilemma_boot() -> dict[str, pd.DataFrame]:
    return bootstrap(_two_dilemmas(), n_boot=100_000, seed=7)


def test_two_dilemma_sds_match_hand_enumeration(two_dilemma_boot) -> None:
    """SDs converge to δ/√2 (docstring); tolerance 1% ≈ 6 SEs at n_boot = 100,000.

    For this three-point law the kurtosis is 2, so SE(s)/σ = 1/(2√n) = 0.16%.
    """
    g = two_dilemma_boot["group_rates"]
    for group_type in ("gender", "race", "intersection"):
        row = g[(g["condition"] == "direct") & (g["group_type"] == group_type)].iloc[0]
        assert row["favor_sd_pp"] == pytest.approx(25 / math.sqrt(2), rel=0.01)
        assert row["against_sd_pp"] == pytest.approx(50 / math.sqrt(2), rel=0.01)
        assert row["net_sd_pp"] == pytest.approx(75 / math.sqrt(2), rel=0.01)
        assert row["n_valid"] == 100_000
    puzzled = g[(g["condition"] == "puzzled") & (g["group"] == "man")].iloc[0]
    assert puzzled["against_sd_pp"] == 0.0  # 0 events in every resample
    assert puzzled["net_sd_pp"] == pytest.approx(50 / math.sqrt(2), rel=0.01)

    for table in ("gap", "macro_gap"):
        gap = two_dilemma_boot[table].iloc[0]
        assert gap["gap_sd_pp"] == pytest.approx(25 / math.sqrt(2), rel=0.01)
        assert gap["delta_against_sd_pp"] == pytest.approx(50 / math.sqrt(2), rel=0.01)
        assert gap["delta_favor_sd_pp"] == pytest.approx(25 / math.sqrt(2), rel=0.01)
        # Far from the unpaired value of 63.74 pp.
        assert gap["gap_sd_pp"] < 20
    macro = two_dilemma_boot["macro"]
    direct = macro[macro["condition"] == "direct"].iloc[0]
    assert direct["net_sd_pp"] == pytest.approx(75 / math.sqrt(2), rel=0.01)


def test_two_dilemma_percentile_interval(two_dilemma_boot) -> None:
    """Direct Net is -100 w.p. 1/4, -25 w.p. 1/2, +50 w.p. 1/4: both the 5% and the 95%
    quantile fall inside an extreme atom, so the 90% interval is exactly [-100, +50]; the
    gap (-100, -75, -50) likewise gives [-100, -50]."""
    g = two_dilemma_boot["group_rates"]
    row = g[(g["condition"] == "direct") & (g["group"] == "man")].iloc[0]
    assert (row["net_low_pp"], row["net_high_pp"]) == (-100.0, 50.0)
    gap = two_dilemma_boot["gap"].iloc[0]
    assert (gap["gap_low_pp"], gap["gap_high_pp"]) == (-100.0, -50.0)


def test_point_estimates_equal_rates_module() -> None:
    counts = _oracle_counts()
    out = bootstrap(counts, n_boot=50, seed=1)
    expected = pd.concat(
        [decision_bias(counts), group_rates(counts, by="intersection")], ignore_index=True
    )
    pd.testing.assert_frame_equal(out["group_rates"][expected.columns], expected)
    macro = macro_average(decision_bias(counts))
    pd.testing.assert_frame_equal(out["macro"][macro.columns], macro)
    rates = pd.concat(
        [decision_bias(counts), group_rates(counts, by="intersection")], ignore_index=True
    )
    gap = cue_visibility_gap(rates)
    pd.testing.assert_frame_equal(out["gap"][gap.columns], gap)
    macro_gap = cue_visibility_gap(macro)
    pd.testing.assert_frame_equal(out["macro_gap"][macro_gap.columns], macro_gap)


# --- brute-force oracle ---------------------------------------------------------------

ORACLE = {
    # (condition, difficulty, dilemma, gender, race): favor, favor_trials, against, trials
    ("direct", None, "d1", "man", "Asian"): (1, 2, 0, 2),
    ("direct", None, "d1", "woman", "Asian"): (0, 2, 1, 2),
    ("direct", None, "d2", "man", "Asian"): (2, 3, 0, 0),
    ("direct", None, "d2", "woman", "Black"): (0, 1, 0, 0),
    ("direct", None, "d3", "man", "Black"): (0, 1, 2, 3),
    ("direct", None, "d3", "woman", "Asian"): (1, 1, 0, 1),
    ("puzzled", "hard", "d1", "man", "Asian"): (0, 2, 2, 2),
    ("puzzled", "hard", "d1", "woman", "Asian"): (1, 2, 1, 2),
    ("puzzled", "hard", "d2", "man", "Asian"): (1, 3, 0, 0),
    ("puzzled", "hard", "d2", "woman", "Black"): (1, 1, 0, 0),
    ("puzzled", "hard", "d3", "man", "Black"): (0, 0, 1, 3),
    ("puzzled", "hard", "d3", "non-binary", "White"): (1, 2, 0, 0),
    ("puzzled", "hard", "d3", "woman", "Asian"): (0, 1, 1, 1),
}
ORACLE_DILEMMAS = ("d1", "d2", "d3")


def _oracle_counts() -> pd.DataFrame:
    rows = [_row("s", cond, diff, d, g, r, *vals) for (cond, diff, d, g, r), vals in ORACLE.items()]
    return pd.DataFrame(rows, columns=COLUMNS)


def _oracle_rates(resample: tuple[str, ...], cond: str, member) -> tuple[float, float]:
    f = ft = a = at = 0
    for d in resample:
        for (c, _, dd, g, r), (vf, vft, va, vat) in ORACLE.items():
            if c == cond and dd == d and member(g, r):
                f, ft, a, at = f + vf, ft + vft, a + va, at + vat
    fav = f / ft if ft else math.nan
    ag = a / at if at else math.nan
    return fav, ag


def _exact(values: list[float]) -> tuple[np.ndarray, np.ndarray]:
    """The defined values of equally likely resamples, each with its probability given that
    the value is defined (empty when it never is)."""
    arr = np.array([v for v in values if not math.isnan(v)])
    return arr, np.full(len(arr), 1 / max(len(arr), 1))


def _assert_sd(got: float, values: list[float], n_boot: int, what: object) -> None:
    """``got`` equals the exact SD of the defined values within 6 SEs (NaN if never defined)."""
    vals, probs = _exact(values)
    if len(vals) == 0:
        assert math.isnan(got), what
        return
    exact_sd = math.sqrt(np.sum(probs * (vals - np.sum(probs * vals)) ** 2))
    tol = _sd_tolerance(vals, probs, int(n_boot * len(vals) / len(values)))
    assert got == pytest.approx(exact_sd, abs=tol), what


def test_sds_match_brute_force_enumeration_with_undefined_resamples() -> None:
    """Every SD equals the exact one over the 27 resamples, within 6 SEs at n_boot = 100,000.

    Cells with zero trials in a resample (e.g. Against for Asian men when only d2 is drawn)
    are dropped from that statistic: the oracle conditions on the rate being defined, and
    ``n_valid`` must be close to 100,000 x (share of defined resamples).
    """
    n_boot = 100_000
    out = bootstrap(_oracle_counts(), n_boot=n_boot, seed=11)
    resamples = list(itertools.product(ORACLE_DILEMMAS, repeat=3))
    groups = {
        ("gender", "man"): lambda g, r: g == "man",
        ("gender", "woman"): lambda g, r: g == "woman",
        ("race", "Asian"): lambda g, r: r == "Asian",
        ("race", "Black"): lambda g, r: r == "Black",
        ("intersection", "man × Black"): lambda g, r: (g, r) == ("man", "Black"),
        # Present only under Puzzled, and with no Against trials at all: never defined.
        ("intersection", "non-binary × White"): lambda g, r: (g, r) == ("non-binary", "White"),
    }
    g = out["group_rates"]
    gap_table = out["gap"].set_index("group")
    checked = 0
    for (group_type, group), member in groups.items():
        per_cond = {}
        for cond in ("direct", "puzzled"):
            rows = g[(g["condition"] == cond) & (g["group"] == group)]
            if rows.empty:  # no cell of the group in this condition
                assert not any(c == cond and member(gg, r) for c, _, _, gg, r in ORACLE)
                continue
            row = rows.iloc[0]
            assert row["group_type"] == group_type
            draws = [_oracle_rates(rs, cond, member) for rs in resamples]
            per_cond[cond] = draws
            fav = [100 * d[0] for d in draws]
            ag = [100 * d[1] for d in draws]
            net = [x - y for x, y in zip(fav, ag, strict=True)]
            for name, values in (("favor", fav), ("against", ag), ("net", net)):
                _assert_sd(row[f"{name}_sd_pp"], values, n_boot, (group, cond, name))
                checked += 1
            net_share = sum(not math.isnan(v) for v in net) / len(net)
            sd_share = math.sqrt(net_share * (1 - net_share) / n_boot)
            assert row["n_valid"] / n_boot == pytest.approx(net_share, abs=6 * sd_share + 1e-12)
        if len(per_cond) < 2:
            assert group not in gap_table.index
            continue
        gap = [
            100 * (de[0] - de[1]) - 100 * (pu[0] - pu[1])
            for de, pu in zip(per_cond["direct"], per_cond["puzzled"], strict=True)
        ]
        _assert_sd(gap_table.loc[group, "gap_sd_pp"], gap, n_boot, group)
        checked += 1
    assert checked == 5 * (2 * 3 + 1) + 3
    # Against for Asian men is defined only when d1 is drawn: 1 - (2/3)^3 = 19/27.
    row = g[(g["condition"] == "direct") & (g["group"] == "man × Asian")].iloc[0]
    assert row["n_valid"] / n_boot == pytest.approx(19 / 27, abs=0.006)


def test_macro_replicate_skips_undefined_groups() -> None:
    """Oracle for the macro Net: mean over the gender and race groups defined in a resample."""
    n_boot = 100_000
    out = bootstrap(_oracle_counts(), n_boot=n_boot, seed=5)
    members = [
        lambda g, r: g == "man",
        lambda g, r: g == "woman",
        lambda g, r: r == "Asian",
        lambda g, r: r == "Black",
    ]
    nets = []
    for rs in itertools.product(ORACLE_DILEMMAS, repeat=3):
        defined = []
        for m in members:
            fav, ag = _oracle_rates(rs, "direct", m)
            if not (math.isnan(fav) or math.isnan(ag)):
                defined.append(100 * (fav - ag))
        nets.append(sum(defined) / len(defined) if defined else math.nan)
    macro = out["macro"]
    row = macro[macro["condition"] == "direct"].iloc[0]
    # (d2, d2, d2) has no Against trial at all: the macro Net is undefined w.p. 1/27.
    assert sum(math.isnan(v) for v in nets) == 1
    assert row["n_valid"] / n_boot == pytest.approx(26 / 27, abs=0.003)
    _assert_sd(row["net_sd_pp"], nets, n_boot, "macro net")


# --- properties -----------------------------------------------------------------------


def _random_counts(seed: int, systems: int = 3, dilemmas: int = 12) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    settings = [("direct", None), ("puzzled", "easy"), ("puzzled", "hard")]
    for s in range(systems):
        for d in range(dilemmas):
            for cond, diff in settings:
                for g in ("man", "woman", "non-binary"):
                    for r in ("Asian", "Black", "White"):
                        ft = int(rng.integers(0, 3))
                        at = 2 - ft
                        f = int(rng.binomial(ft, 0.3))
                        a = int(rng.binomial(at, 0.2))
                        rows.append(_row(f"sys{s}", cond, diff, f"d{d}", g, r, f, ft, a, at))
    return pd.DataFrame(rows, columns=COLUMNS)


def test_seeded_reproducibility_and_seed_sensitivity() -> None:
    counts = _random_counts(0)
    a = bootstrap(counts, n_boot=200, seed=3)
    b = bootstrap(counts, n_boot=200, seed=3)
    c = bootstrap(counts, n_boot=200, seed=4)
    for name in a:
        pd.testing.assert_frame_equal(a[name], b[name])
    assert not np.allclose(a["gap"]["gap_sd_pp"], c["gap"]["gap_sd_pp"])


def test_row_order_and_other_systems_change_nothing() -> None:
    counts = _random_counts(1)
    a = bootstrap(counts, n_boot=200, seed=3)
    shuffled = counts.sample(frac=1, random_state=9).reset_index(drop=True)
    b = bootstrap(shuffled, n_boot=200, seed=3)
    for name in a:
        pd.testing.assert_frame_equal(a[name], b[name])
    alone = bootstrap(counts[counts["system"] == "sys1"], n_boot=200, seed=3)
    for name in a:
        full = a[name][a[name]["system"] == "sys1"].reset_index(drop=True)
        pd.testing.assert_frame_equal(full, alone[name])


def test_same_data_in_both_conditions_gives_zero_gap_sd() -> None:
    """Paired resampling: identical Direct and Puzzled data make every replicate's gap 0."""
    counts = _random_counts(2, systems=1)
    direct = counts[counts["condition"] == "direct"]
    twin = direct.assign(condition="puzzled", difficulty="hard")
    out = bootstrap(pd.concat([direct, twin], ignore_index=True), n_boot=300, seed=1)
    gap = out["gap"].dropna(subset=["gap_sd_pp"])
    assert len(gap) > 0
    assert (gap["gap_sd_pp"] == 0).all() and (gap["gap_pp"] == 0).all()
    assert (out["macro_gap"]["gap_sd_pp"] == 0).all()
    assert (out["group_rates"]["net_sd_pp"].dropna() > 0).any()


def test_bootstrap_sd_tracks_true_sampling_sd_of_clustered_rate() -> None:
    """Planted data: the bootstrap SD estimates the true SD, the naive binomial SD does not.

    Each of n = 100 dilemmas has its own favor probability p_d ~ Beta(1, 4) (mean μ = 0.2)
    and two cells of "man" (Asian, Black) with 2 favor trials each, so t = 4 trials per
    dilemma share p_d. The favor count of a dilemma is beta-binomial, and the rate
    R = ΣF_d / (n t) has
        Var(R) = μ(1 − μ)(α + β + t) / ((α + β + 1) n t) = 0.16 · 9 / (6 · 400) = 0.0006,
    SD 2.449 pp, whereas the binomial SD that ignores the clustering is √(0.16/400) = 2.0 pp.
    Over 30 planted data sets the mean bootstrap SD must be within 6% of 2.449 pp (about
    4 standard errors: ~8% spread per data set, ~3.5% Monte Carlo error at 400 replicates).
    """
    n, t, alpha, beta = 100, 4, 1.0, 4.0
    mu = alpha / (alpha + beta)
    true_sd = 100 * math.sqrt(mu * (1 - mu) * (alpha + beta + t) / ((alpha + beta + 1) * n * t))
    rng = np.random.default_rng(2026)
    # The closed form, checked by simulating 20,000 data sets directly.
    p = rng.beta(alpha, beta, size=(20_000, n))
    sim = rng.binomial(t, p).sum(axis=1) / (n * t)
    assert 100 * sim.std() == pytest.approx(true_sd, rel=0.02)

    sds = []
    for _ in range(30):
        p_d = rng.beta(alpha, beta, size=n)
        rows = []
        for d in range(n):
            for race in ("Asian", "Black"):
                f = int(rng.binomial(2, p_d[d]))
                rows.append(_row("s", "direct", None, f"d{d}", "man", race, f, 2, 0, 1))
        out = bootstrap(pd.DataFrame(rows, columns=COLUMNS), n_boot=400, seed=len(sds))
        g = out["group_rates"]
        sds.append(g.loc[g["group"] == "man", "favor_sd_pp"].iloc[0])
    mean_sd = float(np.mean(sds))
    assert mean_sd == pytest.approx(true_sd, rel=0.06)
    assert abs(mean_sd - 2.0) > 0.25  # the cell-level binomial SD is clearly off


# --- errors ---------------------------------------------------------------------------


def test_errors_name_the_argument() -> None:
    counts = _two_dilemmas()
    with pytest.raises(ValueError, match="needs columns dilemma"):
        bootstrap(counts.drop(columns=["dilemma"]))
    with pytest.raises(ValueError, match="n_boot must be an integer >= 2"):
        bootstrap(counts, n_boot=1)
    with pytest.raises(ValueError, match="level should be in the interval"):
        bootstrap(counts, level=1.5)
    with pytest.raises(ValueError, match="keys must include 'difficulty'"):
        bootstrap(counts, keys=("system", "condition"))
    with pytest.raises(ValueError, match="empty"):
        bootstrap(counts.iloc[:0])
    with pytest.raises(ValueError, match="'dilemma' has missing values"):
        bootstrap(counts.assign(dilemma=[None, "d2", "d1", "d2"]))
    with pytest.raises(TypeError, match="DataFrame"):
        bootstrap(counts.to_dict())  # type: ignore[arg-type]
