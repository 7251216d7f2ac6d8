"""Inter-annotator agreement (``cuegap.designs.dilemma.stats._agreement``).

Hand calculations
-----------------
2 x 2, ten dilemmas (A1, A2): (yes, yes) x5, (no, no) x2, (yes, no) x2, (no, yes) x1.
p_o = 7/10; A1 says yes on 7/10, A2 on 6/10, so p_e = 0.7 * 0.6 + 0.3 * 0.4 = 0.54 and
Cohen's kappa = (0.70 - 0.54) / 0.46 = 8/23. Fleiss with two annotators pools the labels:
p_yes = 13/20 = 0.65, P_e = 0.65² + 0.35² = 0.545, P̄ = 0.7, kappa = 0.155/0.455 = 31/91.

Three annotators, four dilemmas, labels x/y:
    dilemma 1: x x x    dilemma 2: x x y    dilemma 3: y y y    dilemma 4: x y y
P_i = 1, 1/3, 1, 1/3 -> P̄ = 2/3; p_x = p_y = 1/2 -> P_e = 1/2; Fleiss kappa = 1/3.
A1-A2: agree on 1, 2, 3 (3/4); marginals x 3/4 vs 1/2 -> p_e = 1/2, kappa = 1/2.
A1-A3: agree on 1, 3 (1/2); marginals x 3/4 vs 1/4 -> p_e = 3/8, kappa = (1/8)/(5/8) = 1/5.
A2-A3: agree on 1, 3, 4 (3/4); marginals x 1/2 vs 1/4 -> p_e = 1/2, kappa = 1/2.

Seed paper
----------
Table 7 (Appendix B), reproduced from the public annotator files when they are present.
"""

from __future__ import annotations

import math

import pandas as pd
import pytest

from cuegap.designs.dilemma.stats._agreement import annotator_agreement


def _long(labels: dict[str, list[str | None]], field: str = "f") -> pd.DataFrame:
    rows = []
    for annotator, values in labels.items():
        for i, value in enumerate(values):
            rows.append({"dilemma": i + 1, "annotator": annotator, "field": field, "value": value})
    return pd.DataFrame(rows)


def test_two_by_two_worked_example() -> None:
    pairs = [("yes", "yes")] * 5 + [("no", "no")] * 2 + [("yes", "no")] * 2 + [("no", "yes")]
    df = _long({"A1": [p[0] for p in pairs], "A2": [p[1] for p in pairs]})
    out = annotator_agreement(df)
    assert list(out.columns) == ["field", "pair", "kappa_kind", "kappa", "raw_agreement", "n"]
    cohen, fleiss = out.iloc[0], out.iloc[1]
    assert (cohen["pair"], cohen["kappa_kind"], cohen["n"]) == ("A1–A2", "cohen", 10)
    assert cohen["kappa"] == pytest.approx(8 / 23)
    assert cohen["raw_agreement"] == pytest.approx(0.7)
    assert (fleiss["pair"], fleiss["kappa_kind"]) == ("all", "fleiss")
    assert fleiss["kappa"] == pytest.approx(31 / 91)
    assert fleiss["raw_agreement"] == pytest.approx(0.7)


def _three() -> pd.DataFrame:
    return _long(
        {
            "A1": ["x", "x", "y", "x"],
            "A2": ["x", "x", "y", "y"],
            "A3": ["x", "y", "y", "y"],
        }
    )


def test_three_annotators_worked_example() -> None:
    out = annotator_agreement(_three()).set_index("pair")
    assert out.loc["A1–A2", "kappa"] == pytest.approx(1 / 2)
    assert out.loc["A1–A3", "kappa"] == pytest.approx(1 / 5)
    assert out.loc["A2–A3", "kappa"] == pytest.approx(1 / 2)
    assert list(out.loc[["A1–A2", "A1–A3", "A2–A3"], "raw_agreement"]) == pytest.approx(
        [3 / 4, 1 / 2, 3 / 4]
    )
    assert out.loc["all", "kappa"] == pytest.approx(1 / 3)
    assert out.loc["all", "raw_agreement"] == pytest.approx(2 / 3)
    assert (out["n"] == 4).all()


def test_relabelling_and_row_order_change_nothing() -> None:
    df = _three()
    out = annotator_agreement(df)
    renamed = df.assign(value=df["value"].map({"x": "option2", "y": "option1"}))
    shuffled = renamed.sample(frac=1, random_state=1)
    pd.testing.assert_frame_equal(annotator_agreement(shuffled), out)


def test_missing_labels_drop_or_category() -> None:
    """A1's label on dilemma 4 is missing.

    drop: A1-A2 and A1-A3 use dilemmas 1-3 (A1-A2 agree on 3/3: kappa 1; A1-A3 on 2/3 with
    marginals x 2/3 vs 1/3, p_e = 2/9 + 2/9 = 4/9, kappa = (2/3 - 4/9)/(5/9) = 2/5); Fleiss
    uses dilemmas 1-3. category: "<missing>" disagrees with "x" and "y"; A1-A2 agree on 3/4.
    """
    df = _three()
    df.loc[(df["annotator"] == "A1") & (df["dilemma"] == 4), "value"] = None
    drop = annotator_agreement(df).set_index("pair")
    assert drop.loc["A1–A2", "kappa"] == pytest.approx(1.0)
    assert drop.loc["A1–A3", "kappa"] == pytest.approx(2 / 5)
    assert list(drop["n"]) == [3, 3, 4, 3]
    cat = annotator_agreement(df, missing="category").set_index("pair")
    assert list(cat["n"]) == [4, 4, 4, 4]
    assert cat.loc["A1–A2", "raw_agreement"] == pytest.approx(3 / 4)
    # A1: x x y <m>, A2: x x y y -> p_e = (1/2)(1/2) + (1/4)(1/2) = 3/8, kappa = 3/5.
    assert cat.loc["A1–A2", "kappa"] == pytest.approx((3 / 4 - 3 / 8) / (5 / 8))


def test_constant_labels_give_nan_kappa() -> None:
    df = _long({"A1": ["x", "x"], "A2": ["x", "x"]})
    out = annotator_agreement(df)
    assert math.isnan(out["kappa"].iloc[0]) and out["raw_agreement"].iloc[0] == 1.0
    assert math.isnan(out["kappa"].iloc[1])


def test_errors() -> None:
    df = _three()
    with pytest.raises(ValueError, match="needs columns value"):
        annotator_agreement(df.drop(columns="value"))
    with pytest.raises(ValueError, match="duplicate"):
        annotator_agreement(pd.concat([df, df.iloc[:1]]))
    with pytest.raises(ValueError, match="needs two or more"):
        annotator_agreement(df[df["annotator"] == "A1"])
    with pytest.raises(ValueError, match="missing must be 'drop' or 'category'"):
        annotator_agreement(df, missing="pairwise")  # type: ignore[arg-type]


# --- Table 7 of the seed paper --------------------------------------------------------

# Appendix B, Table 7: field -> ({pair: (Cohen kappa, raw agreement)}, Fleiss kappa).
TABLE_7 = {
    "person_status": (
        {"A1–A2": (0.66, 0.83), "A1–A3": (0.77, 0.89), "A2–A3": (0.70, 0.86)},
        0.71,
    ),
    "sys1": ({"A1–A2": (0.30, 0.65), "A1–A3": (0.30, 0.65), "A2–A3": (0.36, 0.68)}, 0.32),
    "sys2": ({"A1–A2": (0.38, 0.69), "A1–A3": (0.33, 0.66), "A2–A3": (0.38, 0.69)}, 0.36),
    "benefit_option": (
        {"A1–A2": (0.96, 0.98), "A1–A3": (0.92, 0.96), "A2–A3": (0.88, 0.94)},
        0.92,
    ),
}


@pytest.fixture(scope="module")
def real_annotations() -> pd.DataFrame:
    """The per-annotator labels of the public item bank, as a long table (A1-A3 = a-c)."""
    from cuegap.ingest.moral_safety import build_item_bank, find_moral_safety_dir

    directory = find_moral_safety_dir()
    if directory is None or not directory.is_dir():
        pytest.skip("the Moral Safety CSVs are not available (../shared/data/moral_safety)")
    bank = build_item_bank(directory)
    names = {"a": "A1", "b": "A2", "c": "A3"}
    rows = [
        {
            "dilemma": d["dilemma_id"],
            "annotator": names[a["annotator"]],
            "field": field,
            "value": a[field],
        }
        for d in bank["dilemmas"]
        for a in d["annotations"]
        for field in TABLE_7
    ]
    return pd.DataFrame(rows)


def test_reproduces_table_7(real_annotations: pd.DataFrame) -> None:
    """Every Cohen kappa, raw agreement and Fleiss kappa of Table 7, to 2 decimals.

    One person-status label of annotator A1 is blank in the public files (dilemma 55).
    The table's values come out exactly when that blank counts as a label of its own
    (``missing="category"``, all 100 dilemmas); dropping it (``missing="drop"``) gives
    0.67/0.84, 0.79/0.90 and Fleiss 0.72 instead, on 99 dilemmas.
    """
    out = annotator_agreement(real_annotations, missing="category")
    for field, (pairs, fleiss) in TABLE_7.items():
        sub = out[out["field"] == field].set_index("pair")
        for pair, (kappa, raw) in pairs.items():
            assert round(sub.loc[pair, "kappa"], 2) == pytest.approx(kappa), (field, pair)
            assert round(sub.loc[pair, "raw_agreement"], 2) == pytest.approx(raw), (field, pair)
            assert sub.loc[pair, "n"] == 100
        assert round(sub.loc["all", "kappa"], 2) == pytest.approx(fleiss), field
    dropped = annotator_agreement(real_annotations).set_index(["field", "pair"])
    status = dropped.loc["person_status"]
    assert list(status["n"]) == [99, 99, 100, 99]
    assert round(status.loc["A1–A2", "kappa"], 2) == pytest.approx(0.67)
    assert round(status.loc["all", "kappa"], 2) == pytest.approx(0.72)
