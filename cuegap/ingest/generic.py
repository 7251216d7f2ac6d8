"""Reader for cuegap's own response format: JSONL, one response per line.

The format is specified by ``schemas/responses-v1.schema.json`` and documented in
``docs/formats.md``. Validation here is hand-written (not jsonschema per line) so that a
340k-line file reads at close to JSON-parse speed; ``tests/test_generic_reader.py`` checks
that it agrees with the JSON Schema.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import fields
from itertools import chain
from pathlib import Path
from typing import Any

import orjson

from cuegap.ingest._guard import MAX_DEPTH, depth_problem
from cuegap.ingest._records import (
    PROBES,
    IngestError,
    Record,
    Rejected,
    ResponseRecord,
    ResponseStream,
    RunInfo,
    SystemInfo,
)
from cuegap.ingest._runner import BOM, first_json_lines
from cuegap.ingest._validate import (
    _MAX_BANK,
    _MAX_INDIVIDUAL,
    _MAX_ITEM,
    _MAX_PROBE,
    _MAX_SAMPLE,
    _MAX_SYSTEM,
    _MAX_VARIANT,
    _REPEAT_MAX,
)

NAME = "generic"
FORMAT_ID = "cuegap-responses"
VERSIONS = (1,)
_FIELDS = frozenset(
    (
        "system",
        "item_id",
        "item_bank",
        "probe",
        "individual",
        "consequences",
        "prompt_variant",
        "repeat",
        "response",
        "prompt",
        "sample_id",
    )
)
_PROBE_SET = frozenset(PROBES)
_HEADER_FIELDS = frozenset(
    (
        "format",
        "version",
        "item_bank",
        "runner",
        "runner_version",
        "started_at",
        "settings",
        "systems",
    )
)
_TYPE_NAMES = {
    str: "a string",
    bool: "true or false",
    int: "an integer",
    dict: "an object",
    type(None): "null",
    list: "an array",
    float: "a number",
}


def _type_name(value: object) -> str:
    return _TYPE_NAMES.get(type(value), type(value).__name__)


def _first_line(path: Path) -> bytes:
    with path.open("rb") as fh:
        for raw in fh:
            if raw.strip():
                return raw.removeprefix(BOM)
    return b""


def detect(path: Path) -> bool:
    """True when one of the first JSON lines of ``path`` is a cuegap header or response.

    Several lines are looked at, so that a damaged first line is quarantined with its
    reason rather than hiding the format.
    """
    if not path.is_file():
        return False
    for obj in first_json_lines(path):
        if isinstance(obj, dict) and (
            obj.get("format") == FORMAT_ID or {"system", "item_id", "probe"} <= obj.keys()
        ):
            return True
    return False


def _parse_header(obj: dict[str, Any], path: Path) -> RunInfo:
    version = obj.get("version")
    if version not in VERSIONS:
        raise IngestError(
            f"{path}: line 1: field 'version': unknown {FORMAT_ID} version {version!r}; "
            f"this cuegap reads versions {', '.join(map(str, VERSIONS))}"
        )
    unknown = sorted(set(obj) - _HEADER_FIELDS)
    if unknown:
        raise IngestError(
            f"{path}: line 1: unknown header field {unknown[0]!r}; "
            f"known: {', '.join(sorted(_HEADER_FIELDS))}"
        )
    systems: dict[str, SystemInfo] = {}
    for name, meta in (obj.get("systems") or {}).items():
        if not isinstance(meta, dict):
            raise IngestError(f"{path}: line 1: field 'systems.{name}': expected an object")
        systems[name] = SystemInfo(meta.get("provider"), meta.get("version"), meta.get("metadata"))
    for key in ("item_bank", "runner", "runner_version", "started_at"):
        if obj.get(key) is not None and not isinstance(obj[key], str):
            raise IngestError(
                f"{path}: line 1: field {key!r}: expected a string, got {_type_name(obj[key])}"
            )
    return RunInfo(
        runner=obj.get("runner"),
        runner_version=obj.get("runner_version"),
        item_bank=obj.get("item_bank"),
        started_at=obj.get("started_at"),
        settings=obj.get("settings"),
        systems=systems,
    )


def _check(obj: dict[str, Any]) -> tuple[str, str] | None:
    """Return (field, reason) for the first problem of a response object, else None."""
    unknown = obj.keys() - _FIELDS
    if unknown:
        key = min(unknown)
        return key, f"unknown field {key!r}; known fields: {', '.join(sorted(_FIELDS))}"
    for key in ("system", "item_id", "probe", "response"):
        if key not in obj:
            return key, f"missing required field {key!r}"
        value = obj[key]
        if not isinstance(value, str):
            return key, f"field {key!r}: expected a string, got {_type_name(value)}"
        if key != "response" and not value.strip():
            return key, f"field {key!r}: empty string"
    probe = obj["probe"]
    if probe not in PROBES:
        return "probe", f"field 'probe': {probe!r} is not one of {', '.join(PROBES)}"
    individual = obj.get("individual")
    if probe == "main":
        if individual is not None:
            return "individual", "field 'individual': must be absent for the main probe"
    elif not (isinstance(individual, str) and len(individual) == 1 and individual.isalpha()):
        got = "missing" if individual is None else repr(individual)
        return "individual", f"field 'individual': a letter A-Z is required for {probe}, got {got}"
    for key, typ in (("consequences", bool), ("repeat", int)):
        value = obj.get(key)
        if value is not None and (type(value) is not typ):
            return key, f"field {key!r}: expected {_TYPE_NAMES[typ]}, got {_type_name(value)}"
    if (obj.get("repeat") or 0) < 0:
        return "repeat", "field 'repeat': must be >= 0"
    for key in ("prompt_variant", "prompt", "sample_id", "item_bank"):
        value = obj.get(key)
        if value is not None and not isinstance(value, str):
            return key, f"field {key!r}: expected a string, got {_type_name(value)}"
    return None


# _record builds ResponseRecord positionally (three times faster than by keyword).
_POSITIONAL = (
    "line",
    "raw",
    "system",
    "item_id",
    "probe",
    "response",
    "individual",
    "consequences",
    "prompt_variant",
    "repeat",
    "prompt",
    "sample_id",
    "item_bank",
    "runner_result",
    "fits",
)
if tuple(f.name for f in fields(ResponseRecord))[: len(_POSITIONAL)] != _POSITIONAL:
    raise ImportError("ResponseRecord's fields were reordered: update generic._record")


def _record(
    obj: dict[str, Any], line_no: int, text: str, plain: bool = False
) -> ResponseRecord | None:
    """The record of a response object that needs no checking beyond this, else None.

    A fast path for the common, well-formed line: None means "let :func:`_check` decide",
    never "invalid", so the accepted set is exactly :func:`_check`'s.

    ``plain`` says that the line's bytes are ASCII and hold no ``\\u`` escape, so every
    string in it is ASCII without NUL (JSON has no raw control characters in strings). The
    record then also gets the store check's verdict (``fits``) from the lengths alone.
    """
    if not _FIELDS.issuperset(obj):
        return None
    get = obj.get
    system = get("system")
    item_id = get("item_id")
    probe = get("probe")
    response = get("response")
    if (
        type(system) is not str
        or type(item_id) is not str
        or type(response) is not str
        or type(probe) is not str
        or probe not in _PROBE_SET
    ):
        return None
    system = system.strip()
    item_id = item_id.strip()
    if not system or not item_id:
        return None
    individual = get("individual")
    if probe == "main":
        if individual is not None:
            return None
    elif type(individual) is not str or len(individual) != 1 or not individual.isalpha():
        return None
    else:
        individual = individual.upper()
    consequences = get("consequences")
    repeat = get("repeat")
    variant = get("prompt_variant")
    prompt = get("prompt")
    sample_id = get("sample_id")
    bank = get("item_bank")
    if (
        (consequences is not None and type(consequences) is not bool)
        or (repeat is not None and (type(repeat) is not int or repeat < 0))
        or (variant is not None and type(variant) is not str)
        or (prompt is not None and type(prompt) is not str)
        or (sample_id is not None and type(sample_id) is not str)
        or (bank is not None and type(bank) is not str)
    ):
        return None
    fits = (
        plain
        and len(system) <= _MAX_SYSTEM
        and len(item_id) <= _MAX_ITEM
        and len(probe) <= _MAX_PROBE
        and (individual is None or len(individual) <= _MAX_INDIVIDUAL)
        and (variant is None or len(variant) <= _MAX_VARIANT)
        and (sample_id is None or len(sample_id) <= _MAX_SAMPLE)
        and (bank is None or len(bank) <= _MAX_BANK)
        and (repeat is None or repeat <= _REPEAT_MAX)
    )
    return ResponseRecord(
        line_no,
        text.rstrip("\r\n"),
        system,
        item_id,
        probe,
        response,
        individual,
        consequences is not False,
        variant or "v0",
        repeat or 0,
        prompt,
        sample_id,
        bank,
        None,
        fits,
    )


def _records(path: Path, fh, header_seen: bool) -> Iterator[Record]:
    line_no = 0
    first = True
    loads = orjson.loads
    for raw in fh:
        line_no += 1
        if line_no == 1:
            raw = raw.removeprefix(BOM)  # a UTF-8 byte-order mark is not part of the line
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            yield Rejected(
                line_no,
                raw.decode("utf-8", "backslashreplace"),
                f"not valid UTF-8: byte 0x{raw[exc.start]:02x} at column {exc.start + 1}",
            )
            first = False
            continue
        try:
            obj = loads(raw)
            if depth_problem(obj) is not None:
                raise orjson.JSONDecodeError(f"nested deeper than {MAX_DEPTH} levels", "", 0)
        except orjson.JSONDecodeError as exc:
            if not text.strip():
                continue  # a blank line: not a record
            reason = f"not valid JSON: {exc}"
            if not raw.endswith(b"\n"):
                reason = f"truncated line at end of file (no newline, incomplete JSON): {exc}"
            yield Rejected(line_no, text.rstrip("\r\n"), reason)
            first = False
            continue
        if first:
            first = False
            if header_seen:
                continue  # the header, already parsed
        if type(obj) is dict and obj.get("format") != FORMAT_ID:
            rec = _record(obj, line_no, text, raw.isascii() and b"\\u" not in raw)
            if rec is not None:
                yield rec
                continue
        yield _checked(obj, line_no, text)


def _checked(obj: Any, line_no: int, text: str) -> Record:
    """A parsed line that is not a plain, valid response: checked field by field."""
    if not isinstance(obj, dict):
        return Rejected(
            line_no, text.rstrip("\r\n"), f"expected a JSON object, got {_type_name(obj)}"
        )
    if obj.get("format") == FORMAT_ID:
        return Rejected(
            line_no, text.rstrip("\r\n"), "a header object must be on the first line", "format"
        )
    problem = _check(obj)
    if problem is not None:
        return Rejected(line_no, text.rstrip("\r\n"), problem[1], problem[0])
    individual = obj.get("individual")
    return ResponseRecord(
        line=line_no,
        raw=text.rstrip("\r\n"),
        system=obj["system"].strip(),
        item_id=obj["item_id"].strip(),
        probe=obj["probe"],
        response=obj["response"],
        individual=individual.upper() if individual else None,
        consequences=obj.get("consequences") is not False,
        prompt_variant=obj.get("prompt_variant") or "v0",
        repeat=obj.get("repeat") or 0,
        prompt=obj.get("prompt"),
        sample_id=obj.get("sample_id"),
        item_bank=obj.get("item_bank"),
    )


def read(path: Path) -> ResponseStream:
    """Stream the responses of a cuegap JSONL file.

    Parameters
    ----------
    path : Path
        The JSONL file.

    Returns
    -------
    ResponseStream
        Run metadata from the header line (if present) and an iterator of records; bad
        lines come out as :class:`Rejected` with their line number and reason.

    Raises
    ------
    IngestError
        When the header names an unknown format version or has malformed fields.
    """
    path = Path(path)
    run, header_seen = _header(_first_line(path), path)
    total = path.stat().st_size
    fh = path.open("rb")

    def records() -> Iterator[Record]:
        with fh:
            yield from _records(path, fh, header_seen)

    def position() -> int:
        return total if fh.closed else fh.tell()

    return ResponseStream(run=run, records=records(), position=position, total=total)


def _header(first: bytes, path: Path) -> tuple[RunInfo, bool]:
    """The run metadata of a file whose first non-blank line is ``first``, and whether
    that line is a header."""
    try:
        obj = orjson.loads(first)
    except orjson.JSONDecodeError:
        obj = None
    if isinstance(obj, dict) and obj.get("format") == FORMAT_ID:
        return _parse_header(obj, path), True
    return RunInfo(), False


def read_lines(lines: Iterable[bytes], name: str) -> tuple[RunInfo, Iterator[Record]]:
    """Read a file given as its raw lines, exactly as :func:`read` reads it from disk.

    Parameters
    ----------
    lines : iterable of bytes
        The file's lines in order, each with its line ending (as iterating over a file
        opened in binary mode gives them).
    name : str
        What messages call the file.

    Returns
    -------
    tuple of RunInfo and iterator of Record
        The header's run metadata and the records, with their line numbers and reasons.

    Raises
    ------
    IngestError
        When the header names an unknown format version or has malformed fields.
    """
    it = iter(lines)
    head: list[bytes] = []
    first = b""
    for raw in it:
        head.append(raw)
        if raw.strip():
            first = raw.removeprefix(BOM)
            break
    run, header_seen = _header(first, Path(name))
    return run, _records(Path(name), chain(head, it), header_seen)
