"""The QA report's methods text says which pooling levels a Bayesian fit has and why the
others were left out (issue 27: one system cannot inform the learnt SDs)."""

from __future__ import annotations

from types import SimpleNamespace

import pandas as pd

from cuegap.designs.qa._report_context import _bayes_model
from cuegap.designs.qa.stats._bayes_data import prepare_qa_counts
from cuegap.designs.qa.stats._bayes_model import qa_levels_table
from cuegap.designs.qa.stats._sim import planted_qa_counts
from cuegap.reports._render import environment


def _levels(gaps: list) -> pd.DataFrame:
    counts, _ = planted_qa_counts(gaps, n=30, dimensions=("age", "gender", "race"), subgroups=2)
    return qa_levels_table(prepare_qa_counts(counts))


def _methods(bayes_model: dict | None) -> str:
    html = (
        environment()
        .get_template("partials/_qa_appendix.html.j2")
        .render(
            quality=[],
            agreement=None,
            target_loc=[],
            versions=[],
            bayes_model=bayes_model,
            provenance={"banks": [], "batches": [], "quarantine": []},
            policy={"n_boot": 2000, "delta": "0.05", "probability": "0.95", "min_parsable": 0},
        )
    )
    return " ".join(html.split())


def test_one_system_fit_names_the_levels_it_left_out() -> None:
    model = _bayes_model(SimpleNamespace(bayes={"qa_bayes_levels": _levels([None])}))
    assert model["kept"] == "fixed-scale group"
    assert [d["level"] for d in model["dropped"]] == ["dimension", "sub-group", "system × cell"]
    text = _methods(model)
    assert "Levels in this fit: fixed-scale group." in text
    assert "The system × cell level was left out (fixed at zero): one system: a learnt SD" in text


def test_several_systems_keep_the_learnt_levels() -> None:
    model = _bayes_model(SimpleNamespace(bayes={"qa_bayes_levels": _levels([None, 0.0])}))
    assert model["kept"] == "dimension, sub-group, system × cell"
    assert [d["level"] for d in model["dropped"]] == ["fixed-scale group"]


def test_no_fit_or_an_older_fit_prints_no_levels_paragraph() -> None:
    assert _bayes_model(SimpleNamespace(bayes=None)) is None
    assert _bayes_model(SimpleNamespace(bayes={"qa_bayes_gap": pd.DataFrame()})) is None
    assert 'id="qa-bayes-levels"' not in _methods(None)
