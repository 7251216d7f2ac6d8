"""Reader for inspect-ai evaluation logs: ``.eval`` (zip) and ``.json``.

``.eval`` logs are zip files with one member per sample (``samples/{id}_epoch_{n}.json``)
next to ``header.json``; inspect-ai writes the members zstd-compressed since version 0.3.2xx
(compression method 93) and deflate-compressed before. cuegap reads one member at a time
with ``zipfile`` (deflate) or ``zstandard`` (method 93). When inspect-ai itself is
installed, each sample is then validated, and migrated if old, by inspect-ai's own
``EvalSample`` model (``CUEGAP_INSPECT_NATIVE=0`` turns that off). inspect-ai's file
readers are not used for the samples: ``read_eval_log_sample`` reopens the zip for every
sample (about 13 ms per sample on a 3,000-sample log, against 0.1 ms here) and the
``.json`` reader loads the whole log. ``.json`` logs are streamed with ijson. Attachment
references (``attachment://HASH``) in the input, messages and output are resolved.

Samples come out in the header's ``dataset.sample_ids`` order, epoch by epoch (then any
other sample members); a record's ``line`` is that 1-based position.

The view a mapping sees per sample::

    id, epoch, epoch_index (= epoch - 1), input, target, metadata, output, scores,
    eval (the log's eval spec: model, task, task_args, metadata, ...), plan, sample
    (the whole sample as written)

Defaults: ``system`` = ``eval.model``; ``item_bank`` = ``metadata.item_bank`` or the task's
``eval.metadata.item_bank``; the other fields under ``metadata.<field>``; ``repeat`` =
``metadata.repeat`` or ``epoch_index``.
"""

from __future__ import annotations

import os
import re
import zipfile
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson

from cuegap.ingest import _runner
from cuegap.ingest._guard import depth_problem, guard_record
from cuegap.ingest._inspect_sample import HEAVY, sample_record
from cuegap.ingest._inspect_zip import _eval_header, _open_zip, _read_member_json
from cuegap.ingest._records import (
    IngestError,
    Record,
    Rejected,
    ResponseStream,
    RunInfo,
    SystemInfo,
)
from cuegap.ingest.mapping import Mapping, as_mapping

NAME = "inspect-ai"
VERSIONS = (1, 2)
DEFAULTS: dict[str, Any] = {
    "system": ["metadata.system", "eval.model"],
    "item_bank": ["metadata.item_bank", "eval.metadata.item_bank", "eval.task_args.item_bank"],
    "item_id": "metadata.item_id",
    "probe": "metadata.probe",
    "individual": "metadata.individual",
    "consequences": "metadata.consequences",
    "prompt_variant": "metadata.prompt_variant",
    "repeat": ["metadata.repeat", "epoch_index"],
}
_ATTACHMENT = "attachment://"
_MEMBER = re.compile(r"^samples/(?P<id>.+)_epoch_(?P<epoch>\d+)\.json$")
_JSON_HEAD = re.compile(rb'^\s*\{\s*"version"\s*:\s*\d+\s*,\s*"status"\s*:')
# make(line, sample dict, log header) -> the record of one sample
SampleToRecord = Callable[[int, dict[str, Any], dict[str, Any]], Record]


def detect(path: Path) -> bool:
    """True for a zip ``.eval`` log, or a ``.json`` file that starts like an inspect-ai log."""
    if not path.is_file():
        return False
    if path.suffix == ".eval":  # a zip, or the start of one (a truncated log is still ours)
        return _runner.head(path, 4) == b"PK\x03\x04" or zipfile.is_zipfile(path)
    if path.suffix == ".json":
        return bool(_JSON_HEAD.match(_runner.head(path, 256)))
    return False


def _native() -> Any:
    """inspect-ai's log module when it is installed and allowed, else None."""
    if os.environ.get("CUEGAP_INSPECT_NATIVE", "1") == "0":
        return None
    try:
        from inspect_ai import log as inspect_log
    except ImportError:
        return None
    return inspect_log


# ---------------------------------------------------------------------------- run info


def _check_version(header: dict[str, Any], path: Path) -> None:
    version = header.get("version")
    if version not in VERSIONS:
        raise IngestError(
            f"{path}: field 'version': unknown inspect-ai log version {version!r}; this cuegap "
            f"reads versions {', '.join(map(str, VERSIONS))}"
        )
    if not isinstance(header.get("eval"), dict):
        raise IngestError(f"{path}: not an inspect-ai log: no 'eval' spec in its header")


def run_info(header: dict[str, Any]) -> RunInfo:
    """Run metadata from a log header (``version``, ``status``, ``eval``, ``plan``)."""

    def obj(value: Any) -> dict[str, Any]:  # a header value of the wrong type: passed over
        return value if isinstance(value, dict) else {}

    ev = header["eval"]
    plan = obj(header.get("plan"))
    config = {**obj(plan.get("config")), **obj(ev.get("model_generate_config"))}
    model = ev.get("model")
    systems = {}
    if isinstance(model, str):
        provider = model.split("/", 1)[0] if "/" in model else None
        meta = _runner.prune({"model_base_url": ev.get("model_base_url")})
        systems[model] = SystemInfo(provider=provider, metadata=meta or None)
    dataset = obj(ev.get("dataset"))
    steps = plan.get("steps") if isinstance(plan.get("steps"), list) else []
    settings = _runner.prune(
        {
            "task": ev.get("task"),
            "task_version": ev.get("task_version"),
            "task_args": ev.get("task_args"),
            "model": model,
            "model_args": _runner.prune(obj(ev.get("model_args"))),
            "generate_config": config,
            "epochs": obj(ev.get("config")).get("epochs"),
            "dataset": _runner.prune(
                {"name": dataset.get("name"), "location": dataset.get("location")}
            ),
            "solver": [s.get("solver") for s in steps if isinstance(s, dict)],
            "eval_id": ev.get("eval_id"),
            "run_id": ev.get("run_id"),
            "log_version": header.get("version"),
            "status": header.get("status"),
        }
    )
    item_bank = obj(ev.get("metadata")).get("item_bank")
    return RunInfo(
        runner=NAME,
        runner_version=obj(ev.get("packages")).get("inspect_ai"),
        item_bank=item_bank if isinstance(item_bank, str) else None,
        started_at=_runner.iso(ev.get("created")),
        settings=settings,
        systems=systems,
    )


def _deref(value: Any, attachments: dict[str, Any]) -> Any:
    """``value`` with ``attachment://HASH`` strings replaced by the attachment's content."""
    if isinstance(value, str):
        if value.startswith(_ATTACHMENT):
            return attachments.get(value[len(_ATTACHMENT) :], value)
        return value
    if isinstance(value, list):
        return [_deref(v, attachments) for v in value]
    if isinstance(value, dict):
        return {k: _deref(v, attachments) for k, v in value.items()}
    return value


def _normalise(sample: Any, native: Any) -> Any:
    """A sample dict with attachments resolved and transcript fields dropped; validated
    (and migrated, for older logs) by inspect-ai's own ``EvalSample`` when installed."""
    if not isinstance(sample, dict):
        return sample
    attachments = sample.get("attachments")
    if isinstance(attachments, dict) and attachments:
        for key in ("input", "messages", "output", "target"):
            if key in sample:
                sample[key] = _deref(sample[key], attachments)
    sample = {k: v for k, v in sample.items() if k not in HEAVY}
    if native is not None:
        try:
            model = native.EvalSample.model_validate(sample)
        except ValueError:  # pydantic's ValidationError: let cuegap's checks name the problem
            return sample
        return model.model_dump(mode="json", exclude_none=True, exclude=set(HEAVY))
    return sample


# -------------------------------------------------------------------------- .eval (zip)


def _plan(zf: zipfile.ZipFile, header: dict[str, Any]) -> list[tuple[str, Any, int]]:
    """(member name, sample id, epoch) in the header's sample order, then the rest."""
    members = [n for n in zf.namelist() if _MEMBER.match(n)]
    present = set(members)
    out: list[tuple[str, Any, int]] = []
    seen: set[str] = set()
    ev = header.get("eval") or {}
    ids = (ev.get("dataset") or {}).get("sample_ids") or []
    epochs = (ev.get("config") or {}).get("epochs") or 1
    for sid in ids:
        for epoch in range(1, epochs + 1):
            name = f"samples/{sid}_epoch_{epoch}.json"
            if name in present and name not in seen:
                out.append((name, sid, epoch))
                seen.add(name)
    for name in members:
        if name not in seen:
            m = _MEMBER.match(name)
            out.append((name, m["id"], int(m["epoch"])))
            seen.add(name)
    return out


def _read_eval(path: Path, make: SampleToRecord) -> ResponseStream:
    native = _native()
    zf = _open_zip(path)
    try:
        header = _eval_header(zf, path)
        _check_version(header, path)
        plan = _plan(zf, header)
    except BaseException:
        zf.close()
        raise
    sizes = {i.filename: i.compress_size for i in zf.infolist()}
    done = [0]
    total = path.stat().st_size

    def decode(name: str) -> Any:
        sample = _read_member_json(zf, name)
        problem = depth_problem(sample)
        if problem is not None:
            return Rejected(0, name, f"zip member {name}: {problem[1]}", problem[0])
        return _normalise(sample, native)

    def records() -> Iterator[Record]:
        with zf:
            for line, (name, sid, epoch) in enumerate(plan, start=1):
                try:
                    sample = decode(name)
                except (zipfile.BadZipFile, zlib.error, orjson.JSONDecodeError, ValueError) as exc:
                    yield Rejected(
                        line,
                        name,
                        f"sample {sid!r} (epoch {epoch}): zip member {name} is unreadable: {exc}",
                    )
                    continue
                finally:
                    done[0] += sizes.get(name, 0)
                if isinstance(sample, Rejected):
                    sample.line = line
                    yield sample
                    continue
                if not isinstance(sample, dict):
                    yield Rejected(line, name, f"zip member {name} is not a JSON object")
                    continue
                yield guard_record(line, name, make, line, sample, header, what="sample")

    return ResponseStream(
        run_info(header),
        _runner.guarded(records(), path),
        lambda: min(done[0], total),
        total,
    )


def first_sample(path: Path) -> dict[str, Any] | None:
    """The first sample of a log as written (no validation), or None when there is none
    or the log cannot be read: for readers that recognise a log by its samples."""
    try:
        if path.suffix == ".eval" or (path.suffix != ".json" and zipfile.is_zipfile(path)):
            with zipfile.ZipFile(path) as zf:
                plan = _plan(zf, _eval_header(zf, path))
                sample = _read_member_json(zf, plan[0][0]) if plan else None
        else:
            items = _runner.JsonItems(path, "samples.item")
            with items.fh:
                sample = next(iter(items), None)
    except (zipfile.BadZipFile, zlib.error, OSError, ValueError, IngestError):
        return None
    return sample if isinstance(sample, dict) else None


# ------------------------------------------------------------------------------- .json


def _read_json(path: Path, make: SampleToRecord) -> ResponseStream:
    native = _native()
    header, error = _runner.scan_header(
        path, {"samples", "reductions", "logging"}, stop_when={"version", "eval", "plan"}
    )
    if "version" not in header or "eval" not in header:
        raise IngestError(f"{path}: not a readable inspect-ai .json log ({error or 'no header'})")
    _check_version(header, path)
    items = _runner.JsonItems(path, "samples.item")

    def records() -> Iterator[Record]:
        yield from _runner.each_object(
            items,
            "sample",
            lambda line, sample: make(line, _normalise(sample, native), header),
        )

    return ResponseStream(
        run_info(header), _runner.guarded(records(), path), items.position, items.total
    )


def read(path: Path, mapping: Mapping | Path | None = None) -> ResponseStream:
    """Stream the samples of an inspect-ai log as cuegap response records.

    Parameters
    ----------
    path : Path
        A ``.eval`` or ``.json`` log.
    mapping : Mapping or Path, optional
        How sample metadata maps to cuegap fields; defaults in the module docstring.

    Returns
    -------
    ResponseStream

    Raises
    ------
    IngestError
        For a truncated or unreadable zip, an unknown log version, or a file that is not an
        inspect-ai log.
    """
    path = Path(path)
    m = as_mapping(mapping)
    m.check_runner(NAME, path)
    m = m.over(DEFAULTS)
    return read_samples(path, lambda line, sample, header: sample_record(line, sample, header, m))


def read_samples(path: Path, make: SampleToRecord) -> ResponseStream:
    """Stream a log's samples through ``make(line, sample, header) -> Record``.

    The shared core of this reader and of :mod:`cuegap.ingest.inspect_bbq`: samples come
    out as dicts (attachments resolved, transcript fields dropped) in the order described
    in the module docstring, with the log's run metadata.

    Raises
    ------
    IngestError
        As :func:`read`.
    """
    path = Path(path)
    if path.suffix == ".eval" or (path.suffix != ".json" and zipfile.is_zipfile(path)):
        return _read_eval(path, make)
    return _read_json(path, make)
