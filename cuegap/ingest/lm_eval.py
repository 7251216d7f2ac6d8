"""Reader for lm-evaluation-harness ``--log_samples`` output.

``lm_eval --log_samples --output_path OUT`` writes, per run, ``results_<timestamp>.json``
(the model, its arguments and every task's config) and one
``samples_<task>_<timestamp>.jsonl`` per task (one line per document). cuegap ingests a
samples file and joins it with the results file of the same timestamp in the same folder:
only the results file names the model and the generation settings.

What counts as the system's answer depends on the task's ``output_type``:

- ``generate_until``: the generated text (``resps``), one record per repeat (a task's
  ``repeats``); the harness's filtered answer(s) go to ``runner_result["filtered"]``.
- ``multiple_choice``: the option with the highest log-likelihood (the argmax of
  ``filtered_resps``; the first on ties), as the option's text from ``arguments``.

The view a mapping sees per line::

    doc (the dataset row), doc_id, target, arguments, resps, filtered_resps, filter,
    metrics, task, repeat_index, task_config (results.configs[task]), config
    (results.config, model_args as a dict), results (the whole results file), sample

Defaults: ``system`` = ``doc.system``, else ``config.model_args.pretrained``, else
``config.model_args.model``, else ``config.model`` (the harness's model type, e.g.
``dummy``); ``item_bank`` = ``doc.item_bank`` or ``task_config.metadata.item_bank``; the
other fields ``doc.<field>``; ``repeat`` = ``doc.repeat`` or the repeat index.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from cuegap.ingest import _runner
from cuegap.ingest._records import (
    IngestError,
    Record,
    Rejected,
    ResponseStream,
    RunInfo,
    SystemInfo,
)
from cuegap.ingest.mapping import Mapping, as_mapping

NAME = "lm-eval"
RUNNER = "lm-evaluation-harness"
DEFAULTS: dict[str, Any] = {
    "system": [
        "doc.system",
        "config.model_args.pretrained",
        "config.model_args.model",
        "config.model",
    ],
    "item_bank": ["doc.item_bank", "task_config.metadata.item_bank"],
    "item_id": "doc.item_id",
    "probe": "doc.probe",
    "individual": "doc.individual",
    "consequences": "doc.consequences",
    "prompt_variant": "doc.prompt_variant",
    "repeat": ["doc.repeat", "repeat_index"],
}
_SAMPLES = re.compile(r"^samples_(?P<task>.+)_(?P<ts>\d{4}-\d{2}-\d{2}T[0-9.\-]+)\.jsonl$")


def detect(path: Path) -> bool:
    """True for a ``samples_<task>_<timestamp>.jsonl`` whose first line is a logged sample."""
    if not (path.is_file() and _SAMPLES.match(path.name)):
        return False
    obj = _runner.first_json_line(path, lenient=True)  # NaN metrics: see _runner.loads_lenient
    return isinstance(obj, dict) and "doc_id" in obj and "resps" in obj


def _model_args(value: Any) -> dict[str, Any]:
    """``model_args`` as a dict (older harness versions store ``"k=v,k=v"``)."""
    if isinstance(value, dict):
        return value
    out: dict[str, Any] = {}
    if isinstance(value, str):
        for part in value.split(","):
            key, sep, val = part.partition("=")
            if sep and key.strip():
                out[key.strip()] = val.strip()
    return out


def _results_file(path: Path) -> tuple[str, Path]:
    m = _SAMPLES.match(path.name)
    if m is None:
        raise IngestError(
            f"{path}: not an lm-eval samples file name (expected samples_<task>_<timestamp>.jsonl)"
        )
    results = path.with_name(f"results_{m['ts']}.json")
    if not results.is_file():
        raise IngestError(
            f"{path}: its results file {results.name} is not in the same folder; lm-eval "
            "writes it next to the samples and only it names the model and settings"
        )
    return m["task"], results


def _load_results(results: Path, task: str, path: Path) -> dict[str, Any]:
    try:
        doc = _runner.loads_lenient(results.read_bytes())  # BBQ's metrics can be NaN
    except (OSError, orjson.JSONDecodeError) as exc:
        raise IngestError(f"{results}: not a readable lm-eval results file: {exc}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("config"), dict):
        raise IngestError(f"{results}: not an lm-eval results file (no 'config')")
    configs = doc.get("configs") or {}
    if task not in configs:
        raise IngestError(
            f"{path}: task {task!r} is not in {results.name} (has {', '.join(configs) or 'none'})"
        )
    return doc


def _system_name(config: dict[str, Any]) -> str | None:
    args = config.get("model_args") or {}
    for value in (args.get("pretrained"), args.get("model"), config.get("model")):
        if isinstance(value, str) and value:
            return value
    return None


def run_info(results: dict[str, Any], task: str) -> RunInfo:
    """Run metadata from a results file, for one task."""
    config = dict(results["config"])
    config["model_args"] = _model_args(config.get("model_args"))
    task_config = results["configs"][task]
    name = _system_name(config)
    systems = {}
    if name:
        systems[name] = SystemInfo(
            provider=config.get("model"),
            version=config["model_args"].get("revision"),
            metadata=_runner.prune({"model_name": results.get("model_name")}) or None,
        )
    settings = _runner.prune(
        {
            "task": task,
            "output_type": task_config.get("output_type"),
            "task_version": (results.get("versions") or {}).get(task),
            "task_hash": (results.get("task_hashes") or {}).get(task),
            "num_fewshot": (results.get("n-shot") or {}).get(task),
            "model": config.get("model"),
            "model_args": config["model_args"],
            "gen_kwargs": config.get("gen_kwargs"),
            "generation_kwargs": task_config.get("generation_kwargs"),
            "repeats": task_config.get("repeats"),
            "batch_size": config.get("batch_size"),
            "limit": config.get("limit"),
            "random_seed": config.get("random_seed"),
            "numpy_seed": config.get("numpy_seed"),
            "torch_seed": config.get("torch_seed"),
            "fewshot_seed": config.get("fewshot_seed"),
            "system_instruction": results.get("system_instruction"),
            "chat_template": results.get("chat_template"),
            "git_hash": results.get("git_hash"),
        }
    )
    bank = (task_config.get("metadata") or {}).get("item_bank")
    return RunInfo(
        runner=RUNNER,
        runner_version=results.get("lm_eval_version"),
        item_bank=bank if isinstance(bank, str) else None,
        started_at=_runner.iso(results.get("date")),
        settings=settings,
        systems=systems,
    )


def _arg_order(key: str) -> tuple[int, str]:
    """The sort key of an ``arguments`` entry ``gen_args_N``: N, then the name."""
    tail = key.rsplit("_", 1)[-1]
    return (int(tail) if tail.isdigit() else 1 << 62, key)


def _arguments(sample: dict[str, Any]) -> list[tuple[Any, Any]]:
    """(context, continuation-or-gen-kwargs) per request, old (list) or new (dict) layout."""
    args = sample.get("arguments")
    if isinstance(args, dict):
        return [
            (a.get("arg_0"), a.get("arg_1"))
            for _, a in sorted(args.items(), key=lambda kv: _arg_order(kv[0]))
            if isinstance(a, dict)
        ]
    if isinstance(args, list):
        return [(a[0], a[1] if len(a) > 1 else None) for a in args if isinstance(a, list) and a]
    return []


def _loglikelihood(entry: Any) -> float:
    """The log-likelihood of one option: ``[ll, is_greedy]`` or ``[[ll, is_greedy]]``."""
    while isinstance(entry, list) and entry and isinstance(entry[0], list):
        entry = entry[0]
    value = entry[0] if isinstance(entry, list) else entry
    return float(value)


def _records(
    path: Path,
    fh: Any,
    task: str,
    results: dict[str, Any],
    config: dict[str, Any],
    mapping: Mapping,
) -> Iterator[Record]:
    task_config = results["configs"][task]
    output_type = task_config.get("output_type")
    for line in _runner.json_lines(fh, lenient=True):
        if isinstance(line, Rejected):
            yield line
            continue
        line_no, text, sample = line
        if not isinstance(sample, dict) or not isinstance(sample.get("doc"), dict):
            yield Rejected(line_no, text, "not an lm-eval sample (no 'doc' object)", "doc")
            continue
        doc_id = sample.get("doc_id")
        label = f"doc_id {doc_id!r} of task {task!r}"
        args = _arguments(sample)
        prompt = args[0][0] if args and isinstance(args[0][0], str) else None
        names = sample.get("metrics")
        names = names if isinstance(names, list) else []
        metrics = {m: sample.get(m) for m in names if isinstance(m, str)}
        base = {
            "task": task,
            "output_type": output_type,
            "target": sample.get("target"),
            "filter": sample.get("filter"),
            "metrics": metrics or None,
        }
        view = {
            "doc": sample["doc"],
            "doc_id": doc_id,
            "target": sample.get("target"),
            "arguments": sample.get("arguments"),
            "resps": sample.get("resps"),
            "filtered_resps": sample.get("filtered_resps"),
            "filter": sample.get("filter"),
            "metrics": metrics,
            "task": task,
            "repeat_index": 0,
            "task_config": task_config,
            "config": config,
            "results": results,
            "sample": sample,
        }
        if output_type == "multiple_choice":
            try:
                scores = sample.get("filtered_resps") or sample.get("resps") or []
                lls = [_loglikelihood(s) for s in scores]
            except (TypeError, ValueError, IndexError) as exc:
                yield Rejected(
                    line_no, text, f"{label}: unreadable log-likelihoods: {exc}", "resps"
                )
                continue
            choices = [c.strip() if isinstance(c, str) else c for _, c in args]
            if not lls or len(choices) != len(lls):
                yield Rejected(
                    line_no,
                    text,
                    f"{label}: {len(lls)} log-likelihoods for {len(choices)} options",
                    "resps",
                )
                continue
            chosen = max(range(len(lls)), key=lls.__getitem__)
            result = _runner.prune(
                {**base, "choices": choices, "loglikelihoods": lls, "chosen": chosen}
            )
            yield _runner.make_record(
                line_no,
                text,
                view,
                mapping,
                sample=label,
                response=choices[chosen],
                prompt=prompt,
                sample_id=f"{task}:{doc_id}",
                runner_result=result,
            )
            continue
        if output_type != "generate_until":
            yield Rejected(
                line_no,
                text,
                f"{label}: output_type {output_type!r} carries no answer text (cuegap reads "
                "generate_until and multiple_choice tasks)",
                "output_type",
            )
            continue
        resps = sample.get("resps") or []
        generations = resps[0] if resps and isinstance(resps[0], list) else resps
        filtered = sample.get("filtered_resps") or []
        if not generations:
            yield Rejected(line_no, text, f"{label}: no generations in 'resps'", "resps")
            continue
        kept = filtered[0] if isinstance(filtered, list) and len(filtered) == 1 else filtered
        result = _runner.prune({**base, "filtered": kept})
        for i, generated in enumerate(generations):
            view["repeat_index"] = i
            rec = _runner.make_record(
                line_no,
                text,
                view,
                mapping,
                sample=label,
                response=generated,
                prompt=prompt,
                sample_id=f"{task}:{doc_id}" + (f":{i}" if len(generations) > 1 else ""),
                runner_result=result,
            )
            yield rec
            if isinstance(rec, Rejected):
                break  # one quarantine entry per line


def read(path: Path, mapping: Mapping | Path | None = None) -> ResponseStream:
    """Stream an lm-eval samples file as cuegap response records.

    Parameters
    ----------
    path : Path
        ``samples_<task>_<timestamp>.jsonl``; ``results_<timestamp>.json`` must be beside it.
    mapping : Mapping or Path, optional
        How document fields map to cuegap fields; defaults in the module docstring.

    Returns
    -------
    ResponseStream

    Raises
    ------
    IngestError
        When the results file is missing or unreadable, or does not hold the task.
    """
    path = Path(path)
    m = as_mapping(mapping)
    m.check_runner(NAME, path)
    m = m.over(DEFAULTS)
    task, results_path = _results_file(path)
    results = _load_results(results_path, task, path)
    config = dict(results["config"])
    config["model_args"] = _model_args(config.get("model_args"))
    total = path.stat().st_size
    fh = path.open("rb")

    def records() -> Iterator[Record]:
        with fh:
            yield from _records(path, fh, task, results, config, m)

    return ResponseStream(
        run_info(results, task),
        _runner.guarded(records(), path),
        lambda: total if fh.closed else fh.tell(),
        total,
    )
