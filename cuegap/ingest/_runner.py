"""Helpers shared by the runner readers: streaming JSON, prompt text, record building.

Depends on orjson and ijson; no database access.
"""

from __future__ import annotations

import codecs
import json
import re
from collections.abc import Callable, Collection, Iterable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import ijson
import orjson

from cuegap.ingest._guard import depth_rejected, guard_record
from cuegap.ingest._records import REST_OF_FILE, IngestError, Record, Rejected, ResponseRecord
from cuegap.ingest._validate import INVALID_MARK
from cuegap.ingest.mapping import Mapping


def compact(obj: Any, drop: Collection[str] = ()) -> str:
    """One-line JSON of ``obj`` (minus top-level keys in ``drop``), as kept for quarantine."""
    if drop and isinstance(obj, dict):
        obj = {k: v for k, v in obj.items() if k not in drop}
    try:
        return orjson.dumps(obj, default=str).decode()
    except orjson.JSONEncodeError as exc:  # nested too deeply, an integer beyond 64 bits
        return f"(not kept: {exc})"


def prune(d: dict[str, Any]) -> dict[str, Any]:
    """``d`` without None values and empty containers (for settings and runner results)."""
    return {k: v for k, v in d.items() if v is not None and v != {} and v != []}


def iso(value: Any) -> str | None:
    """An ISO-8601 UTC string from an ISO string or a Unix timestamp, else None (also for
    a value of another type or a timestamp out of range)."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        try:
            return datetime.fromtimestamp(value, UTC).isoformat()
        except (ValueError, OverflowError, OSError):  # NaN, 1e308: no time
            return None
    return value if isinstance(value, str) else None


def content_text(content: Any) -> str | None:
    """The text of a chat message's content: a string, or the text parts of a list."""
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, str):
                parts.append(part)
            elif isinstance(part, dict):
                text = part.get("text")
                if text is None and part.get("type") in ("reasoning", "thinking"):
                    continue
                if isinstance(text, str):
                    parts.append(text)
        return "".join(parts)
    return None


def render_messages(messages: Iterable[Any]) -> str:
    """Chat messages as text, one ``role: content`` block per message."""
    blocks = []
    for m in messages:
        if isinstance(m, dict):
            blocks.append(f"{m.get('role', '?')}: {content_text(m.get('content')) or ''}")
        else:
            blocks.append(str(m))
    return "\n\n".join(blocks)


def make_record(
    line: int,
    raw: str,
    view: dict[str, Any],
    mapping: Mapping,
    *,
    sample: str,
    response: Any,
    prompt: str | None,
    sample_id: str | None,
    runner_result: dict[str, Any] | None,
) -> Record:
    """Map one runner sample to a :class:`ResponseRecord`, or a :class:`Rejected` naming why."""
    fields = mapping.apply(view, sample=sample)
    if isinstance(fields, tuple):
        return Rejected(line, raw, fields[1], fields[0])
    if not isinstance(response, str):
        return Rejected(line, raw, f"{sample}: no output text (got {response!r})", "response")
    return ResponseRecord(
        line=line,
        raw=raw,
        system=fields["system"],
        item_id=fields["item_id"],
        probe=fields["probe"],
        response=response,
        individual=fields["individual"],
        consequences=fields["consequences"],
        prompt_variant=fields["prompt_variant"],
        repeat=fields["repeat"],
        prompt=prompt,
        sample_id=sample_id,
        item_bank=fields["item_bank"],
        runner_result=runner_result or None,
    )


# ------------------------------------------------------------------------ streaming JSON

BOM = codecs.BOM_UTF8
codecs.register_error("cuegap-mark", lambda exc: (INVALID_MARK, exc.end))
# A \uD800-\uDFFF escape (after an odd run of backslashes), with the low half that may follow.
_SURROGATE = re.compile(
    r"(?<!\\)(\\+)u([dD][89a-fA-F][0-9a-fA-F]{2})(?:\\u([dD][c-fC-F][0-9a-fA-F]{2}))?"
)


def _surrogate(m: re.Match[str]) -> str:
    slashes, first, second = m.group(1), m.group(2), m.group(3)
    if len(slashes) % 2 == 0:  # an escaped backslash followed by the letter u
        return m.group(0)
    lead, high = slashes[:-1], int(first, 16)
    if second is not None and high <= 0xDBFF:  # a valid pair: the character itself
        return lead + chr(0x10000 + ((high - 0xD800) << 10) + (int(second, 16) - 0xDC00))
    return lead + INVALID_MARK * (1 if second is None else 2)


class CleanJson:
    """A binary file as ijson may read it: never an exception for bad text in a string.

    Bytes that are not UTF-8 and lone surrogate escapes (``\\udc80``) made yajl stop the
    whole file (or raise ``UnicodeDecodeError``); here each becomes the noncharacter
    ``INVALID_MARK``, so the sample holding it is quarantined by validation, naming its
    field, and the samples after it are read (issue 12). Valid surrogate pairs are decoded.
    """

    def __init__(self, fh: Any) -> None:
        self.fh = fh
        self.decoder = codecs.getincrementaldecoder("utf-8-sig")("cuegap-mark")
        self.carry = ""

    def read(self, n: int = -1) -> bytes:
        """Up to about ``n`` bytes of cleaned UTF-8 (more or fewer: escapes change length)."""
        if n == 0:  # ijson probes bytes-or-text with read(0)
            return b""
        while True:
            chunk = self.fh.read(n if n > 0 else 1 << 16)
            final = not chunk
            text = self.carry + self.decoder.decode(chunk, final)
            self.carry = ""
            if not final:  # keep a possibly split escape (and its backslashes) for later
                cut = text.rfind("\\", max(0, len(text) - 12))
                if cut >= 0:
                    while cut > 0 and text[cut - 1] == "\\":
                        cut -= 1
                    text, self.carry = text[:cut], text[cut:]
            if "\\u" in text:
                text = _SURROGATE.sub(_surrogate, text)
            if text or final:
                return text.encode("utf-8")

    def tell(self) -> int:
        """Bytes of the underlying file consumed so far."""
        return self.fh.tell()


def scan_header(
    path: Path, skip: Collection[str], *, stop_when: Collection[str] = ()
) -> tuple[dict[str, Any], str | None]:
    """A JSON document's top-level object without the (large) subtrees at ``skip``.

    One event-level pass with ijson; no skipped subtree is built. With ``stop_when``, the
    scan stops at the first skipped subtree once all those top-level keys have been read
    (for formats that write their header first).

    Returns
    -------
    (dict, str or None)
        The object as far as it could be read, and the JSON error that ended the scan early
        (a truncated file), if any.

    Raises
    ------
    IngestError
        When the file does not hold a JSON object at all.
    """
    builder = ijson.ObjectBuilder()
    skipping: str | None = None
    depth = 0
    seen: set[str] = set()
    started = False
    error = None
    with path.open("rb") as fh:
        try:
            for prefix, event, value in ijson.parse(CleanJson(fh), use_float=True):
                if skipping is not None:
                    if event in ("start_map", "start_array"):
                        depth += 1
                    elif event in ("end_map", "end_array"):
                        depth -= 1
                    if depth == 0:
                        skipping = None
                    continue
                if event == "map_key":
                    key = f"{prefix}.{value}" if prefix else value
                    if not prefix:
                        seen.add(value)
                    if key in skip:
                        if stop_when and seen.issuperset(stop_when):
                            break
                        skipping, depth = key, 0
                        continue
                elif not started and event != "start_map":
                    raise IngestError(f"{path}: expected a JSON object, found {event}")
                started = True
                builder.event(event, value)
        except ijson.JSONError as exc:
            error = str(exc)
    root = getattr(builder, "value", None)
    if not isinstance(root, dict):
        raise IngestError(f"{path}: not a JSON object ({error or 'empty file'})")
    return root, error


class JsonItems:
    """Stream the items of the array at ``prefix`` of a JSON file, one object at a time.

    Iterating yields each item, then stops; when the file ends inside the array (a
    truncated file) it yields one :class:`Truncated` marker instead of raising.
    """

    def __init__(self, path: Path, prefix: str) -> None:
        self.path = path
        self.prefix = prefix
        self.fh = path.open("rb")
        self.total = path.stat().st_size

    def position(self) -> int:
        """Bytes consumed so far."""
        return self.total if self.fh.closed else self.fh.tell()

    def __iter__(self) -> Iterator[Any]:
        with self.fh:
            items = ijson.items(CleanJson(self.fh), self.prefix, use_float=True)
            while True:
                try:
                    item = next(items)
                except StopIteration:
                    return
                except (ijson.JSONError, UnicodeDecodeError) as exc:
                    msg = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
                    yield Truncated(msg, at_end="premature EOF" in msg or "ncomplete" in msg)
                    return
                yield item


class Truncated:
    """Marks where a streamed JSON file stopped being readable."""

    __slots__ = ("at_end", "error")

    def __init__(self, error: str, *, at_end: bool = True) -> None:
        self.error = error
        self.at_end = at_end

    def rejected(self, line: int, what: str) -> Rejected:
        """The quarantine record for the unreadable rest of the file."""
        if self.at_end:
            where = f"file ends inside {what} {line}: truncated or invalid JSON"
        else:
            where = f"invalid JSON in {what} {line}, before the end of the file"
        return Rejected(
            line,
            "",
            f"{where} ({self.error}); the {what}s before it were read, none after it",
            None if self.at_end else REST_OF_FILE,
        )


def each_object(
    items: Iterable[Any], what: str, build: Callable[[int, dict[str, Any]], Record]
) -> Iterator[Record]:
    """Records from a stream of JSON items (:class:`JsonItems`), numbered from 1.

    A non-object item is rejected ("<what> is not a JSON object"); a :class:`Truncated`
    marker is rejected and ends the stream.
    """
    line = 0
    for obj in items:
        line += 1
        if isinstance(obj, Truncated):
            yield obj.rejected(line, what)
            return
        if not isinstance(obj, dict):
            yield Rejected(line, compact(obj)[:10_000], f"{what} is not a JSON object")
            continue
        deep = depth_rejected(obj, line, "", what)
        if deep is not None:
            yield deep
            continue
        yield guard_record(line, "", build, line, obj, what=what)


def guarded(records: Iterator[Record], path: Path) -> Iterator[Record]:
    """Re-raise unexpected reader failures as :class:`IngestError` naming the file."""
    try:
        yield from records
    except (IngestError, KeyboardInterrupt):
        raise
    except RecursionError as exc:
        raise IngestError(f"{path}: cannot read: a value is nested too deeply") from exc
    except (OSError, ValueError, TypeError, KeyError, AttributeError) as exc:
        raise IngestError(f"{path}: cannot read: {type(exc).__name__}: {exc}") from exc


def loads_lenient(raw: bytes | str) -> Any:
    """JSON, also with the bare ``NaN`` / ``Infinity`` tokens that Python's ``json.dumps``
    writes (lm-evaluation-harness's BBQ metrics do): orjson first, the standard library's
    parser (which accepts exactly those tokens beyond JSON) only when orjson refuses.

    Raises
    ------
    orjson.JSONDecodeError
        orjson's error, when the standard library cannot read it either.
    """
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        try:
            return json.loads(raw)
        except (ValueError, RecursionError):  # nested deeper than the stack allows
            pass
        raise


def json_lines(
    fh: Iterable[bytes], *, lenient: bool = False
) -> Iterator[tuple[int, str, Any] | Rejected]:
    """The lines of a JSONL file: ``(line number, text, parsed object)`` per line, or a
    :class:`Rejected` (with the line's text) for a line that is not JSON; blank lines are
    skipped, and a last line without its newline is reported as truncated. ``lenient``
    also reads bare ``NaN`` / ``Infinity`` (:func:`loads_lenient`)."""
    loads = loads_lenient if lenient else orjson.loads
    for line_no, raw in enumerate(fh, start=1):
        if line_no == 1:
            raw = raw.removeprefix(BOM)
        if not raw.strip():
            continue
        text = raw.decode("utf-8", "backslashreplace").rstrip("\r\n")
        try:
            obj = loads(raw)
        except orjson.JSONDecodeError as exc:
            reason = f"not valid JSON: {exc}"
            if not raw.endswith(b"\n"):
                reason = f"truncated line at end of file (incomplete JSON): {exc}"
            yield Rejected(line_no, text, reason)
            continue
        deep = depth_rejected(obj, line_no, text)
        if deep is not None:
            yield deep
            continue
        yield line_no, text, obj


DETECT_LINES = 1_000
"""Lines format detection reads at most, looking for parsable records."""
DETECT_BYTES = 8 << 20
"""Bytes format detection reads at most."""


def head(path: Path, n: int = 4096) -> bytes:
    """The first ``n`` bytes of a file, without a UTF-8 byte-order mark (empty when it
    cannot be read)."""
    try:
        with path.open("rb") as fh:
            return fh.read(n).removeprefix(BOM)
    except OSError:
        return b""


def first_json_lines(path: Path, n: int = 5, *, lenient: bool = False) -> Iterator[Any]:
    """The first ``n`` lines of a file that parse as JSON (a byte-order mark dropped), for
    format detection. Blank, undecodable and unparsable lines are passed over, up to
    :data:`DETECT_LINES` lines or :data:`DETECT_BYTES` bytes, so that a damaged start does
    not hide a recognisable file. ``lenient`` also reads bare ``NaN`` / ``Infinity``
    (:func:`loads_lenient`)."""
    try:
        with path.open("rb") as fh:
            yield from first_json_objects(fh, n, lenient=lenient)
    except OSError:
        return


def first_json_objects(
    lines: Iterable[bytes], n: int = 5, *, lenient: bool = False
) -> Iterator[Any]:
    """:func:`first_json_lines` of a file given as its raw lines (with their endings), so
    that a reader run on lines held in memory (``cuegap count``) finds the same header."""
    loads = loads_lenient if lenient else orjson.loads
    if n <= 0:
        return
    seen = 0
    for i, raw in enumerate(lines):
        if i >= DETECT_LINES or seen > DETECT_BYTES:  # damaged lines passed over
            return
        seen += len(raw)
        raw = raw.removeprefix(BOM) if i == 0 else raw
        if not raw.strip():
            continue
        try:
            obj = loads(raw)
        except (orjson.JSONDecodeError, RecursionError):
            continue
        yield obj
        n -= 1
        if n <= 0:
            return


def first_json_line(path: Path, *, lenient: bool = False) -> Any:
    """The first of the first few non-blank lines of a file that parses as JSON, else None."""
    return next(first_json_lines(path, lenient=lenient), None)


Position = Callable[[], int]
