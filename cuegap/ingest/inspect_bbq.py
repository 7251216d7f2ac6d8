"""Reader for inspect-ai logs of BBQ tasks (the QA design): ``.eval`` and ``.json``.

inspect_evals' ``bbq`` task, and tasks shaped like it, turn each BBQ record into a sample
with input "Context: ...\\n\\nQuestion: ...", ``choices`` ``ans0`` - ``ans2``, the letter
of ``label`` as target and BBQ's fields in the sample ``metadata`` (inspect_evals 0.28:
``source_id`` = BBQ's ``example_id``, ``category``, ``answer_info``, ...); solver
``multiple_choice()``, scorer ``choice()``. The log is read by
:mod:`cuegap.ingest.inspect_log` (zstd or deflate ``.eval``, streamed ``.json``).

The answer: when a scorer recorded a single letter as its ``answer`` (``choice()`` does
for replies in its ``ANSWER: X`` format), that choice of the sample, as
``predicted_index``; otherwise the model's output text, parsed by the loader
(:mod:`cuegap.ingest.qa_parsing`: letters, option text, names, "unknown"-style phrases;
unparsable stays unparsable). The output text is always kept as the raw answer. A letter
is mapped back to BBQ's option order by the choice's text when the metadata carries
``ans0`` ..., else by position; a sample whose target letter disagrees with BBQ's
``label`` (shuffled choices) and whose metadata cannot map them back is quarantined.

Join: ``metadata.example_id`` (or ``source_id``) + ``metadata.category`` to a QA item bank
in the store; ``metadata.label``, else the sample's target letter, is checked against the
bank's gold option (which also catches most choice orders that are not BBQ's: inspect's
``shuffle_choices`` leaves no trace in the log). ``item_bank`` =
``metadata.item_bank``, else the task's ``eval.metadata.item_bank`` or
``eval.task_args.item_bank``, else every QA bank is searched. System = ``eval.model``;
repeat = epoch - 1; strategy = ``metadata.strategy``, else ``cot`` when a solver ran with
``cot=True``, else ``zero-shot``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from cuegap.ingest import _runner, inspect_log
from cuegap.ingest._inspect_sample import HEAVY, output_text
from cuegap.ingest._records import Rejected, ResponseStream
from cuegap.ingest.bbq_results import QARecord

NAME = "inspect-bbq"
# BBQ's example_id under the names tasks give it (inspect_evals: source_id)
EXAMPLE_ID = ("example_id", "source_id")


def _example_id(meta: dict[str, Any]) -> Any:
    return next((meta[k] for k in EXAMPLE_ID if meta.get(k) is not None), None)


def _is_bbq(sample: dict[str, Any] | None) -> bool:
    meta = (sample or {}).get("metadata")
    return (
        isinstance(meta, dict)
        and meta.get("category") is not None
        and _example_id(meta) is not None
        and "answer_info" in meta
    )


def detect(path: Path) -> bool:
    """True for an inspect-ai log whose first sample carries BBQ's metadata (example_id or
    source_id, category, answer_info)."""
    return inspect_log.detect(path) and _is_bbq(inspect_log.first_sample(path))


def _first(*values: Any) -> str | None:
    return next((v for v in values if isinstance(v, str) and v), None)


def _strategy(meta: dict[str, Any], header: dict[str, Any]) -> str:
    if isinstance(meta.get("strategy"), str) and meta["strategy"]:
        return meta["strategy"]
    steps = (header.get("plan") or {}).get("steps") or []
    cot = any(isinstance(s, dict) and (s.get("params") or {}).get("cot") is True for s in steps)
    return "cot" if cot else "zero-shot"


def _scorer_letter(sample: dict[str, Any], n: int) -> int | None:
    """The choice a scorer recorded as a single letter ``answer``, or None."""
    for score in (sample.get("scores") or {}).values():
        answer = score.get("answer") if isinstance(score, dict) else None
        if isinstance(answer, str) and len(answer.strip()) == 1:
            k = ord(answer.strip().upper()) - ord("A")
            if 0 <= k < n:
                return k
    return None


def _order(meta: dict[str, Any], choices: list[Any], target: Any) -> list[int] | str:
    """BBQ's option index of each of the sample's choices, or why it cannot be known."""
    texts = [meta.get(f"ans{i}") for i in range(len(choices))]
    if choices and all(isinstance(t, str) for t in texts):
        norm = [" ".join(t.split()).lower() for t in texts]
        out = [
            norm.index(w) if w in norm else -1
            for w in (" ".join(str(c).split()).lower() for c in choices)
        ]
        if -1 in out:
            return "a choice of the sample is none of the metadata's ans0..."
        return out
    label = meta.get("label")
    if isinstance(label, int) and isinstance(target, str) and target != chr(ord("A") + label):
        return (
            f"the sample's choices are not in BBQ's order (target {target!r}, BBQ label "
            f"{label}) and its metadata has no ans0... to map them back"
        )
    return list(range(len(choices)))


def sample_record(line: int, sample: dict[str, Any], header: dict[str, Any]) -> QARecord | Rejected:
    """One BBQ sample of an inspect-ai log as a :class:`QARecord`, or why not."""
    sid, epoch = sample.get("id"), sample.get("epoch") or 1
    label = f"sample {sid!r} (epoch {epoch})"
    raw = _runner.compact(sample, HEAVY)
    meta = sample.get("metadata") or {}
    if not isinstance(meta, dict):
        return Rejected(line, raw, f"{label}: 'metadata' must be an object", "metadata")
    if not _is_bbq(sample):
        return Rejected(
            line, raw, f"{label}: no BBQ example_id (or source_id), category and answer_info"
        )
    ev = header.get("eval") or {}
    system = _first(meta.get("system"), ev.get("model"))
    if system is None:
        return Rejected(line, raw, f"{label}: the log names no model", "system")
    text = output_text(sample.get("output")) or ""
    error = sample.get("error")
    if not text and error:  # the runner failed: no answer of the system's to count
        message = str(error.get("message", "") if isinstance(error, dict) else error)[:300]
        return Rejected(
            line, raw, f"{label}: the runner recorded an error and no output: {message}"
        )
    # an empty answer without an error is the system's: stored, and unparsable
    choices = sample.get("choices") or []
    if not isinstance(choices, list):
        return Rejected(line, raw, f"{label}: 'choices' must be a list", "choices")
    if not isinstance(sample.get("scores") or {}, dict):
        return Rejected(line, raw, f"{label}: 'scores' must be an object", "scores")
    order = _order(meta, choices, sample.get("target"))
    if isinstance(order, str):
        return Rejected(line, raw, f"{label}: {order}", "choices")
    k = _scorer_letter(sample, len(choices))
    index = None if k is None else order[k]
    if index is None and order != sorted(order):
        return Rejected(
            line,
            raw,
            f"{label}: no scorer letter, and the sample's choices are not in BBQ's order, "
            "so letters in the output cannot be read against the item bank",
            "choices",
        )
    gold = meta.get("label")
    if gold is None or isinstance(gold, bool):  # inspect_evals keeps the label as the target
        gold = sample.get("target") if isinstance(sample.get("target"), str) else None
    return QARecord(
        line=line,
        raw=raw,
        system=system,
        response=text,
        example_id=str(_example_id(meta)),
        category=str(meta["category"]),
        predicted_index=index,
        gold=gold if isinstance(gold, int | str) else None,
        factors={"strategy": _strategy(meta, header)},
        repeat=epoch - 1 if isinstance(epoch, int) and epoch > 0 else 0,
        sample_id=f"{sid}_epoch_{epoch}",
        item_bank=_first(
            meta.get("item_bank"),
            (ev.get("metadata") or {}).get("item_bank"),
            (ev.get("task_args") or {}).get("item_bank"),
        ),
    )


def read(path: Path) -> ResponseStream:
    """Stream the answers of an inspect-ai log of a BBQ task.

    Parameters
    ----------
    path : Path
        A ``.eval`` or ``.json`` log.

    Returns
    -------
    ResponseStream
        Records are :class:`~cuegap.ingest.bbq_results.QARecord` or
        :class:`~cuegap.ingest.Rejected`.

    Raises
    ------
    IngestError
        For a truncated or unreadable zip, an unknown log version, or a file that is not an
        inspect-ai log.
    """
    return inspect_log.read_samples(Path(path), sample_record)
