"""Write an inspect-ai log (.eval) of inspect_evals' BBQ task over cuegap's BBQ test bank.

The task is inspect_evals 0.28.0's ``bbq`` (``inspect_evals/bbq/bbq.py``) with its dataset
swapped for local records: each BBQ record becomes a ``Sample`` as its ``record_to_sample``
makes it (input "Context: ...\n\nQuestion: ...", choices ``ans0``-``ans2``, target the
letter of ``label``, id ``example_id``, metadata ``source_id`` = ``example_id``,
``category``, ``question_index``, ``question_polarity``, ``context_condition``,
``answer_info``, ``additional_metadata``), ids prefixed with the subset name as its
``combine_subsets`` does (``Age_00994``); solver ``[multiple_choice()]``, scorer
``choice()``. (inspect_evals itself cannot be imported offline here: its package needs
``inspect-evals-utils``, which the registry does not serve, so the record mapping is
restated below.) The records are ``tests/data/qa/bbq_mini.jsonl`` plus one that is not in
that bank (``../lm_eval_bbq/tasks/bbq_unbanked.jsonl``, to be quarantined).

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


def record_to_sample(record: dict) -> Sample:
    """inspect_evals 0.28.0's mapping of a BBQ record, with its subset-prefixed id."""
    return Sample(
        input=f"Context: {record['context']}\n\nQuestion: {record['question']}",
        target=chr(ord("A") + int(record["label"])),
        choices=[record["ans0"], record["ans1"], record["ans2"]],
        id=f"{record['category']}_{record['example_id']:05d}",
        metadata={
            "source_id": record["example_id"],
            "category": record["category"],
            "question_index": record["question_index"],
            "question_polarity": record["question_polarity"],
            "context_condition": record["context_condition"],
            "answer_info": record["answer_info"],
            "additional_metadata": record["additional_metadata"],
        },
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
        solver=[multiple_choice()],
        scorer=choice(),
    )


if __name__ == "__main__":
    out = sys.argv[1]
    eval(
        bbq_mini(),
        model=get_model("mockllm/model", custom_outputs=scripted),
        log_dir=out,
        log_format="eval",
        epochs=1,
        temperature=0.0,
        max_tokens=64,
        seed=7,
        display="none",
    )
