"""Declarative mappings from a runner's sample metadata to cuegap's response fields.

A runner (inspect-ai, lm-evaluation-harness, promptfoo, ...) knows nothing of cuegap's
items and probes; the task author stores them in the runner's own sample metadata. A
mapping file, written once per task, says where. Each runner reader turns one sample into
a *view* (a nested dict of what the runner wrote, see the reader's docstring) and the
mapping picks cuegap's fields out of it by dotted path::

    # cuegap-mapping.toml
    version = 1
    runner = "inspect-ai"                 # optional; checked against the file's format

    [fields]
    item_bank = { value = "tiny" }        # a constant
    item_id = "metadata.item"             # a dotted path into the view
    probe = { path = "metadata.kind", map = { whatif = "what_if", couldbe = "could_be" } }
    individual = ["metadata.target", "metadata.person"]    # first one present wins
    repeat = { path = "id", pattern = 'r(?P<repeat>\\d+)$' }  # a regex on the value
    prompt_variant = "key.variant"        # a group of an [extract] table, below

    [extract.key]                         # named groups of one regex, as view["key"][group]
    path = "id"
    pattern = '^(?P<item>[^/]+)/(?P<variant>v\\d+)$'

    [options]                             # reader-specific settings
    input = "batch_input.jsonl"           # e.g. the OpenAI Batch input file

Every field has a default in each reader (the cuegap field name under the runner's
metadata, e.g. ``metadata.item_id`` for inspect-ai), so a task whose metadata already uses
cuegap's names needs no mapping file. Uses only the standard library (tomllib, re).
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping as _MappingABC
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cuegap.ingest._mapping_values import (
    MISSING,
    FieldSpec,
    Problem,
    coerce,
    get_path,
    resolve,
)
from cuegap.ingest._records import IngestError

FIELDS = (
    "system",
    "item_bank",
    "item_id",
    "probe",
    "individual",
    "consequences",
    "prompt_variant",
    "repeat",
)
REQUIRED = ("system", "item_id", "probe")
VERSIONS = (1,)
_SPEC_KEYS = frozenset(("path", "value", "pattern", "map"))
_TOP_KEYS = frozenset(("version", "runner", "fields", "options", "extract"))


@dataclass(frozen=True, slots=True)
class Mapping:
    """A parsed mapping: field specs plus reader options.

    Use :func:`load_mapping` to read one from TOML, :meth:`over` to lay it over a reader's
    defaults, and :meth:`apply` on each sample's view.
    """

    fields: dict[str, FieldSpec] = field(default_factory=dict)
    runner: str | None = None
    options: dict[str, Any] = field(default_factory=dict)
    source: Path | None = None
    extract: dict[str, FieldSpec] = field(default_factory=dict)

    def over(self, defaults: _MappingABC[str, Any]) -> Mapping:
        """This mapping's fields laid over a reader's default specs (raw TOML-like values)."""
        merged = {name: parse_spec(name, spec) for name, spec in defaults.items()}
        merged.update(self.fields)
        return Mapping(merged, self.runner, dict(self.options), self.source, dict(self.extract))

    def check_runner(self, reader: str, path: Path) -> None:
        """Raise :class:`IngestError` when the mapping names another runner than ``reader``."""
        if self.runner is not None and self.runner != reader:
            raise IngestError(
                f"{path}: the mapping {self.source or ''} is for runner {self.runner!r}, but "
                f"this file is read as {reader!r} (use --format {self.runner} to force that "
                "reader, or another mapping)"
            )

    def option_path(self, key: str) -> Path | None:
        """A path option, resolved against the mapping file's folder."""
        value = self.options.get(key)
        if value is None:
            return None
        p = Path(value)
        if not p.is_absolute() and self.source is not None:
            p = self.source.parent / p
        return p

    def apply(
        self, view: _MappingABC[str, Any], *, sample: str
    ) -> dict[str, Any] | tuple[str, str]:
        """Pick and check cuegap's fields from one sample's view.

        Parameters
        ----------
        view : mapping
            What the runner wrote about the sample (reader-specific).
        sample : str
            How to name the sample in messages, e.g. ``"sample 'q-17' (epoch 2)"``.

        Returns
        -------
        dict or (field, reason)
            The fields (``individual`` and ``item_bank`` may be None), or the first problem.
        """
        out: dict[str, Any] = {}
        notes = []
        if self.extract:
            view = dict(view)
            for key, spec in self.extract.items():
                found = get_path(view, spec.paths[0])
                m = spec.pattern.search(str(found)) if found is not None else None
                view[key] = m.groupdict() if m else {}
                if m is None:
                    notes.append(
                        f"; {spec.paths[0]} {found!r} does not match the [extract.{key}] pattern"
                    )
        for name in FIELDS:
            spec = self.fields.get(name)
            value = None if spec is None else resolve(spec, view, name)
            if isinstance(value, Problem):
                return name, f"{sample}: mapped field {name!r}: {value.reason}"
            if value is None:
                if name in REQUIRED:
                    where = f" (looked at {spec.describe()}{''.join(notes)})" if spec else ""
                    return name, f"{sample}: missing mapped field {name!r}{where}"
                out[name] = None
                continue
            checked = coerce(name, value)
            if isinstance(checked, Problem):
                return name, f"{sample}: mapped field {name!r}: {checked.reason}"
            out[name] = checked
        probe, individual = out["probe"], out["individual"]
        if probe == "main" and individual is not None:
            return "individual", (
                f"{sample}: mapped field 'individual' is {individual!r} but must be absent for "
                "the main probe"
            )
        if probe != "main" and individual is None:
            return "individual", (
                f"{sample}: mapped field 'individual' (a letter A-Z) is required for {probe}"
            )
        if out["consequences"] is None:
            out["consequences"] = True
        if out["prompt_variant"] is None:
            out["prompt_variant"] = "v0"
        if out["repeat"] is None:
            out["repeat"] = 0
        return out


def parse_spec(name: str, raw: Any, *, where: str = "") -> FieldSpec:
    """Turn one TOML value (a path, a list of paths, or a table) into a :class:`FieldSpec`.

    Raises
    ------
    ValueError
        When the value has the wrong shape; the message names the field.
    """
    if isinstance(raw, FieldSpec):
        return raw
    if isinstance(raw, str):
        return FieldSpec(paths=(raw,))
    if isinstance(raw, list) and raw and all(isinstance(p, str) for p in raw):
        return FieldSpec(paths=tuple(raw))
    if not isinstance(raw, dict):
        raise ValueError(
            f"{where}field {name!r}: expected a path, a list of paths or a table, got {raw!r}"
        )
    unknown = sorted(set(raw) - _SPEC_KEYS)
    if unknown:
        raise ValueError(
            f"{where}field {name!r}: unknown key {unknown[0]!r}; known: "
            f"{', '.join(sorted(_SPEC_KEYS))}"
        )
    if ("path" in raw) == ("value" in raw):
        raise ValueError(f"{where}field {name!r}: give exactly one of 'path' or 'value'")
    paths = raw.get("path", ())
    if isinstance(paths, str):
        paths = (paths,)
    if not (isinstance(paths, list | tuple) and all(isinstance(p, str) for p in paths)):
        raise ValueError(f"{where}field {name!r}: 'path' must be a string or a list of strings")
    pattern = raw.get("pattern")
    if pattern is not None:
        try:
            pattern = re.compile(pattern)
        except (re.error, TypeError) as exc:
            raise ValueError(f"{where}field {name!r}: bad 'pattern' {pattern!r}: {exc}") from None
    mapping = raw.get("map")
    if mapping is not None and not isinstance(mapping, dict):
        raise ValueError(f"{where}field {name!r}: 'map' must be a table")
    return FieldSpec(
        paths=tuple(paths),
        value=raw.get("value", MISSING),
        pattern=pattern,
        map={str(k): v for k, v in mapping.items()} if mapping is not None else None,
    )


def parse_mapping(doc: dict[str, Any], *, source: Path | None = None) -> Mapping:
    """Build a :class:`Mapping` from a parsed TOML document (see the module docstring).

    Raises
    ------
    ValueError
        For an unknown version, key or field, naming the source file.
    """
    where = f"{source}: " if source is not None else ""
    unknown = sorted(set(doc) - _TOP_KEYS)
    if unknown:
        raise ValueError(
            f"{where}unknown key {unknown[0]!r}; known: {', '.join(sorted(_TOP_KEYS))}"
        )
    version = doc.get("version", 1)
    if version not in VERSIONS:
        raise ValueError(
            f"{where}unknown mapping version {version!r}; this cuegap reads "
            f"{', '.join(map(str, VERSIONS))}"
        )
    fields = doc.get("fields", {})
    options = doc.get("options", {})
    if not isinstance(fields, dict) or not isinstance(options, dict):
        raise ValueError(f"{where}'fields' and 'options' must be tables")
    bad = sorted(set(fields) - set(FIELDS))
    if bad:
        raise ValueError(
            f"{where}unknown field {bad[0]!r}; mappable fields: {', '.join(FIELDS)} "
            "(condition and difficulty come from the item bank via item_id)"
        )
    runner = doc.get("runner")
    if runner is not None and not isinstance(runner, str):
        raise ValueError(f"{where}'runner' must be a string")
    specs = {name: parse_spec(name, raw, where=where) for name, raw in fields.items()}
    extract = doc.get("extract", {})
    if not isinstance(extract, dict):
        raise ValueError(f"{where}'extract' must be a table of tables")
    extracts = {}
    for key, raw in extract.items():
        if not (
            isinstance(raw, dict)
            and set(raw) == {"path", "pattern"}
            and isinstance(raw["path"], str)
        ):
            raise ValueError(
                f"{where}[extract.{key}] needs exactly a 'path' (a string) and a 'pattern'"
            )
        spec = parse_spec(f"extract.{key}", raw, where=where)
        if spec.pattern is None or not spec.pattern.groupindex:
            raise ValueError(
                f"{where}[extract.{key}]: the pattern needs named groups (?P<name>...)"
            )
        extracts[key] = spec
    return Mapping(specs, runner, dict(options), source, extracts)


def load_mapping(path: Path | str) -> Mapping:
    """Read a TOML mapping file.

    Raises
    ------
    FileNotFoundError
        When the file does not exist.
    ValueError
        When it is not valid TOML or not a valid mapping; the message names the file.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such mapping file")
    try:
        doc = tomllib.loads(path.read_text("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path}: not a valid TOML mapping: {exc}") from None
    return parse_mapping(doc, source=path)


def as_mapping(mapping: Mapping | Path | str | None) -> Mapping:
    """Accept a :class:`Mapping`, a path to a TOML file, or None (reader defaults only)."""
    if mapping is None:
        return Mapping()
    if isinstance(mapping, Mapping):
        return mapping
    return load_mapping(mapping)
