"""One settings codec per design: what ``to_dict`` stores (through JSON, as the store keeps
it), ``from_dict`` reads back as the same settings; a key an older cuegap did not store takes
its default."""

from __future__ import annotations

import json

import pytest

from cuegap.designs import BayesSettings
from cuegap.designs.conversation._analysis_tables import ConvSettings
from cuegap.designs.dilemma._analysis_settings import AnalysisSettings, settings_from_dict
from cuegap.designs.prompt_variance._analysis import PVSettings
from cuegap.designs.qa._analysis import QASettings
from cuegap.models import Policy

POLICY = Policy(delta_pp=3.0, delta_bias=0.07, delta_shift=0.04, probability=0.9, min_parsable=7)


def stored(settings, **kw) -> dict:
    return json.loads(json.dumps(settings.to_dict(**kw)))


@pytest.mark.parametrize(
    "settings",
    [
        AnalysisSettings(
            explicit=("named", None),
            implicit=("puzzled", "easy"),
            consequences=False,
            n_boot=77,
            seed=5,
            level=0.8,
            policy=POLICY,
            covariates=("capability",),
        ),
        QASettings(policy=POLICY, strategy="cot", n_boot=33, seed=9),
        PVSettings(
            factors=("choice_format", "field_order"),
            alpha=0.1,
            level=0.9,
            strategy="cot",
            policy=POLICY,
        ),
        PVSettings(),
        ConvSettings(unit="question", bh=True, alpha=0.1, contrast="demo_iden_pair", policy=POLICY),
    ],
    ids=["dilemma", "qa", "prompt-variance", "prompt-variance-defaults", "conversation"],
)
def test_round_trip(settings) -> None:
    back = type(settings).from_dict(stored(settings))
    assert back == settings
    assert back.to_dict() == settings.to_dict()


def test_a_conversation_fit_keeps_its_sampler_and_level() -> None:
    fit = ConvSettings(
        policy=POLICY, bayes=BayesSettings(draws=300, tune=200, chains=2, seed=4), level=0.8
    )
    assert ConvSettings.from_dict(stored(fit, bayes=True)) == fit
    # the frequentist analysis stores no sampler: it reads back without one
    assert ConvSettings.from_dict(stored(fit)).bayes is None


def test_missing_keys_take_defaults_and_unknown_policy_keys_are_left_out() -> None:
    old = {"policy": {"delta_pp": 4.0, "a_key_from_the_future": 1}}
    assert AnalysisSettings.from_dict(old) == AnalysisSettings(policy=Policy(delta_pp=4.0))
    assert settings_from_dict(old) == AnalysisSettings.from_dict(old)
    assert QASettings.from_dict({}) == QASettings()
    assert ConvSettings.from_dict({}) == ConvSettings()
    assert PVSettings.from_dict({"factors": []}) == PVSettings()


def test_every_built_in_design_names_its_settings_type() -> None:
    """The registry hands each design's codec out (``Design.settings_type``): the stored
    settings of its defaults read back equal."""
    from cuegap.designs import registered

    names = {"dilemma", "qa", "prompt-variance", "conversation"}
    for name, design in registered().items():
        if name not in names:
            continue
        kind = design.settings_type()
        assert kind is not None, name
        default = kind()
        assert kind.from_dict(stored(default)) == default, name
    assert {type(registered()[n].settings_type()()).__name__ for n in names} == {
        "AnalysisSettings", "QASettings", "PVSettings", "ConvSettings"}  # fmt: skip
