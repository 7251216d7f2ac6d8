"""Write a small OpenAI Batch (input, output and error JSONL) mapped onto tests/data/tiny_bank.json.

The Batch API cannot run offline, so these files are written by hand in the documented
shapes (platform.openai.com/docs/guides/batch and the API reference's "request input" and
"request output" objects); every request body and chat.completion body is checked against
the openai SDK's own types when the ``openai`` package is installed:

    python make_batch.py OUT_DIR
"""

import json
import sys
from pathlib import Path

MODEL, SNAPSHOT, FP = "gpt-4o-mini", "gpt-4o-mini-2024-07-18", "fp_0ba0d124f1"
SYSTEM = "Answer the dilemma as asked."
PUZZLE = (
    '{"A": {"gender": "man", "race": "Asian"}, "B": {"gender": "woman", "race": "Hispanic"}, '
    '"C": {"gender": "woman", "race": "Asian"}, "D": {"gender": "man", "race": "Hispanic"}, '
    '"answer": "option2"}'
)
# custom_id, user prompt, reply (None: refusal), outcome
REQUESTS = [
    ("tiny/neutral-d1/main/r0", "Dilemma d1. Choose option1 or option2.", "Option 1.", "ok"),
    ("tiny/direct-d1/main/r0", "Dilemma d1 with people A-D. Respond as X-Y.", "c-option2", "ok"),
    ("tiny/direct-d1/what_if/A/r0", "Dilemma d1: what if A is the person?", "option2", "ok"),
    ("tiny/direct-d1/could_be/B/r0", "Dilemma d1: could B be the person?", None, "ok"),
    ("tiny/puzzled-hard-d1/main/r0", "Dilemma d1 as a hard puzzle. Answer in JSON.", PUZZLE, "ok"),
    ("tiny/direct-d1/what_if/A/r1", "Dilemma d1: what if A is the person?", "option1", "ok"),
    ("smoke-test", "Say hello.", "Hello!", "ok"),
    ("tiny/direct-d2/main/r0", "Dilemma d2 with people A-D. Respond as X-Y.", None, "rate_limited"),
    ("tiny/neutral-d2/main/r0", "Dilemma d2. Choose option1 or option2.", None, "expired"),
]
OUTPUT_ORDER = [2, 0, 4, 1, 3, 6, 5]  # the Batch API returns lines in any order


def request_line(cid, prompt):
    body = {
        "model": MODEL,
        "messages": [{"role": "system", "content": SYSTEM}, {"role": "user", "content": prompt}],
        "temperature": 0,
        "max_tokens": 64,
        "seed": 7,
    }
    return {"custom_id": cid, "method": "POST", "url": "/v1/chat/completions", "body": body}


def completion(i, reply):
    message = {"role": "assistant", "content": reply, "refusal": None, "annotations": []}
    finish = "stop"
    if reply is None:
        message.update(content=None, refusal="I'm sorry, but I can't help with that.")
    return {
        "id": f"chatcmpl-B9x{i:04d}",
        "object": "chat.completion",
        "created": 1767225600 + i,
        "model": SNAPSHOT,
        "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": finish}],
        "usage": {"prompt_tokens": 24, "completion_tokens": 5, "total_tokens": 29},
        "service_tier": "default",
        "system_fingerprint": FP,
    }


def output_line(i, cid, reply):
    return {
        "id": f"batch_req_6777{i:04d}",
        "custom_id": cid,
        "response": {
            "status_code": 200,
            "request_id": f"req_9c1{i:04d}",
            "body": completion(i, reply),
        },
        "error": None,
    }


def error_line(i, cid, outcome):
    if outcome == "expired":
        return {
            "id": f"batch_req_6777{i:04d}",
            "custom_id": cid,
            "response": None,
            "error": {
                "code": "batch_expired",
                "message": "This request could not be executed before the completion window "
                "expired.",
            },
        }
    body = {
        "error": {
            "message": "Rate limit reached for requests",
            "type": "requests",
            "param": None,
            "code": "rate_limit_exceeded",
        }
    }
    return {
        "id": f"batch_req_6777{i:04d}",
        "custom_id": cid,
        "response": {"status_code": 429, "request_id": f"req_9c1{i:04d}", "body": body},
        "error": None,
    }


def validate(inputs, outputs):
    try:
        from openai.types.chat import ChatCompletion
        from openai.types.chat.completion_create_params import CompletionCreateParamsNonStreaming
        from pydantic import TypeAdapter
    except ImportError:
        print("openai not installed: bodies not validated")
        return
    adapter = TypeAdapter(CompletionCreateParamsNonStreaming)
    for line in inputs:
        adapter.validate_python(line["body"], strict=False)
    for line in outputs:
        ChatCompletion.model_validate(line["response"]["body"])
    import openai

    print(f"validated with openai {openai.__version__}")


if __name__ == "__main__":
    out = Path(sys.argv[1])
    inputs = [request_line(cid, prompt) for cid, prompt, _, _ in REQUESTS]
    outputs = [output_line(i, REQUESTS[i][0], REQUESTS[i][2]) for i in OUTPUT_ORDER]
    errors = [error_line(i, r[0], r[3]) for i, r in enumerate(REQUESTS) if r[3] != "ok"]
    validate(inputs, outputs)
    for name, lines in (
        ("batch_input.jsonl", inputs),
        ("batch_output.jsonl", outputs),
        ("batch_errors.jsonl", errors),
    ):
        (out / name).write_text("".join(json.dumps(x) + "\n" for x in lines))
