"""Field specs of a runner mapping and how a value is found, checked and converted.

:mod:`cuegap.ingest.mapping` reads mapping files into :class:`FieldSpec` objects; this
module looks a spec up in a reader's view (:func:`resolve`) and converts the value to the
field's type (:func:`coerce`). Problems come back as :class:`Problem` values, which the
mapping turns into one-line errors naming the field.
"""

from __future__ import annotations

import re
from collections.abc import Mapping as _MappingABC
from dataclasses import dataclass
from typing import Any

from cuegap.ingest._records import PROBES

__all__ = ["MISSING", "FieldSpec", "Problem", "coerce", "get_path", "resolve"]

_TRUE = frozenset(("true", "yes", "y", "1"))
_FALSE = frozenset(("false", "no", "n", "0"))
#: The "no constant" marker of :attr:`FieldSpec.value`.
MISSING = object()


@dataclass(frozen=True, slots=True)
class FieldSpec:
    """Where one cuegap field comes from.

    Attributes
    ----------
    paths : tuple of str
        Dotted paths into the reader's view, tried in order; the first that is present
        (not missing, ``null`` or ``""``) wins.
    value : object
        A constant, used instead of ``paths`` when set.
    pattern : re.Pattern, optional
        A regular expression searched in the (string) value; the group named like the
        field, else group 1, else the whole match is taken.
    map : dict, optional
        Replaces a value found in it (keys compared as strings); other values pass through.
    """

    paths: tuple[str, ...] = ()
    value: Any = MISSING
    pattern: re.Pattern[str] | None = None
    map: dict[str, Any] | None = None

    def describe(self) -> str:
        """The paths looked at, for messages."""
        return ", ".join(self.paths) if self.paths else "a constant"


@dataclass(frozen=True, slots=True)
class Problem:
    """Why a field's value was not usable (the mapping names the field and the line)."""

    reason: str


def get_path(view: Any, path: str) -> Any:
    """The value at a dotted path (dict keys, or integer list indices), else None."""
    node = view
    for part in path.split("."):
        if isinstance(node, _MappingABC):
            node = node.get(part)
        elif isinstance(node, list) and part.lstrip("-").isdigit():
            idx = int(part)
            node = node[idx] if -len(node) <= idx < len(node) else None
        else:
            return None
        if node is None:
            return None
    return node


def resolve(spec: FieldSpec, view: _MappingABC[str, Any], name: str = "") -> Any:
    """The raw value of field ``name`` for one view (None when absent), or a problem."""
    if spec.value is not MISSING:
        return spec.value
    value = None
    for path in spec.paths:
        found = get_path(view, path)
        if found is not None and found != "":
            value = found
            break
    if value is None:
        return None
    if spec.pattern is not None:
        if isinstance(value, dict | list):
            return Problem(f"pattern needs a text value, got {type(value).__name__}")
        text = str(value)
        m = spec.pattern.search(text)
        if m is None:
            return Problem(f"{text!r} does not match pattern {spec.pattern.pattern!r}")
        if name in m.re.groupindex:
            value = m.group(name)
        else:
            value = m.group(1) if m.re.groups else m.group(0)
        if value is None or value == "":
            return None
    if spec.map is not None and isinstance(value, str | int | bool | float):
        key = str(value).lower() if isinstance(value, bool) else str(value)
        if key in spec.map:
            value = spec.map[key]
    return value


def coerce(name: str, value: Any) -> Any:
    """``value`` as field ``name``'s type (bool, int >= 0, probe, letter, text), or a problem."""
    if name == "consequences":
        if isinstance(value, bool):
            return value
        if isinstance(value, int) and value in (0, 1):
            return bool(value)
        if isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
            return value.strip().lower() in _TRUE
        return Problem(f"expected true or false, got {value!r}")
    if name == "repeat":
        if isinstance(value, bool):
            return Problem(f"expected an integer >= 0, got {value!r}")
        if isinstance(value, str) and value.strip().isdigit():
            value = int(value.strip())
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if not isinstance(value, int) or value < 0:
            return Problem(f"expected an integer >= 0, got {value!r}")
        return value
    if isinstance(value, bool) or not isinstance(value, str | int):
        return Problem(f"expected text, got {type(value).__name__} {value!r}")
    text = str(value).strip()
    if name == "probe" and text not in PROBES:
        return Problem(f"{text!r} is not one of {', '.join(PROBES)} (add a map to translate it)")
    if name == "individual":
        if not (len(text) == 1 and text.isalpha()):
            return Problem(f"expected a letter A-Z, got {text!r}")
        return text.upper()
    return text
