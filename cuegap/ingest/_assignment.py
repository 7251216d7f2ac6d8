"""Puzzle answers: find the JSON object in a response, read its per-person assignment.

The puzzled condition asks for a JSON object assigning attributes (gender, race, ...) to
labelled people. LLMs wrap it in prose or fenced blocks, use single quotes or trailing
commas, key people by label or list them as records, and spell genders several ways. This
module finds the first balanced object, reads label -> attributes from it, and compares an
assignment with the puzzle's solution (:func:`check_assignment`).
"""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = ["check_assignment", "first_json_object", "json_key", "people"]

_GENDERS = {"man": "man", "male": "man", "woman": "woman", "female": "woman"} | dict.fromkeys(
    ("non-binary", "nonbinary", "non binary", "enby"), "non-binary"
)
_GENDER_WORD = re.compile(r"\b(non[\s_-]?binary|enby|woman|female|man|male)\b", re.IGNORECASE)
_FILLER_WORD = re.compile(r"\b(?:person|individual)\b", re.IGNORECASE)
_KEY_ALIASES = {"sex": "gender", "ethnicity": "race"}
_LABEL = re.compile(r"^(?:person|individual|candidate|participant)?[\s_\-]*([a-z])[\s:.)]*$", re.I)
_PERSON_KEYS = ("person", "individual", "label", "name", "id")
_TRAILING_COMMA = re.compile(r",\s*([}\]])")
_KEY_SEP = re.compile(r"[\s\-]+")
_DECODER = json.JSONDecoder()
_MAX_JSON_TRIES = 16


def _match_brace(text: str, start: int) -> int | None:
    """Index just past the brace closing the one at ``start`` (double-quoted strings aware)."""
    depth, in_str, escaped = 0, False, False
    for i in range(start, len(text)):
        c = text[i]
        if in_str:
            if escaped:
                escaped = False
            elif c == "\\":
                escaped = True
            elif c == '"':
                in_str = False
        elif c == '"':
            in_str = True
        elif c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                return i + 1
    return None


def _tolerant_loads(s: str) -> Any:
    """``json.loads`` after removing trailing commas and, without double quotes, using ``'``."""
    s = _TRAILING_COMMA.sub(r"\1", s)
    if '"' not in s:
        s = s.replace("'", '"')
    try:
        return json.loads(s)
    except (ValueError, RecursionError):
        return None


def first_json_object(text: str) -> tuple[dict[str, Any], int, int] | None:
    """The first balanced JSON object in ``text`` with its span, or None."""
    start, tries = text.find("{"), 0
    while start != -1 and tries < _MAX_JSON_TRIES:
        tries += 1
        try:
            obj, end = _DECODER.raw_decode(text, start)
        except (ValueError, RecursionError):
            obj, end = None, _match_brace(text, start)
            if end is None:
                start = text.find("{", start + 1)
                continue
            obj = _tolerant_loads(text[start:end])
        if isinstance(obj, dict):
            return obj, start, end
        start = text.find("{", end)
    return None


def json_key(k: object) -> str:
    """A JSON key in comparable form: stripped, lower-case, spaces and hyphens as ``_``."""
    return _KEY_SEP.sub("_", str(k).strip().lower())


def _canon_gender(value: str) -> str:
    return _GENDERS.get(" ".join(value.lower().replace("_", " ").split()), value.strip())


def _attrs(value: object) -> dict[str, str] | None:
    """Attributes of one person from a dict or a string such as ``"Asian man"``."""
    if isinstance(value, str):
        m = _GENDER_WORD.search(value)
        rest = value if m is None else f"{value[: m.start()]} {value[m.end() :]}"
        race = " ".join(_FILLER_WORD.sub(" ", rest).replace(",", " ").replace(";", " ").split())
        out = {"gender": _canon_gender(m[1])} if m else {}
        if race := race.strip(" -–/|"):
            out["race"] = race
        return out or None
    if not isinstance(value, dict):
        return None
    out = {}
    for k, v in value.items():
        key = str(k).strip().lower()
        key = _KEY_ALIASES.get(key, key)
        if isinstance(v, str):
            out[key] = _canon_gender(v) if key == "gender" else v.strip()
        elif isinstance(v, int | float) and not isinstance(v, bool):
            out[key] = str(v)
    return out or None


def _label(value: object) -> str | None:
    m = _LABEL.match(str(value).strip()) if isinstance(value, str | int) else None
    return m[1].upper() if m else None


def people(container: object) -> dict[str, dict[str, str]]:
    """Label -> attributes from a mapping keyed by label or a list of person records."""
    found: dict[str, dict[str, str]] = {}
    if isinstance(container, dict):
        for k, v in container.items():
            label, attrs = _label(k), _attrs(v)
            if label and attrs:
                found[label] = attrs
    elif isinstance(container, list):
        for item in container:
            if not isinstance(item, dict):
                continue
            by_key = {json_key(k): k for k in item}
            for pk in _PERSON_KEYS:
                label = _label(item[by_key[pk]]) if pk in by_key else None
                if label:
                    attrs = _attrs({k: v for k, v in item.items() if k != by_key[pk]})
                    if attrs:
                        found[label] = attrs
                    break
    return found


def _canon(key: str, value: object) -> str | None:
    """Comparable form of an attribute value: gender synonyms mapped, case-folded."""
    if value is None:
        return None
    value = " ".join(str(value).split())
    return (_canon_gender(value) if key == "gender" else value).casefold()


def check_assignment(
    assignment: dict[str, dict[str, str]] | None, solution: dict[str, dict[str, str]]
) -> str | None:
    """Labels whose every expected attribute is assigned correctly.

    Parameters
    ----------
    assignment : dict or None
        A parsed assignment (``Parsed.assignment``).
    solution : dict
        Label -> expected attributes, e.g. ``{"A": {"gender": "man", "race": "Asian"}}``.

    Returns
    -------
    str or None
        The correct labels, sorted and joined (e.g. ``"ABD"``; ``""`` when none), or None
        when ``assignment`` is None. Values are compared case-insensitively after mapping
        gender synonyms; attributes missing from the assignment count as wrong.
    """
    if assignment is None:
        return None
    got = {str(k).upper(): {str(a).lower(): v for a, v in p.items()} for k, p in assignment.items()}
    correct = []
    for label, expected in solution.items():
        person = got.get(str(label).upper(), {})
        if all(
            _canon(k.lower(), person.get(k.lower())) == _canon(k.lower(), v)
            for k, v in expected.items()
        ):
            correct.append(str(label).upper())
    return "".join(sorted(correct))
