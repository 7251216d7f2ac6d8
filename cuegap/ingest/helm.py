"""Reader for HELM runs: ``benchmark_output/runs/SUITE/RUN/scenario_state.json``.

``scenario_state.json`` holds the adapter spec (model, decoding settings) and one *request
state* per (instance, train trial): the instance (input, references, ``extra_data``), the
request sent (prompt, model) and the result (completions). The request states are
streamed with ijson, one at a time; a record's ``line`` is the request state's position.
``run_spec.json`` beside it, when present, adds the run name and scenario to the run's
settings, and ``per_instance_stats.json``, when present, gives each sample HELM's own
scores (``[options] stats`` in the mapping, default the exact-match family; read once,
keeping only those numbers).

The answer is the first completion's text; for multiple-choice-joint adapters a letter in
the request state's ``output_mapping`` is replaced by the option it stands for (the raw
letter stays in ``runner_result["completion"]``). Adapters that send one request per option
(``multiple_choice_separate_*``) are not read: their request states are quarantined.

The view a mapping sees per request state::

    instance, extra_data (instance.extra_data), instance_id, perturbation (its name),
    train_trial_index, request, result, output_mapping, adapter_spec, run_spec

Defaults: ``system`` = ``extra_data.system``, else ``request.model``; every other field
``extra_data.<field>``; ``repeat`` = ``extra_data.repeat``, else the train trial index. HELM
does not record its own version in the run folder, so the run's ``runner_version`` is empty.
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

NAME = "helm"
_FIELDS = ("item_bank", "item_id", "probe", "individual", "consequences", "prompt_variant")
DEFAULTS: dict[str, Any] = {
    "system": ["extra_data.system", "request.model", "adapter_spec.model"],
    **{f: f"extra_data.{f}" for f in _FIELDS},
    "repeat": ["extra_data.repeat", "train_trial_index"],
}
DEFAULT_STATS = (
    "exact_match",
    "quasi_exact_match",
    "prefix_exact_match",
    "quasi_prefix_exact_match",
)
_HEAD = re.compile(rb'^\s*\{\s*"adapter_spec"\s*:\s*\{')
_SPEC_KEYS = (
    "method",
    "model",
    "model_deployment",
    "temperature",
    "max_tokens",
    "num_outputs",
    "num_train_trials",
    "max_train_instances",
    "max_eval_instances",
    "stop_sequences",
    "instructions",
)


def detect(path: Path) -> bool:
    """True for a JSON file that starts like HELM's ``scenario_state.json``."""
    return path.is_file() and path.suffix == ".json" and bool(_HEAD.match(_runner.head(path, 256)))


def _sibling_json(path: Path, name: str) -> dict[str, Any] | None:
    p = path.with_name(name)
    if not p.is_file():
        return None
    try:
        doc = orjson.loads(p.read_bytes())
    except (OSError, orjson.JSONDecodeError) as exc:
        raise IngestError(f"{p}: not readable JSON beside {path.name}: {exc}") from None
    return doc if isinstance(doc, dict) else None


def _stats_key(instance_id: Any, trial: Any, perturbation: Any) -> tuple[str, int, str]:
    name = perturbation.get("name") if isinstance(perturbation, dict) else None
    return str(instance_id), int(trial or 0), name or ""


def _per_instance_stats(path: Path, wanted: tuple[str, ...]) -> dict[tuple[str, int, str], dict]:
    """HELM's per-instance scores, keeping only the ``wanted`` stat names."""
    p = path.with_name("per_instance_stats.json")
    if not p.is_file():
        return {}
    out: dict[tuple[str, int, str], dict[str, Any]] = {}
    for entry in _runner.JsonItems(p, "item"):
        if isinstance(entry, _runner.Truncated):
            raise IngestError(f"{p}: truncated or invalid JSON ({entry.error})")
        if not isinstance(entry, dict):
            continue
        scores = {}
        for stat in entry.get("stats") or []:
            name = (stat.get("name") or {}).get("name") if isinstance(stat, dict) else None
            if name in wanted and stat.get("count"):
                scores[name] = stat.get("mean")
        if scores:
            key = _stats_key(
                entry.get("instance_id"), entry.get("train_trial_index"), entry.get("perturbation")
            )
            out[key] = scores
    return out


def run_info(header: dict[str, Any], run_spec: dict[str, Any] | None) -> RunInfo:
    """Run metadata from the adapter spec and, when present, run_spec.json."""
    spec = header.get("adapter_spec") or {}
    model = spec.get("model")
    systems = {}
    if isinstance(model, str):
        systems[model] = SystemInfo(
            provider=model.split("/", 1)[0] if "/" in model else None,
            metadata=_runner.prune({"model_deployment": spec.get("model_deployment")}) or None,
        )
    run_spec = run_spec or {}
    metrics = run_spec.get("metric_specs")
    settings = _runner.prune(
        {
            "run": run_spec.get("name"),
            "scenario": run_spec.get("scenario_spec"),
            "metrics": [
                m.get("class_name")
                for m in (metrics if isinstance(metrics, list) else [])
                if isinstance(m, dict)
            ],
            "adapter_spec": {k: spec[k] for k in _SPEC_KEYS if k in spec},
        }
    )
    return RunInfo(runner=NAME, runner_version=None, settings=settings, systems=systems)


def _state_record(
    line: int,
    state: dict[str, Any],
    header: dict[str, Any],
    run_spec: dict[str, Any] | None,
    stats: dict[tuple[str, int, str], dict],
    mapping: Mapping,
) -> Record:
    raw = _runner.compact(state)
    instance = state.get("instance") if isinstance(state.get("instance"), dict) else {}
    iid = instance.get("id")
    trial = state.get("train_trial_index") or 0
    perturbation = instance.get("perturbation")
    pname = perturbation.get("name") if isinstance(perturbation, dict) else None
    label = f"instance {iid!r} (train trial {trial}" + (
        f", perturbation {pname!r})" if pname else ")"
    )
    if state.get("reference_index") is not None:
        return Rejected(
            line,
            raw,
            f"{label}: one request per answer option (a multiple_choice_separate adapter); "
            "cuegap reads generation and multiple_choice_joint runs",
            "reference_index",
        )
    request = state.get("request") if isinstance(state.get("request"), dict) else {}
    result = state.get("result") if isinstance(state.get("result"), dict) else None
    if result is None or result.get("success") is False:
        error = (result or {}).get("error") or "no result"
        return Rejected(line, raw, f"{label}: the request failed: {error}", "response")
    completions = result.get("completions") or []
    completion = (
        completions[0].get("text") if completions and isinstance(completions[0], dict) else None
    )
    mapping_out = (
        state.get("output_mapping") if isinstance(state.get("output_mapping"), dict) else None
    )
    response = completion
    if mapping_out and isinstance(completion, str) and completion.strip() in mapping_out:
        response = mapping_out[completion.strip()]
    view = {
        "instance": instance,
        "extra_data": instance.get("extra_data") or {},
        "instance_id": iid,
        "perturbation": pname,
        "train_trial_index": trial,
        "request": request,
        "result": result,
        "output_mapping": mapping_out,
        "adapter_spec": header.get("adapter_spec") or {},
        "run_spec": run_spec or {},
    }
    correct = [
        r.get("output", {}).get("text")
        for r in instance.get("references") or []
        if isinstance(r, dict) and "correct" in (r.get("tags") or [])
    ]
    runner_result = _runner.prune(
        {
            "completion": completion if response != completion else None,
            "references": correct,
            "stats": stats.get(_stats_key(iid, trial, perturbation)),
            "n_completions": len(completions) if len(completions) > 1 else None,
        }
    )
    sid = f"{iid}" + (f":trial{trial}" if trial else "") + (f":{pname}" if pname else "")
    return _runner.make_record(
        line,
        raw,
        view,
        mapping,
        sample=label,
        response=response,
        prompt=request.get("prompt") if isinstance(request.get("prompt"), str) else None,
        sample_id=sid,
        runner_result=runner_result,
    )


def read(path: Path, mapping: Mapping | Path | None = None) -> ResponseStream:
    """Stream a HELM ``scenario_state.json`` as cuegap response records.

    Parameters
    ----------
    path : Path
        ``scenario_state.json`` of one HELM run.
    mapping : Mapping or Path, optional
        How instance ``extra_data`` maps to cuegap fields, and ``[options] stats``;
        defaults in the module docstring.

    Returns
    -------
    ResponseStream

    Raises
    ------
    IngestError
        For a file that is not a HELM scenario state, or unreadable files beside it.
    """
    path = Path(path)
    m = as_mapping(mapping)
    m.check_runner(NAME, path)
    wanted = m.options.get("stats", DEFAULT_STATS)
    if not (isinstance(wanted, list | tuple) and all(isinstance(s, str) for s in wanted)):
        raise ValueError(f"{m.source}: [options] stats must be a list of HELM stat names")
    m = m.over(DEFAULTS)
    header, error = _runner.scan_header(path, {"request_states"}, stop_when={"adapter_spec"})
    if not isinstance(header.get("adapter_spec"), dict):
        raise IngestError(f"{path}: not a HELM scenario_state.json: no adapter_spec ({error})")
    run_spec = _sibling_json(path, "run_spec.json")
    stats = _per_instance_stats(path, tuple(wanted))
    items = _runner.JsonItems(path, "request_states.item")

    def records() -> Iterator[Record]:
        yield from _runner.each_object(
            items,
            "request state",
            lambda line, state: _state_record(line, state, header, run_spec, stats, m),
        )

    return ResponseStream(
        run_info(header, run_spec), _runner.guarded(records(), path), items.position, items.total
    )
