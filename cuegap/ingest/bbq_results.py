"""Reader of BBQ-style result JSONL: one system answer to one QA item per line.

Each line::

    {"system": "gpt-4o", "example_id": 994, "category": "Age",
     "model_output": "Final Answer: B", "label": 1, "strategy": "cot",
     "factors": {"choice_format": "letter_paren"}}

* ``system``: the audited LLM; may be given once in a first header line
  ``{"format": "bbq-results", "system": ..., "category": ..., "item_bank": ...,
  "factors": {...}}`` (defaults for every line), or by :func:`read`'s ``system=``
  (``cuegap ingest --system``).
* the item: ``example_id`` + ``category`` (BBQ's own ids, joined to a QA bank's item
  ``{category lower-cased}-{example_id}``), or ``item_id`` (the bank's item id), or
  ``question_id`` (a MAC-Fairness question id); ``item_bank`` names the bank when several
  hold the item. The category comes from the line, else the header, else the file's name
  when it starts with a BBQ category, as BBQ-family result files are named
  (``Gender_identity_gpt4o_results.jsonl``).
* ``context`` (optional): the context the system was shown. When several banks hold the
  item (BBQ's explicit item and an ImplicitBBQ item share an ``example_id``), the item
  whose context it matches is the one answered: the cue is decided by the data, not by the
  folder the file lies in.
* the answer: ``model_output`` (raw text, parsed by :mod:`cuegap.ingest.qa_parsing`)
  and/or ``predicted_index`` (0-based) / ``predicted_label`` (a letter), which then decide.
* ``label``: the gold option (index or letter), checked against the bank: a mismatch is
  quarantined.
* prompt conditions: ``strategy`` (default ``zero-shot``) and any others under
  ``factors``; ``repeat`` tells repeated samples apart.

A line that is not JSON, or lacks a system, an item reference or an answer, is quarantined
by the loader with its reason; the join to the bank happens in the loader
(:mod:`cuegap.ingest._qa_loader`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cuegap.ingest._bbq_names import category_from_name
from cuegap.ingest._guard import guard_record
from cuegap.ingest._records import Rejected, ResponseStream, RunInfo
from cuegap.ingest._runner import first_json_lines, first_json_objects, json_lines

NAME = "bbq-results"
FORMAT_ID = "bbq-results"
_ANSWER_FIELDS = ("model_output", "predicted_index", "predicted_label")
_REF_FIELDS = ("example_id", "item_id", "question_id")


@dataclass(slots=True)
class QARecord:
    """One system answer to one QA item, before it is joined to the bank."""

    line: int
    raw: str
    system: str
    response: str
    item_id: str | None = None
    example_id: str | None = None
    category: str | None = None
    question_id: str | None = None
    predicted_index: int | None = None
    predicted_label: str | None = None
    gold: int | str | None = None
    factors: dict[str, str] = field(default_factory=dict)
    repeat: int = 0
    sample_id: str | None = None
    item_bank: str | None = None
    context: str | None = None


def detect(path: Path) -> bool:
    """True for a JSONL file whose first lines are BBQ-style results (or its header)."""
    if not path.is_file() or path.suffix.lower() not in (".jsonl", ".json"):
        return False
    for obj in first_json_lines(path, 3):
        if not isinstance(obj, dict):
            continue
        if obj.get("format") == FORMAT_ID:
            return True
        if "answer_info" in obj or "source_metadata" in obj:
            return False
        if any(k in obj for k in _REF_FIELDS) and any(k in obj for k in _ANSWER_FIELDS):
            return True
    return False


def _text(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise TypeError
    return str(value)


def record(obj: Any, line: int, raw: str, defaults: dict[str, Any]) -> QARecord | Rejected:
    """A line as a :class:`QARecord`, or why it cannot be one."""
    if not isinstance(obj, dict):
        return Rejected(line, raw, f"expected a JSON object, got {type(obj).__name__}")
    system = obj.get("system", defaults.get("system"))
    if not isinstance(system, str) or not system.strip():
        return Rejected(
            line, raw, "no system: give 'system' on the line or in a header, or --system", "system"
        )
    try:
        refs = {k: _text(obj.get(k)) for k in (*_REF_FIELDS, "category", "item_bank")}
        refs["category"] = refs["category"] or _text(defaults.get("category"))
    except TypeError:
        return Rejected(
            line,
            raw,
            "item references (and a header's category) must be strings or integers",
            "category" if obj.get("category") is None else "example_id",
        )
    if refs["example_id"] is not None and refs["category"] is None:
        return Rejected(
            line,
            raw,
            "'example_id' needs its 'category': give it on the line or in a header, or name "
            "the file after its BBQ category (e.g. Gender_identity_results.jsonl)",
            "category",
        )
    context = obj.get("context")
    if context is not None and not isinstance(context, str):
        return Rejected(line, raw, "'context' must be a string", "context")
    if not any(refs[k] for k in _REF_FIELDS):
        return Rejected(line, raw, "no item: give example_id + category, or item_id", "item_id")
    output = obj.get("model_output")
    index, label = obj.get("predicted_index"), obj.get("predicted_label")
    if output is None and index is None and label is None:
        return Rejected(
            line, raw, "no answer: give model_output or predicted_index", "model_output"
        )
    if output is not None and not isinstance(output, str):
        return Rejected(line, raw, "'model_output' must be a string", "model_output")
    if index is not None and (isinstance(index, bool) or not isinstance(index, int)):
        return Rejected(line, raw, "'predicted_index' must be an integer", "predicted_index")
    if label is not None and not isinstance(label, str):
        return Rejected(line, raw, "'predicted_label' must be a string", "predicted_label")
    gold = obj.get("label")
    if gold is not None and (isinstance(gold, bool) or not isinstance(gold, int | str)):
        return Rejected(line, raw, "'label' must be an index or a letter", "label")
    factors = dict(defaults.get("factors") or {})
    given = obj.get("factors") or {}
    if not isinstance(given, dict):
        return Rejected(line, raw, "'factors' must be an object", "factors")
    factors.update(given)
    if obj.get("strategy") is not None:
        factors["strategy"] = obj["strategy"]
    strategy = factors.get("strategy", "zero-shot")
    if not isinstance(strategy, str) or not strategy.strip():
        return Rejected(line, raw, "'strategy' must be a non-empty string", "strategy")
    factors.setdefault("strategy", "zero-shot")
    for name, value in factors.items():
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            return Rejected(line, raw, f"factor {name!r} must be a string or number", "factors")
    repeat = obj.get("repeat", 0)
    if isinstance(repeat, bool) or not isinstance(repeat, int) or repeat < 0:
        return Rejected(line, raw, "'repeat' must be a non-negative integer", "repeat")
    sample_id = obj.get("sample_id")
    return QARecord(
        line=line,
        raw=raw,
        system=system.strip(),
        response=output if output is not None else "",
        item_id=refs["item_id"],
        example_id=refs["example_id"],
        category=refs["category"],
        question_id=refs["question_id"],
        predicted_index=index,
        predicted_label=label,
        gold=gold,
        factors={str(k): str(v) for k, v in factors.items()},
        repeat=repeat,
        sample_id=None if sample_id is None else str(sample_id),
        item_bank=refs["item_bank"] or defaults.get("item_bank"),
        context=context,
    )


def _defaults(name: str, first: Any, system: str | None) -> tuple[dict[str, Any], bool]:
    """The values lines of a file called ``name`` default to, and whether ``first`` (its
    first line that parses as JSON) is a header."""
    defaults: dict[str, Any] = {"system": system, "category": category_from_name(name)}
    header = isinstance(first, dict) and first.get("format") == FORMAT_ID
    if header:
        keys = ("system", "category", "item_bank", "factors")
        defaults.update({k: first.get(k) for k in keys if first.get(k)})
    return defaults, header


def _records(
    lines: Iterable[bytes], defaults: dict[str, Any], header: bool
) -> Iterator[QARecord | Rejected]:
    skipped = not header
    for entry in json_lines(lines):
        if isinstance(entry, Rejected):
            yield entry
            continue
        line, text, obj = entry
        if not skipped:
            skipped = True
            continue
        yield guard_record(line, text, record, obj, line, text, defaults)


def read(path: Path, *, system: str | None = None) -> ResponseStream:
    """Stream the answers of a BBQ-style result file.

    Parameters
    ----------
    path : Path
    system : str, optional
        The system of lines that name none (a header line's ``system`` wins).

    Notes
    -----
    A line's own values win over the header's, and the header's over ``system`` and the
    category the file's name gives.

    Returns
    -------
    ResponseStream
        Records are :class:`QARecord` or :class:`~cuegap.ingest.Rejected`.
    """
    path = Path(path)
    defaults, header = _defaults(path.name, next(first_json_lines(path, 1), None), system)
    total = path.stat().st_size
    fh = path.open("rb")

    def records() -> Iterator[QARecord | Rejected]:
        with fh:
            yield from _records(fh, defaults, header)

    def position() -> int:
        return total if fh.closed else fh.tell()

    run = RunInfo(runner="bbq-results", item_bank=defaults.get("item_bank"))
    return ResponseStream(run=run, records=records(), position=position, total=total)  # type: ignore[arg-type]


def read_lines(
    lines: Iterable[bytes], name: str, *, system: str | None = None
) -> tuple[RunInfo, Iterator[QARecord | Rejected]]:
    """Read a file given as its raw lines, exactly as :func:`read` reads it from disk.

    Parameters
    ----------
    lines : iterable of bytes
        The file's lines in order, each with its line ending.
    name : str
        The file's path or URL; its last part names the BBQ category, as in :func:`read`.
    system : str, optional
        The system of lines that name none.

    Returns
    -------
    tuple
        The run's metadata and an iterator of :class:`QARecord` or
        :class:`~cuegap.ingest.Rejected`.
    """
    held = lines if isinstance(lines, list) else list(lines)
    first = next(first_json_objects(held, 1), None)
    defaults, header = _defaults(name.rstrip("/").rsplit("/", 1)[-1], first, system)
    run = RunInfo(runner="bbq-results", item_bank=defaults.get("item_bank"))
    return run, _records(held, defaults, header)
