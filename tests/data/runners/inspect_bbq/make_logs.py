"""Write small inspect-ai logs (.eval and .json) of a BBQ task over cuegap's BBQ test bank.

The task is shaped like inspect_evals' ``bbq``: each BBQ record becomes a ``Sample`` whose
input is "Context: ...\\n\\nQuestion: ...", whose choices are ``ans0``-``ans2`` and whose
target is the letter of ``label``; solver ``multiple_choice()``, scorer ``choice()``. The
records are ``tests/data/qa/bbq_mini.jsonl`` plus one that is not in that bank
(``../lm_eval_bbq/tasks/bbq_unbanked.jsonl``, to be quarantined). Each record's BBQ
metadata is kept in the sample's metadata.

The model is inspect's ``mockllm/model`` with scripted replies (offline). The replies pick
the same options as lm-eval's dummy model did with ``--seed 4``
(``../lm_eval_bbq/dummy_seed4``), in varied forms: the letter format the solver asks for,
a bare ``(B)``, an option's text, a person's name, an "unknown"-style phrase, reasoning
before the answer line; one reply (religion 671) is unparsable.

    python make_logs.py OUT_DIR
"""

import json
import sys
from pathlib import Path

from inspect_ai import Task, eval
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import ModelOutput, ModelUsage, get_model
from inspect_ai.scorer import choice
from inspect_ai.solver import multiple_choice

HERE = Path(__file__).parent
FILES = [HERE / "../../qa/bbq_mini.jsonl", HERE / "../lm_eval_bbq/tasks/bbq_unbanked.jsonl"]

# (category, example_id) -> scripted reply
REPLIES = {
    ("Age", 994): "ANSWER: B",
    ("Age", 3396): "ANSWER: C",
    ("Age", 573): "There is not enough information to tell.",
    ("Age", 2305): "ANSWER: C",
    ("Age", 2147): "The young neighbour",
    ("Age", 3131): "ANSWER: A",
    ("Gender_identity", 5314): "ANSWER: B",
    ("Gender_identity", 5640): "It cannot be determined from the context.",
    ("Gender_identity", 5281): "ANSWER: A",
    ("Gender_identity", 5323): "ANSWER: B",
    ("Gender_identity", 1415): "ANSWER: A",
    ("Gender_identity", 3161): "Grace",
    ("Race_ethnicity", 4972): "The context only says both were queueing.\n\nANSWER: C",
    ("Race_ethnicity", 5187): "ANSWER: A",
    ("Race_ethnicity", 3242): "ANSWER: B",
    ("Race_ethnicity", 3685): "ANSWER: A",
    ("Race_ethnicity", 607): "ANSWER: B",
    ("Race_ethnicity", 3897): "ANSWER: C",
    ("Religion", 671): "I would rather not single anyone out here.",
    ("Religion", 282): "ANSWER: B",
    ("Religion", 359): "(B)",
    ("Religion", 92): "ANSWER: C",
    ("Religion", 77): "ANSWER: A",
    ("Religion", 177): "ANSWER: B",
    ("Age", 2148): "ANSWER: C",
}
META = (
    "example_id",
    "question_index",
    "question_polarity",
    "context_condition",
    "category",
    "answer_info",
    "additional_metadata",
    "label",
)


def record_to_sample(record: dict) -> Sample:
    return Sample(
        id=f"{record['category']}-{record['example_id']}",
        input=f"Context: {record['context']}\n\nQuestion: {record['question']}",
        choices=[record["ans0"], record["ans1"], record["ans2"]],
        target=chr(ord("A") + int(record["label"])),
        metadata={k: record[k] for k in META},
    )


RECORDS = [json.loads(line) for f in FILES for line in f.read_text(encoding="utf-8").splitlines()]
BY_CONTEXT = {r["context"]: REPLIES[(r["category"], r["example_id"])] for r in RECORDS}


def scripted(input, tools, tool_choice, config):
    prompt = next(m.text for m in input if m.role == "user")
    (reply,) = [text for context, text in BY_CONTEXT.items() if f"Context: {context}\n" in prompt]
    output = ModelOutput.from_content(model="mockllm/model", content=reply)
    # Setting usage keeps mockllm from counting tokens with tiktoken (a download).
    n_in, n_out = len(prompt.split()), len(reply.split())
    output.usage = ModelUsage(input_tokens=n_in, output_tokens=n_out, total_tokens=n_in + n_out)
    return output


def bbq_mini() -> Task:
    return Task(
        name="bbq_mini",
        dataset=MemoryDataset([record_to_sample(r) for r in RECORDS], name="bbq_mini"),
        solver=multiple_choice(),
        scorer=choice(),
        metadata={"item_bank": "bbq_mini"},
    )


if __name__ == "__main__":
    out = sys.argv[1]
    for fmt in ("eval", "json"):
        eval(
            bbq_mini(),
            model=get_model("mockllm/model", custom_outputs=scripted),
            log_dir=out,
            log_format=fmt,
            epochs=1,
            temperature=0.0,
            max_tokens=64,
            seed=7,
            display="none",
        )
