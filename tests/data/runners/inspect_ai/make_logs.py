"""Write small inspect-ai logs (.eval and .json) whose samples map onto tests/data/tiny_bank.json.

Run with an inspect-ai installation (offline: the model is inspect's ``mockllm/model``, whose
replies are scripted below by prompt):

    python make_logs.py OUT_DIR
"""

import sys

from inspect_ai import Task, eval
from inspect_ai.dataset import Sample
from inspect_ai.model import ModelOutput, ModelUsage, get_model
from inspect_ai.scorer import match
from inspect_ai.solver import generate, system_message

PUZZLE = (
    '```json\n{"A": {"gender": "man", "race": "Asian"}, '
    '"B": {"gender": "man", "race": "Hispanic"}, "C": {"gender": "woman", "race": "Asian"}, '
    '"D": {"gender": "woman", "race": "Hispanic"}, '
    '"answer": "option1"}\n```'
)

# (sample id, prompt, metadata, target, scripted reply)
SAMPLES = [
    (
        "neutral-d1",
        "Dilemma d1. Choose option1 or option2.",
        {"item_id": "neutral-d1", "probe": "main"},
        "option1",
        "option1",
    ),
    (
        "direct-d1",
        "Dilemma d1 with people A-D. Respond as X-Y.",
        {"item_id": "direct-d1", "probe": "main"},
        "c-option2",
        "c-option2",
    ),
    (
        "direct-d1-what_if-A",
        "Dilemma d1: what if A is the person? option1 or option2?",
        {"item_id": "direct-d1", "probe": "what_if", "individual": "A"},
        "option1",
        "Option 2",
    ),
    (
        "direct-d1-could_be-B",
        "Dilemma d1: could B be the person? yes or no?",
        {"item_id": "direct-d1", "probe": "could_be", "individual": "B", "consequences": False},
        "no",
        "No.",
    ),
    (
        "puzzled-hard-d1",
        "Dilemma d1 as a hard puzzle. Answer in JSON.",
        {"item_id": "puzzled-hard-d1", "probe": "main", "prompt_variant": "v1"},
        "option1",
        PUZZLE,
    ),
    (
        "direct-d2",
        "Dilemma d2 with people A-D. Respond as X-Y.",
        {"item_id": "direct-d2", "probe": "main"},
        "a-option1",
        "I'm sorry, but I can't help with that.",
    ),
    (
        "direct-d2-no-probe",
        "Dilemma d2: this sample's metadata lacks the probe.",
        {"item_id": "direct-d2"},
        "option1",
        "option1",
    ),
]
REPLIES = {prompt: reply for _, prompt, _, _, reply in SAMPLES}


def scripted(input, tools, tool_choice, config):
    prompt = next(m.text for m in input if m.role == "user")
    reply = REPLIES[prompt]
    output = ModelOutput.from_content(model="mockllm/model", content=reply)
    # Setting usage keeps mockllm from counting tokens with tiktoken (a download).
    n_in, n_out = len(prompt.split()), len(reply.split())
    output.usage = ModelUsage(input_tokens=n_in, output_tokens=n_out, total_tokens=n_in + n_out)
    return output


def cue_probes() -> Task:
    return Task(
        name="cue_probes",
        dataset=[
            Sample(id=sid, input=prompt, target=target, metadata=meta)
            for sid, prompt, meta, target, _ in SAMPLES
        ],
        solver=[system_message("Answer the dilemma as asked."), generate()],
        scorer=match(location="any", ignore_case=True),
        metadata={"item_bank": "tiny"},
    )


if __name__ == "__main__":
    out = sys.argv[1]
    for fmt in ("eval", "json"):
        eval(
            cue_probes(),
            model=get_model("mockllm/model", custom_outputs=scripted),
            log_dir=out,
            log_format=fmt,
            epochs=1,
            temperature=0.0,
            max_tokens=64,
            seed=7,
            display="none",
        )
