"""Reader for lm-evaluation-harness samples of BBQ tasks (the QA design).

lm-eval's own ``bbq`` task (``lm_eval/tasks/bbq/bbq_multiple_choice.yaml``, and any task
whose documents are BBQ records) logs, with ``--log_samples``, one line per document: the
BBQ record itself as ``doc`` (``example_id``, ``category``, ``answer_info``, ``ans0`` -
``ans2``, ``label``, ...), the scored continuations in ``arguments`` and one
log-likelihood per continuation in ``resps`` / ``filtered_resps`` (as strings in 0.4.x).
The results file of the same timestamp names the model (:mod:`cuegap.ingest.lm_eval`).

The answer of a ``multiple_choice`` task is the continuation with the highest
log-likelihood (the first on ties), mapped back to BBQ's option order: lm-eval's ``bbq``
scores the two people in BBQ's order followed by ten "unknown" phrases of its own
("Unknown", "Cannot answer", "Not enough info", ...), so the choice index is not BBQ's
option index. A continuation whose text is one of the record's options is that option;
any other continuation that is an uncertainty phrase (:data:`qa_parsing.UNCERTAIN`) is the
record's unknown option. The record goes to the loader with ``predicted_index`` set and
the chosen continuation's text kept as the raw answer. A ``generate_until`` task (lm-eval's
``bbq_generate``) gives the generated text, parsed by the loader
(:mod:`cuegap.ingest.qa_parsing`).

Join: ``doc.example_id`` + ``doc.category`` (BBQ's own ids) to a QA item bank in the
store; ``doc.label`` is checked against the bank's gold option. ``item_bank`` is the
task's ``metadata.item_bank`` when it has one, else every QA bank is searched. System: as
for lm-eval (``model_args.pretrained``, ``model_args.model``, else the model type, e.g.
``dummy``). Strategy: ``few-shot`` when the task ran with ``num_fewshot`` > 0, else
``zero-shot``.

A line that is not a BBQ record, or whose answer cannot be mapped to an option, is
quarantined by the loader with its line and reason; so is a record the bank does not hold.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from cuegap.ingest import _runner, lm_eval
from cuegap.ingest._guard import guard_all
from cuegap.ingest._records import Rejected, ResponseStream
from cuegap.ingest.bbq_results import QARecord
from cuegap.ingest.qa_parsing import UNCERTAIN

NAME = "lm-eval-bbq"
BBQ_FIELDS = ("example_id", "category", "answer_info")
_UNCERTAIN = tuple(p.lower() for p in UNCERTAIN)


def is_bbq_record(doc: Any) -> bool:
    """True for a dict that carries BBQ's ids and answer metadata."""
    return isinstance(doc, dict) and all(k in doc for k in BBQ_FIELDS)


def detect(path: Path) -> bool:
    """True for an lm-eval samples file whose first document is a BBQ record."""
    if not lm_eval.detect(path):
        return False
    obj = _runner.first_json_line(path, lenient=True)
    return isinstance(obj, dict) and is_bbq_record(obj.get("doc"))


def _norm(text: str) -> str:
    return " ".join(text.split()).lower()


def bbq_option(doc: dict[str, Any], text: str) -> int | None:
    """BBQ's option index (0-2) of a chosen continuation, or None when it is no option.

    Parameters
    ----------
    doc : dict
        The BBQ record (``ans0`` ... and ``answer_info``).
    text : str
        The chosen continuation.
    """
    want = _norm(text)
    options = [k for k in range(10) if isinstance(doc.get(f"ans{k}"), str)]
    for k in options:
        if _norm(doc[f"ans{k}"]) == want:
            return k
    infos = doc.get("answer_info") or {}
    unknown = [
        k
        for k in options
        if isinstance(infos.get(f"ans{k}"), list)
        and len(infos[f"ans{k}"]) > 1
        and str(infos[f"ans{k}"][1]).lower() == "unknown"
    ]
    if len(unknown) == 1 and any(p in want for p in _UNCERTAIN):
        return unknown[0]
    return None


def _strategy(results: dict[str, Any], task: str) -> str:
    shots = (results.get("n-shot") or {}).get(task)
    return "few-shot" if isinstance(shots, int) and shots > 0 else "zero-shot"


def _records(
    fh: Any, task: str, results: dict[str, Any], system: str | None
) -> Iterator[QARecord | Rejected]:
    task_config = results["configs"][task]
    output_type = task_config.get("output_type")
    bank = (task_config.get("metadata") or {}).get("item_bank")
    factors = {"strategy": _strategy(results, task)}
    for entry in _runner.json_lines(fh, lenient=True):
        if isinstance(entry, Rejected):
            yield entry
            continue
        line, raw, sample = entry
        yield from guard_all(
            line, raw, _sample, line, raw, sample, task, output_type, bank, factors, system
        )


def _sample(
    line: int,
    raw: str,
    sample: Any,
    task: str,
    output_type: Any,
    bank: Any,
    factors: dict[str, str],
    system: str | None,
) -> Iterator[QARecord | Rejected]:
    """The records of one samples line (several for a generate_until task with repeats)."""
    doc = sample.get("doc") if isinstance(sample, dict) else None
    if not is_bbq_record(doc):
        yield Rejected(
            line, raw, "not a BBQ sample: 'doc' lacks example_id, category or answer_info"
        )
        return
    label = f"doc_id {sample.get('doc_id')!r} of task {task!r}"
    if not isinstance(doc["answer_info"], dict):
        yield Rejected(line, raw, f"{label}: 'doc.answer_info' must be an object", "answer_info")
        return
    for key in ("example_id", "category"):
        if isinstance(doc[key], bool) or not isinstance(doc[key], str | int):
            yield Rejected(line, raw, f"{label}: 'doc.{key}' must be a string or integer", key)
            return
    gold = doc.get("label")
    if gold is not None and (isinstance(gold, bool) or not isinstance(gold, int | str)):
        yield Rejected(line, raw, f"{label}: 'doc.label' must be an index or a letter", "label")
        return
    if system is None:
        yield Rejected(line, raw, "the results file names no model", "system")
        return
    base: dict[str, Any] = {
        "line": line,
        "raw": raw,
        "system": system,
        "example_id": str(doc["example_id"]),
        "category": str(doc["category"]),
        "gold": doc.get("label"),
        "factors": dict(factors),
        "sample_id": f"{task}:{sample.get('doc_id')}",
        "item_bank": bank if isinstance(bank, str) else None,
    }
    if output_type == "multiple_choice":
        try:
            scores = sample.get("filtered_resps") or sample.get("resps") or []
            lls = [lm_eval._loglikelihood(s) for s in scores]
        except (TypeError, ValueError, IndexError) as exc:
            yield Rejected(line, raw, f"{label}: unreadable log-likelihoods: {exc}", "resps")
            return
        choices = [c for _, c in lm_eval._arguments(sample)]
        if not lls or len(choices) != len(lls) or not all(isinstance(c, str) for c in choices):
            yield Rejected(
                line, raw, f"{label}: {len(lls)} log-likelihoods for {len(choices)} options"
            )
            return
        chosen = choices[max(range(len(lls)), key=lls.__getitem__)].strip()
        index = bbq_option(doc, chosen)
        if index is None:
            yield Rejected(
                line,
                raw,
                f"{label}: the chosen continuation {chosen[:80]!r} is none of the BBQ "
                "record's options and no uncertainty phrase",
                "resps",
            )
            return
        yield QARecord(response=chosen, predicted_index=index, **base)
    elif output_type == "generate_until":
        resps = sample.get("resps") or []
        gens = resps[0] if resps and isinstance(resps[0], list) else resps
        if not gens or not all(isinstance(g, str) for g in gens):
            yield Rejected(line, raw, f"{label}: no generated text in 'resps'", "resps")
            return
        for i, text in enumerate(gens):
            rec = QARecord(response=text, repeat=i, **base)
            if len(gens) > 1:
                rec.sample_id = f"{rec.sample_id}:{i}"
            yield rec
    else:
        yield Rejected(
            line,
            raw,
            f"{label}: output_type {output_type!r} carries no answer (cuegap reads "
            "multiple_choice and generate_until BBQ tasks)",
            "output_type",
        )


def read(path: Path) -> ResponseStream:
    """Stream the answers of an lm-eval BBQ samples file.

    Parameters
    ----------
    path : Path
        ``samples_<task>_<timestamp>.jsonl``; ``results_<timestamp>.json`` must be beside it.

    Returns
    -------
    ResponseStream
        Records are :class:`~cuegap.ingest.bbq_results.QARecord` or
        :class:`~cuegap.ingest.Rejected`.

    Raises
    ------
    IngestError
        When the results file is missing or unreadable, or does not hold the task.
    """
    path = Path(path)
    task, results_path = lm_eval._results_file(path)
    results = lm_eval._load_results(results_path, task, path)
    config = dict(results["config"])
    config["model_args"] = lm_eval._model_args(config.get("model_args"))
    system = lm_eval._system_name(config)
    run = lm_eval.run_info(results, task)
    total = path.stat().st_size
    fh = path.open("rb")

    def records() -> Iterator[QARecord | Rejected]:
        with fh:
            yield from _records(fh, task, results, system)

    return ResponseStream(
        run,
        _runner.guarded(records(), path),  # type: ignore[arg-type]
        lambda: total if fh.closed else fh.tell(),
        total,
    )
