"""One inspect-ai sample as a record: the response text, prompt, scores and mapping view.

Shared by the inspect-ai readers (:mod:`cuegap.ingest.inspect_log` for the dilemma design,
:mod:`cuegap.ingest.inspect_bbq` for QA). The sample arrives as a dict, attachments
already resolved.
"""

from __future__ import annotations

from typing import Any

from cuegap.ingest import _runner
from cuegap.ingest._records import Record, Rejected
from cuegap.ingest.mapping import Mapping

__all__ = ["HEAVY", "output_text", "sample_record"]

#: Sample fields too large to keep in the raw line (events, attachments, store).
HEAVY = ("events", "events_data", "attachments", "store")


def output_text(output: Any) -> str | None:
    """The text of a sample's output: its completion, else the first choice's message."""
    if not isinstance(output, dict):
        return None
    text = output.get("completion")
    if isinstance(text, str) and text:
        return text
    choices = output.get("choices") or []
    if choices and isinstance(choices[0], dict):
        msg = choices[0].get("message") or {}
        content = _runner.content_text(msg.get("content"))
        if content:
            return content
    return text if isinstance(text, str) else None


def _stop_reason(output: Any) -> str | None:
    if not isinstance(output, dict):
        return None
    choices = output.get("choices") or []
    if choices and isinstance(choices[0], dict) and choices[0].get("stop_reason"):
        return choices[0]["stop_reason"]
    return output.get("stop_reason")


def _prompt(sample: dict[str, Any]) -> str | None:
    messages = sample.get("messages")
    if isinstance(messages, list) and messages:
        last = max(
            (
                i
                for i, m in enumerate(messages)
                if isinstance(m, dict) and m.get("role") == "assistant"
            ),
            default=len(messages),
        )
        return _runner.render_messages(messages[:last])
    value = sample.get("input")
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return _runner.render_messages(value)
    return None


def _scores(sample: dict[str, Any]) -> dict[str, Any] | None:
    scores = sample.get("scores")
    if scores is None and isinstance(sample.get("score"), dict):  # very old logs
        scores = {"score": sample["score"]}
    if not isinstance(scores, dict):
        return None
    return {
        name: _runner.prune(
            {
                "value": s.get("value"),
                "answer": s.get("answer"),
                "explanation": s.get("explanation"),
                "metadata": s.get("metadata"),
            }
        )
        for name, s in scores.items()
        if isinstance(s, dict)
    }


def sample_record(
    line: int, sample: dict[str, Any], header: dict[str, Any], mapping: Mapping
) -> Record:
    """One inspect-ai sample (as a dict) as a record."""
    sid, epoch = sample.get("id"), sample.get("epoch") or 1
    label = f"sample {sid!r} (epoch {epoch})"
    raw = _runner.compact(sample, HEAVY)
    output = sample.get("output")
    text = output_text(output)
    error = sample.get("error")
    if not text and isinstance(error, dict):
        return Rejected(
            line,
            raw,
            f"{label}: the runner recorded an error and no output: "
            f"{str(error.get('message', ''))[:300]}",
            "response",
        )
    view = {
        "id": sid,
        "epoch": epoch,
        "epoch_index": epoch - 1 if isinstance(epoch, int) else None,
        "input": sample.get("input"),
        "target": sample.get("target"),
        "metadata": sample.get("metadata") or {},
        "output": output,
        "scores": sample.get("scores"),
        "eval": header.get("eval") or {},
        "plan": header.get("plan") or {},
        "sample": sample,
    }
    result = _runner.prune(
        {
            "epoch": epoch,
            "target": sample.get("target"),
            "scores": _scores(sample),
            "stop_reason": _stop_reason(output),
        }
    )
    return _runner.make_record(
        line,
        raw,
        view,
        mapping,
        sample=label,
        response=text,
        prompt=_prompt(sample),
        sample_id=f"{sid}_epoch_{epoch}",
        runner_result=result,
    )
