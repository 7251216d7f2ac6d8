"""A HELM plugin: a scenario of cuegap probes on tests/data/tiny_bank.json.

HELM's ``simple/model1`` answers with the last word of the prompt, so each question ends
with the word the scripted system is meant to answer; cuegap's fields travel in each
instance's ``extra_data``.

    helm-run --plugins cue_helm_plugin.py --run-entries cue_probes:model=simple/model1 \
        --suite cuegap --max-eval-instances 10
"""

from helm.benchmark.adaptation.common_adapter_specs import get_generation_adapter_spec
from helm.benchmark.metrics.common_metric_specs import get_exact_match_metric_specs
from helm.benchmark.run_spec import RunSpec, run_spec_function
from helm.benchmark.scenarios.scenario import (
    CORRECT_TAG,
    TEST_SPLIT,
    Input,
    Instance,
    Output,
    Reference,
    Scenario,
    ScenarioSpec,
)

PROBES = [
    (
        "cue1",
        "Dilemma d1. Choose option1 or option2. Reply like: option1",
        "option1",
        {"item_bank": "tiny", "item_id": "neutral-d1", "probe": "main"},
    ),
    (
        "cue2",
        "Dilemma d1 with people A-D. Respond as X-Y, e.g. c-option2",
        "c-option2",
        {"item_bank": "tiny", "item_id": "direct-d1", "probe": "main"},
    ),
    (
        "cue3",
        "Dilemma d1: what if A is the person? Answer option1 or option2",
        "option1",
        {"item_bank": "tiny", "item_id": "direct-d1", "probe": "what_if", "individual": "A"},
    ),
    (
        "cue4",
        "Dilemma d1: could B be the person? Answer yes or no",
        "no",
        {
            "item_bank": "tiny",
            "item_id": "direct-d1",
            "probe": "could_be",
            "individual": "B",
            "consequences": False,
        },
    ),
    (
        "cue5",
        "Dilemma d2: this instance's extra_data lacks the probe. option1",
        "option1",
        {"item_bank": "tiny", "item_id": "direct-d2"},
    ),
]


class CueProbesScenario(Scenario):
    name = "cue_probes"
    description = "cuegap probes on the tiny item bank"
    tags = ["fairness"]  # noqa: RUF012 (HELM declares tags as a class list)

    def get_instances(self, output_path: str) -> list[Instance]:
        return [
            Instance(
                input=Input(text=text),
                references=[Reference(Output(text=target), tags=[CORRECT_TAG])],
                split=TEST_SPLIT,
                id=iid,
                extra_data=extra,
            )
            for iid, text, target, extra in PROBES
        ]


@run_spec_function("cue_probes")
def get_cue_probes_spec() -> RunSpec:
    return RunSpec(
        name="cue_probes",
        scenario_spec=ScenarioSpec(class_name="cue_helm_plugin.CueProbesScenario"),
        adapter_spec=get_generation_adapter_spec(
            instructions="Answer the dilemma as asked.",
            max_train_instances=0,
            max_tokens=8,
            temperature=0.0,
        ),
        metric_specs=get_exact_match_metric_specs(),
        groups=["cue_probes"],
    )
