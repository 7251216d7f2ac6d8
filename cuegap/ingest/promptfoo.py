"""Reader for promptfoo eval results: ``promptfoo eval -o results.json``.

The file is one JSON document, ``{"evalId", "results": {"version", "timestamp",
"results": [...], ...}, "config", "metadata", ...}``; format versions 2 (with a
``table``) and 3 (with ``prompts``) are read. The ``results.results`` array (one entry per
test case x prompt x provider) is streamed with ijson, one entry at a time; a first
event-level pass reads everything else (the config follows the results in the file)
without building the results. A record's ``line`` is the entry's 1-based position.

The view a mapping sees per entry::

    vars, metadata (the test's metadata; promptfoo merges defaultTest.metadata in),
    testCase, provider ({id, label}), provider_name (the provider's label, from the
    config when the entry lacks it, as in version 2, else its id), prompt ({raw, label}),
    response, success, score, gradingResult, testIdx, promptIdx, repeat_index (0),
    result (the whole entry), config (the eval config), eval ({evalId, version, timestamp})

Defaults: ``system`` = ``metadata.system``, else ``provider_name``; every other field
``metadata.<field>``, then ``vars.<field>``; ``repeat`` also falls back to 0.
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

NAME = "promptfoo"
VERSIONS = (2, 3)
_FIELDS = ("item_bank", "item_id", "probe", "individual", "consequences", "prompt_variant")
DEFAULTS: dict[str, Any] = {
    "system": ["metadata.system", "vars.system", "provider_name"],
    **{f: [f"metadata.{f}", f"vars.{f}"] for f in _FIELDS},
    "repeat": ["metadata.repeat", "vars.repeat", "repeat_index"],
}
_HEAD = re.compile(
    rb'^\s*\{\s*(?:"evalId"\s*:\s*(?:"[^"]*"|null)\s*,\s*)?"results"\s*:\s*\{\s*"version"\s*:'
)


def detect(path: Path) -> bool:
    """True for a JSON file that starts like promptfoo's ``-o results.json`` output."""
    return path.is_file() and path.suffix == ".json" and bool(_HEAD.match(_runner.head(path, 512)))


def _provider_name(provider: Any) -> str | None:
    if isinstance(provider, dict):
        for key in ("label", "id"):
            if isinstance(provider.get(key), str) and provider[key]:
                return provider[key]
    if isinstance(provider, str) and provider:
        return provider
    return None


def _obj(value: Any) -> dict[str, Any]:
    """``value`` when it is a JSON object, else an empty one (a header value of the wrong
    type describes nothing: it is passed over)."""
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def run_info(doc: dict[str, Any]) -> RunInfo:
    """Run metadata from the file's config, metadata and results header; a value of the
    wrong type there is passed over, as if absent."""
    config = _obj(doc.get("config"))
    summary = _obj(doc.get("results"))
    systems: dict[str, SystemInfo] = {}
    providers = []
    for p in _list(config.get("providers")):
        if isinstance(p, str):
            p = {"id": p}
        if not isinstance(p, dict):
            continue
        providers.append(_runner.prune({k: p.get(k) for k in ("id", "label", "config")}))
        name = _provider_name(p)
        if name:
            systems[name] = SystemInfo(
                provider=p.get("id") if isinstance(p.get("id"), str) else None,
                metadata=_obj(p.get("config")) or None,
            )
    meta = _obj(doc.get("metadata"))
    settings = _runner.prune(
        {
            "evalId": doc.get("evalId"),
            "description": config.get("description"),
            "providers": providers,
            "prompts": [
                p.get("label") or p.get("raw")
                for p in _list(summary.get("prompts"))
                if isinstance(p, dict)
            ],
            "runtimeOptions": doc.get("runtimeOptions"),
            "format_version": summary.get("version"),
        }
    )
    bank = _obj(_obj(config.get("defaultTest")).get("metadata")).get("item_bank")
    return RunInfo(
        runner=NAME,
        runner_version=meta.get("promptfooVersion"),
        item_bank=bank if isinstance(bank, str) else None,
        started_at=_runner.iso(summary.get("timestamp")),
        settings=settings,
        systems=systems,
    )


def _labels(doc: dict[str, Any]) -> dict[str, str]:
    """Provider id -> label from the config (version 2 entries carry only the id)."""
    out = {}
    for p in _list(_obj(doc.get("config")).get("providers")):
        if isinstance(p, dict) and isinstance(p.get("id"), str) and isinstance(p.get("label"), str):
            out[p["id"]] = p["label"]
    return out


def _entry_record(
    line: int, entry: dict[str, Any], doc: dict[str, Any], mapping: Mapping, labels: dict[str, str]
) -> Record:
    raw = _runner.compact(entry)
    test = entry.get("testCase") if isinstance(entry.get("testCase"), dict) else {}
    provider = entry.get("provider")
    name = _provider_name(provider)
    if isinstance(provider, dict) and not provider.get("label") and name in labels:
        name = labels[name]
    where = [f"{k} {entry[k]}" for k in ("testIdx", "promptIdx") if entry.get(k) is not None]
    label = f"result {line} ({', '.join([*where, f'provider {name!r}'])})"
    if test.get("description"):
        label += f" {test['description']!r}"
    response = entry.get("response") if isinstance(entry.get("response"), dict) else {}
    output = response.get("output")
    if output is not None and not isinstance(output, str):
        output = orjson.dumps(output).decode()
    if output is None and (entry.get("error") or response.get("error")):
        message = entry.get("error") or response.get("error")
        return Rejected(
            line, raw, f"{label}: the runner recorded an error and no output: {message}", "response"
        )
    metadata = entry.get("metadata") if isinstance(entry.get("metadata"), dict) else None
    if metadata is None:
        metadata = test.get("metadata") if isinstance(test.get("metadata"), dict) else {}
    grading = entry.get("gradingResult") if isinstance(entry.get("gradingResult"), dict) else {}
    view = {
        "vars": entry.get("vars") or test.get("vars") or {},
        "metadata": metadata,
        "testCase": test,
        "provider": provider,
        "provider_name": name,
        "prompt": entry.get("prompt"),
        "response": response,
        "success": entry.get("success"),
        "score": entry.get("score"),
        "gradingResult": grading,
        "testIdx": entry.get("testIdx"),
        "promptIdx": entry.get("promptIdx"),
        "repeat_index": 0,
        "result": entry,
        "config": _obj(doc.get("config")),
        "eval": {
            "evalId": doc.get("evalId"),
            "version": _obj(doc.get("results")).get("version"),
            "timestamp": _obj(doc.get("results")).get("timestamp"),
        },
    }
    prompt = entry.get("prompt")
    result = _runner.prune(
        {
            "success": entry.get("success"),
            "score": entry.get("score"),
            "pass": grading.get("pass"),
            "reason": grading.get("reason"),
            "namedScores": entry.get("namedScores"),
            "failureReason": entry.get("failureReason"),
            "latencyMs": entry.get("latencyMs"),
            "testIdx": entry.get("testIdx"),
            "promptIdx": entry.get("promptIdx"),
        }
    )
    sid = entry.get("id")
    return _runner.make_record(
        line,
        raw,
        view,
        mapping,
        sample=label,
        response=output,
        prompt=prompt.get("raw") if isinstance(prompt, dict) else prompt,
        sample_id=sid if isinstance(sid, str) else f"result-{line}",
        runner_result=result,
    )


def read(path: Path, mapping: Mapping | Path | None = None) -> ResponseStream:
    """Stream a promptfoo results JSON as cuegap response records.

    Parameters
    ----------
    path : Path
        The ``-o`` output of ``promptfoo eval`` (JSON).
    mapping : Mapping or Path, optional
        How test metadata and vars map to cuegap fields; defaults in the module docstring.

    Returns
    -------
    ResponseStream

    Raises
    ------
    IngestError
        For a file that is not promptfoo JSON output, or an unknown format version.
    """
    path = Path(path)
    m = as_mapping(mapping)
    m.check_runner(NAME, path)
    m = m.over(DEFAULTS)
    doc, error = _runner.scan_header(path, {"results.results", "results.table"})
    summary = doc.get("results")
    if not isinstance(summary, dict) or "version" not in summary:
        raise IngestError(
            f"{path}: not promptfoo results JSON: no results.version ({error or 'missing'})"
        )
    version = summary["version"]
    if version not in VERSIONS:
        raise IngestError(
            f"{path}: field 'results.version': unknown promptfoo results format version "
            f"{version!r}; this cuegap reads versions {', '.join(map(str, VERSIONS))}"
        )
    items = _runner.JsonItems(path, "results.results.item")
    labels = _labels(doc)

    def records() -> Iterator[Record]:
        yield from _runner.each_object(
            items, "result", lambda line, entry: _entry_record(line, entry, doc, m, labels)
        )

    return ResponseStream(
        run_info(doc), _runner.guarded(records(), path), items.position, items.total
    )
