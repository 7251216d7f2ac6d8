"""Reader for OpenAI Batch API files: the output (or error) JSONL joined with the input.

A batch is three JSONL files: the *input* the user uploaded (one request per line:
``{"custom_id", "method", "url", "body"}``), the *output* OpenAI returns (``{"id",
"custom_id", "response": {"status_code", "request_id", "body"}, "error"}`` per request, in
any order) and the *error* file (the same shape, for requests that failed). cuegap ingests
the output and the error file; each is joined with the input on ``custom_id`` to recover
the prompt, the model and the request's metadata. Failed requests (an ``error`` object or a
non-200 status) are quarantined with OpenAI's message.

The input file is named by the mapping's ``[options] input = "FILE"`` (relative to the
mapping file), or found beside the output: the one ``.jsonl`` file there whose first line is
a batch request. cuegap indexes it once (custom_id -> byte offset; memory grows with the
number of requests, not their size) and reads each request when its output comes.

Endpoints: ``/v1/chat/completions`` (the message content, or its ``refusal``),
``/v1/completions`` (``choices[0].text``) and ``/v1/responses`` (the ``output_text`` parts).

The view a mapping sees per output line::

    custom_id, body (the request body: model, messages, metadata, ...), metadata
    (body.metadata), request (the whole input line), response (the response body),
    output (the whole output line)

Defaults: ``system`` = ``metadata.system``, else the request's ``body.model``; every other
field ``metadata.<field>``. Batch requests usually carry cuegap's fields in the custom_id:
see the ``[extract]`` table of :mod:`cuegap.ingest.mapping`.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from cuegap.ingest import _runner
from cuegap.ingest._guard import guard_record
from cuegap.ingest._records import (
    IngestError,
    Record,
    Rejected,
    ResponseStream,
    RunInfo,
    SystemInfo,
)
from cuegap.ingest.mapping import Mapping, as_mapping

NAME = "openai-batch"
_FIELDS = (
    "item_bank",
    "item_id",
    "probe",
    "individual",
    "consequences",
    "prompt_variant",
    "repeat",
)
DEFAULTS: dict[str, Any] = {
    "system": ["metadata.system", "body.model"],
    **{f: f"metadata.{f}" for f in _FIELDS},
}
_PROMPT_KEYS = ("messages", "prompt", "input", "metadata", "instructions")


def _is_input(obj: Any) -> bool:
    return isinstance(obj, dict) and {"custom_id", "method", "url", "body"} <= obj.keys()


def _is_output(obj: Any) -> bool:
    return (
        isinstance(obj, dict)
        and "custom_id" in obj
        and "response" in obj
        and "error" in obj
        and "body" not in obj
    )


def detect(path: Path) -> bool:
    """True for a ``.jsonl`` Batch output, error or input file (inputs are refused in read)."""
    if not (path.is_file() and path.suffix == ".jsonl"):
        return False
    obj = _runner.first_json_line(path)
    return _is_output(obj) or _is_input(obj)


def _find_input(path: Path, mapping: Mapping) -> Path:
    named = mapping.option_path("input")
    if named is not None:
        if not named.is_file():
            raise IngestError(f"{path}: the Batch input file {named} (from the mapping) is missing")
        return named
    candidates = sorted(
        p
        for p in path.parent.glob("*.jsonl")
        if p != path and _is_input(_runner.first_json_line(p))
    )
    if len(candidates) == 1:
        return candidates[0]
    if not candidates:
        raise IngestError(
            f"{path}: no OpenAI Batch input file beside it; cuegap joins the output with the "
            "input on custom_id. Put the input .jsonl in the same folder, or name it in the "
            'mapping: [options] input = "FILE"'
        )
    raise IngestError(
        f"{path}: several Batch input files beside it ({', '.join(p.name for p in candidates)}); "
        'name one in the mapping: [options] input = "FILE"'
    )


def _index(input_path: Path) -> dict[str, int]:
    """custom_id -> byte offset of its line in the input file."""
    index: dict[str, int] = {}
    with input_path.open("rb") as fh:
        offset = 0
        for line_no, raw in enumerate(fh, start=1):
            if raw.strip():
                try:
                    obj = orjson.loads(raw.removeprefix(_runner.BOM) if line_no == 1 else raw)
                except orjson.JSONDecodeError as exc:
                    raise IngestError(
                        f"{input_path}: line {line_no}: not valid JSON ({exc}); the Batch input "
                        "file must be intact to join outputs with it"
                    ) from None
                cid = obj.get("custom_id") if isinstance(obj, dict) else None
                if isinstance(cid, str):
                    index.setdefault(cid, offset)
            offset += len(raw)
    return index


def _response_text(url: str, body: dict[str, Any]) -> str | None:
    if "responses" in url or body.get("object") == "response":
        parts = []
        for item in body.get("output") or []:
            if isinstance(item, dict) and item.get("type") == "message":
                for c in item.get("content") or []:
                    if isinstance(c, dict) and c.get("type") in ("output_text", "refusal"):
                        parts.append(c.get("text") or c.get("refusal") or "")
        return "".join(parts) if parts or body.get("output") is not None else None
    choices = body.get("choices") or []
    if not choices or not isinstance(choices[0], dict):
        return None
    first = choices[0]
    if "message" in first:
        msg = first.get("message") or {}
        text = _runner.content_text(msg.get("content"))
        if text is None and isinstance(msg.get("refusal"), str):
            text = msg["refusal"]
        return text
    return first.get("text")


def _prompt(body: dict[str, Any]) -> str | None:
    if isinstance(body.get("messages"), list):
        return _runner.render_messages(body["messages"])
    for key in ("prompt", "input"):
        value = body.get(key)
        if isinstance(value, str):
            prefix = body.get("instructions")
            return f"system: {prefix}\n\nuser: {value}" if isinstance(prefix, str) else value
        if isinstance(value, list) and all(isinstance(v, dict) for v in value):
            return _runner.render_messages(value)
        if isinstance(value, list):
            return "\n".join(map(str, value))
    return None


def run_info(path: Path, input_path: Path) -> RunInfo:
    """Run metadata from the first input request and the first output response."""
    first_in = _runner.first_json_line(input_path)
    first_in = first_in if isinstance(first_in, dict) else {}
    body = first_in.get("body") if isinstance(first_in.get("body"), dict) else {}
    first_out = _runner.first_json_line(path) or {}
    out_resp = first_out.get("response") if isinstance(first_out, dict) else None
    resp = out_resp.get("body") if isinstance(out_resp, dict) else None  # else passed over
    resp = resp if isinstance(resp, dict) else {}
    model = body.get("model")
    systems = {}
    if isinstance(model, str):
        systems[model] = SystemInfo(
            provider="openai",
            version=resp.get("model") if isinstance(resp.get("model"), str) else None,
            metadata=_runner.prune({"system_fingerprint": resp.get("system_fingerprint")}) or None,
        )
    settings = _runner.prune(
        {
            "endpoint": first_in.get("url"),
            "input_file": input_path.name,
            "request": {k: v for k, v in body.items() if k not in _PROMPT_KEYS},
        }
    )
    return RunInfo(
        runner=NAME,
        runner_version=None,
        started_at=_runner.iso(resp.get("created") or resp.get("created_at")),
        settings=settings,
        systems=systems,
    )


def _records(
    fh: Any, input_path: Path, index: dict[str, int], mapping: Mapping
) -> Iterator[Record]:
    with input_path.open("rb") as inp:
        for line in _runner.json_lines(fh):
            if isinstance(line, Rejected):
                yield line
                continue
            line_no, text, obj = line
            yield guard_record(
                line_no, text, _line_record, line_no, text, obj, inp, input_path, index, mapping
            )


def _line_record(
    line_no: int,
    text: str,
    obj: Any,
    inp: Any,
    input_path: Path,
    index: dict[str, int],
    mapping: Mapping,
) -> Record:
    """One output line joined with its request (``inp`` at ``index[custom_id]``)."""
    if not _is_output(obj):
        return Rejected(line_no, text, "not a Batch output line (custom_id, response, error)")
    cid = obj.get("custom_id")
    label = f"request {cid!r}"
    response = obj.get("response") if isinstance(obj.get("response"), dict) else None
    status = response.get("status_code") if response else None
    error = obj.get("error")
    if error or response is None or status != 200:
        body = (response or {}).get("body") or {}
        err = error or (body.get("error") if isinstance(body, dict) else None) or {}
        err = err if isinstance(err, dict) else {"message": repr(err)}
        code = err.get("code") or err.get("type") or f"HTTP {status}"
        return Rejected(
            line_no,
            text,
            f"{label} failed in the batch: {code}: {err.get('message') or 'no message'}",
            "error" if error else "response",
        )
    offset = index.get(cid) if isinstance(cid, str) else None
    if offset is None:
        return Rejected(
            line_no,
            text,
            f"{label} is not in the input file {input_path.name}",
            "custom_id",
        )
    inp.seek(offset)
    request = orjson.loads(inp.readline())
    body = request.get("body") if isinstance(request.get("body"), dict) else {}
    rbody = response.get("body") if isinstance(response.get("body"), dict) else {}
    url = request.get("url") if isinstance(request.get("url"), str) else ""
    view = {
        "custom_id": cid,
        "body": body,
        "metadata": body.get("metadata") or {},
        "request": request,
        "response": rbody,
        "output": obj,
    }
    choices = rbody.get("choices") if isinstance(rbody.get("choices"), list) else []
    choices = choices or [{}]
    result = _runner.prune(
        {
            "status_code": status,
            "request_id": response.get("request_id"),
            "response_id": rbody.get("id"),
            "model": rbody.get("model"),
            "finish_reason": choices[0].get("finish_reason")
            if isinstance(choices[0], dict)
            else None,
            "status": rbody.get("status"),
            "system_fingerprint": rbody.get("system_fingerprint"),
            "usage": rbody.get("usage"),
        }
    )
    return _runner.make_record(
        line_no,
        text,
        view,
        mapping,
        sample=label,
        response=_response_text(url, rbody),
        prompt=_prompt(body),
        sample_id=cid,
        runner_result=result,
    )


def read(path: Path, mapping: Mapping | Path | None = None) -> ResponseStream:
    """Stream a Batch output or error file, joined with its input, as response records.

    Parameters
    ----------
    path : Path
        The output (or error) JSONL downloaded from OpenAI.
    mapping : Mapping or Path, optional
        How request metadata or the custom_id maps to cuegap fields, and optionally
        ``[options] input``; defaults in the module docstring.

    Returns
    -------
    ResponseStream

    Raises
    ------
    IngestError
        For an input file given as ``path``, or a missing, ambiguous or damaged input file.
    """
    path = Path(path)
    m = as_mapping(mapping)
    m.check_runner(NAME, path)
    m = m.over(DEFAULTS)
    if _is_input(_runner.first_json_line(path)):
        raise IngestError(
            f"{path}: this is an OpenAI Batch input file; ingest the batch's output and error "
            "files instead (cuegap joins them with this file on custom_id)"
        )
    input_path = _find_input(path, m)
    index = _index(input_path)
    info = run_info(path, input_path)
    total = path.stat().st_size
    fh = path.open("rb")

    def records() -> Iterator[Record]:
        with fh:
            yield from _records(fh, input_path, index, m)

    return ResponseStream(
        info,
        _runner.guarded(records(), path),
        lambda: total if fh.closed else fh.tell(),
        total,
    )
