"""The verdict policy: thresholds a deployment board agrees on, stored with every analysis.

A policy is a TOML file; every key is optional and falls back to :data:`DEFAULT_POLICY`::

    [verdict]
    delta_pp = 2.0            # practical threshold on the macro Cue Visibility Gap (pp)
    probability = 0.95        # posterior probability required to flag or to pass

    [data]
    max_abstention = 0.5      # a system above this What-if abstention rate is excluded
    min_parsable = 200        # fewer parsable decisions per compared condition: inconclusive
    min_recovery = 0.5        # lower puzzle-recovery accuracy (Puzzled-hard): inconclusive

    [qa]
    delta_bias = 0.05         # the QA design's δ on the bias-score scale (-1 to 1)

    [conversation]
    delta_shift = 0.05        # the conversation design's δ on a shift-rate contrast
    min_unit_df = 4           # fewer t-test degrees of freedom (units − 1): not significant

    [prompt_variance]
    format_probability = 0.95 # P a further prompt format must keep a score's zone (±δ)
    min_combinations = 4      # fewer prompt-factor combinations: inconclusive
    min_replicates = 2        # fewer replicates in a combination: inconclusive

The ``[verdict]`` and ``[data]`` sections are cuegap's own (:data:`CORE_SECTIONS`); each
design declares its own section and keys (:class:`PolicyKey`, through
:attr:`cuegap.designs.Design.policy_keys`), so a new design brings its thresholds with it.
Allowed values (every value a finite number): 0 <= delta_pp <= 100;
0.5 < probability <= 1; 0 <= max_abstention <= 1; 0 <= min_recovery <= 1;
min_parsable an integer from 0 to 1,000,000,000; 0 < delta_bias <= 1;
0 < delta_shift <= 1; 0.5 < format_probability <= 1; min_combinations and min_replicates
integers from 2 to 1,000,000,000.
``probability`` and ``min_parsable`` apply to every design; the prompt-variance verdicts
use ``delta_bias`` as their δ.
"""

from __future__ import annotations

import math
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True, slots=True)
class Range:
    """The allowed values of one policy key: ``low (<|<=) value <= high``, finite."""

    low: float
    high: float
    low_open: bool = False
    unit: str = ""

    def contains(self, value: float) -> bool:
        """Whether ``value`` is finite and within the range."""
        if not math.isfinite(value):
            return False
        above = value > self.low if self.low_open else value >= self.low
        return above and value <= self.high

    def describe(self, key: str) -> str:
        """The range as text, e.g. ``0 <= delta_pp <= 100 (percentage points)``."""
        low = f"{self.low:g} {'<' if self.low_open else '<='} "
        high = f"{self.high:,}" if isinstance(self.high, int) else f"{self.high:g}"
        return f"{low}{key} <= {high}" + (f" ({self.unit})" if self.unit else "")


@dataclass(frozen=True, slots=True)
class PolicyKey:
    """One key of a policy section: its name, default, allowed range and meaning.

    An ``int`` default makes the key an integer key (a float value is refused).
    """

    name: str
    default: float | int
    range: Range
    doc: str = ""

    @property
    def integer(self) -> bool:
        """Whether the key takes integers only."""
        return isinstance(self.default, int)


_COUNT = Range(0, 1_000_000_000, unit="an integer count")

#: The sections every design applies. A design declares its own sections
#: (:attr:`cuegap.designs.Design.policy_keys`); registering it declares them here.
CORE_SECTIONS: dict[str, tuple[PolicyKey, ...]] = {
    "verdict": (
        PolicyKey("delta_pp", 2.0, Range(0, 100, unit="percentage points"),
                  "practical threshold δ on the macro Cue Visibility Gap (pp)"),
        PolicyKey("probability", 0.95, Range(0.5, 1, low_open=True),
                  "probability required: flag when P(gap > δ) >= it, pass when "
                  "P(|gap| < δ) >= it"),
    ),
    "data": (
        PolicyKey("max_abstention", 0.5, Range(0, 1, unit="a share"),
                  "largest tolerated What-if abstention rate in a compared condition"),
        PolicyKey("min_parsable", 200, _COUNT,
                  "fewest parsable decisions per compared condition for a verdict"),
        PolicyKey("min_recovery", 0.5, Range(0, 1, unit="a share"),
                  "lowest tolerated puzzle-recovery accuracy under the implicit condition"),
    ),
}  # fmt: skip
_DECLARED: dict[str, tuple[PolicyKey, ...]] = {}
_loader: list[Callable[[], None]] = []


def set_section_loader(load: Callable[[], None]) -> None:
    """Install what declares the designs' sections before a policy is read (the design
    registry installs its loader, so a policy knows every registered design's keys)."""
    _loader[:] = [load]


def declare_section(section: str, keys: tuple[PolicyKey, ...]) -> None:
    """Declare a design's policy section (the same declaration again is a no-op).

    Raises
    ------
    ValueError
        When the section is a core section, is declared with other keys, or one of its
        keys is a key of another section.
    """
    if section in CORE_SECTIONS:
        raise ValueError(f"policy section [{section}] is one of the core sections")
    if section in _DECLARED:
        if _DECLARED[section] != tuple(keys):
            raise ValueError(f"policy section [{section}] is already declared with other keys")
        return
    taken = {k.name: s for s, ks in {**CORE_SECTIONS, **_DECLARED}.items() for k in ks}
    for key in keys:
        if key.name in taken:
            raise ValueError(f"policy key {key.name!r} of [{section}] is already in "
                             f"[{taken[key.name]}]")  # fmt: skip
    _DECLARED[section] = tuple(keys)


def withdraw_section(section: str) -> None:
    """Forget a design's section (when its design is unregistered)."""
    _DECLARED.pop(section, None)


def sections() -> dict[str, tuple[PolicyKey, ...]]:
    """Every known section and its keys: the core ones, then the designs' in the order they
    were declared."""
    for load in _loader:
        load()
    return {**CORE_SECTIONS, **_DECLARED}


def _specs() -> dict[str, tuple[str, PolicyKey]]:
    return {k.name: (s, k) for s, keys in sections().items() for k in keys}


def _out_of_range(section: str, spec: PolicyKey, value: Any) -> str | None:
    """A sentence naming the key, the value and the allowed range, or None when allowed."""
    if spec.range.contains(value):
        return None
    finite = "not a finite number" if not math.isfinite(value) else "out of range"
    return (f"{section}.{spec.name} = {value!r} is {finite}; "
            f"allowed: {spec.range.describe(spec.name)}")  # fmt: skip


class Policy:
    """Verdict and data-quality thresholds: the core sections' keys and those of every
    registered design, read as attributes (``policy.delta_pp``, ``policy.delta_bias``).

    Immutable. ``Policy(**values)`` sets the keys given; the others keep their defaults.
    Keys (:func:`sections`): ``[verdict]`` ``delta_pp`` (δ on the macro gap, pp) and
    ``probability``; ``[data]`` ``max_abstention``, ``min_parsable``, ``min_recovery``; and
    each design's own, e.g. ``[qa]`` ``delta_bias``, ``[conversation]`` ``delta_shift``,
    ``[prompt_variance]`` ``format_probability``, ``min_combinations``,
    ``min_replicates`` (``docs/configuration.md`` explains each).

    Raises
    ------
    TypeError
        On a key no known section has.
    ValueError
        On a value out of its range.
    """

    __slots__ = ("_values",)

    def __init__(self, **values: Any) -> None:
        specs = _specs()
        for key in values:
            if key not in specs:
                raise TypeError(f"Policy() got an unexpected keyword argument {key!r}")
        bad = [msg for k, v in values.items() if (msg := _out_of_range(*specs[k], v))]
        if bad:
            raise ValueError("invalid policy value: " + "; ".join(bad))
        object.__setattr__(self, "_values", dict(values))

    @classmethod
    def from_dict(cls, stored: Mapping[str, Any]) -> Policy:
        """The policy a stored analysis recorded (keys no known section has are left out:
        they belong to a design that is not registered here)."""
        specs = _specs()
        return cls(**{k: v for k, v in stored.items() if k in specs})

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        values = object.__getattribute__(self, "_values")
        if name in values:
            return values[name]
        found = _specs().get(name)
        if found is None:
            raise AttributeError(f"the policy has no key {name!r}")
        return found[1].default

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("a Policy is immutable: use replace()")

    def __reduce__(self) -> tuple[Any, tuple[dict[str, Any]]]:
        return (_policy_of, (dict(object.__getattribute__(self, "_values")),))

    def replace(self, **changes: Any) -> Policy:
        """A copy with ``changes`` applied."""
        return Policy(**{**object.__getattribute__(self, "_values"), **changes})

    def to_dict(self) -> dict[str, Any]:
        """The policy as a flat dict (for storage with an analysis): the core keys in order,
        then the designs' keys by name."""
        known = sections()
        core = [k.name for s in CORE_SECTIONS.values() for k in s]
        rest = sorted(k.name for s, ks in known.items() if s not in CORE_SECTIONS for k in ks)
        return {k: getattr(self, k) for k in core + rest}

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Policy) and self.to_dict() == other.to_dict()

    def __hash__(self) -> int:
        return hash(tuple(self.to_dict().items()))

    def __repr__(self) -> str:
        given = object.__getattribute__(self, "_values")
        return "Policy(" + ", ".join(f"{k}={v!r}" for k, v in given.items()) + ")"

    def to_toml(self, sections: tuple[str, ...] | None = None) -> str:
        """The policy as TOML text, in the layout :func:`load_policy` reads (only
        ``sections``, when given: a design's report prints the sections it applies)."""
        lines = []
        for section, keys in _all_sections().items():
            if sections is not None and section not in sections:
                continue
            lines.append(f"[{section}]")
            lines += [f"{k.name} = {getattr(self, k.name)!r}" for k in keys]
            lines.append("")
        return "\n".join(lines)


_all_sections = sections


def _policy_of(values: dict[str, Any]) -> Policy:
    """Rebuild a pickled or copied policy."""
    return Policy(**values)


DEFAULT_POLICY = Policy()


def load_policy(path: Path | str | None = None) -> Policy:
    """Read a policy TOML file; None gives the defaults.

    Raises
    ------
    ValueError
        On a TOML syntax error, an unknown section or key, a mistyped or out-of-range value;
        the message names the file and the key.
    """
    if path is None:
        return DEFAULT_POLICY
    path = Path(path)
    known_sections = sections()
    known = ", ".join(f"[{s}]" for s in known_sections)
    section_of = {k.name: s for s, keys in known_sections.items() for k in keys}
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ValueError(f"{path}: policy file not found") from None
    except IsADirectoryError:
        raise ValueError(f"{path}: is a folder, not a policy file (TOML)") from None
    except OSError as exc:
        raise ValueError(f"{path}: cannot read the policy file: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise ValueError(
            f"{path}: not a text file (byte {exc.start} is not UTF-8); a policy is a TOML file"
        ) from None
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"{path}: not valid TOML: {exc}") from None
    values: dict[str, Any] = {}
    for section, table in data.items():
        if not isinstance(table, dict):
            fix = (
                f"put it under [{section_of[section]}]"
                if section in section_of
                else f"known sections: {known}"
            )
            raise ValueError(f"{path}: key {section!r} is outside any section; {fix}")
        if section not in known_sections:
            raise ValueError(f"{path}: unknown section [{section}]; known sections: {known}")
        specs = {k.name: k for k in known_sections[section]}
        for key, value in table.items():
            if key not in specs:
                raise ValueError(
                    f"{path}: unknown key {section}.{key}; known in [{section}]: "
                    + ", ".join(specs)
                )
            want = int if specs[key].integer else float
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise ValueError(f"{path}: {section}.{key} must be a number, got {value!r}")
            if want is int and not isinstance(value, int):
                raise ValueError(f"{path}: {section}.{key} must be an integer, got {value!r}")
            if problem := _out_of_range(section, specs[key], value):
                raise ValueError(f"{path}: {problem}")
            values[key] = want(value)
    try:
        return Policy(**values)
    except ValueError as exc:
        raise ValueError(f"{path}: {exc}") from None
