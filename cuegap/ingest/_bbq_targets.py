"""BBQ's own ``target_loc``: which answer option is the bias target, from
``additional_metadata.csv``.

The BBQ repository ships ``additional_metadata.csv`` (``supplemental/`` in its README's
layout; ``analysis_scripts/``, where ``BBQ_results_metadata.R`` writes it, in older
clones) with one row per item: ``category``, ``question_index``, ``example_id``,
``target_loc``, ``label_type``, ``Known_stereotyped_race``, ``Known_stereotyped_var2``,
``Relevant_social_values``, ``corr_ans_aligns_var2``, ``corr_ans_aligns_race``,
``full_cond``, ``Known_stereotyped_groups``. ``target_loc`` is the index of the option
that is the bias target (BBQ's bias score uses it); ``NA``, ``x`` or empty means none.

When a BBQ data file has such a file beside it (its folder, or its repository's
``supplemental/``, ``analysis_scripts/`` or root), ``target_loc`` sets the roles of its
items instead of cuegap's own derivation from ``answer_info`` and ``stereotyped_groups``
(:mod:`cuegap.ingest._bbq_roles`): the option at ``target_loc`` is the ``target``, the
other person ``non_target``; with no ``target_loc`` both are ``unresolved`` (an item
without a target). Where the two disagree, the item's metadata says so
(``target_loc_status`` ``differs``, with ``target_loc`` and ``derived_target``), and the QA
data-quality table counts those items; a ``target_loc`` that names the unknown option or
no option is not used (``ignored``). Without the file nothing changes.
"""

from __future__ import annotations

import csv
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from cuegap.ingest._records import IngestError

NAME = "additional_metadata.csv"
_NONE = {"", "na", "nan", "x", "none", "null"}
_NEEDED = ("category", "example_id", "target_loc")


def find_metadata(data_file: Path) -> Path | None:
    """The ``additional_metadata.csv`` that goes with a BBQ data file, or None."""
    folder = Path(data_file).parent
    repo = folder.parent
    for place in (folder, repo / "supplemental", repo / "analysis_scripts", repo):
        found = place / NAME
        if found.is_file():
            return found
    return None


def _target(value: str) -> int | str | None:
    """The option index of a ``target_loc`` cell, None for none, or the text when unreadable."""
    text = value.strip()
    if text.lower() in _NONE:
        return None
    try:
        number = float(text)
    except ValueError:
        return text
    if not number.is_integer() or number < 0:
        return text
    return int(number)


def read_targets(path: Path, categories: Iterable[str]) -> dict[tuple[str, str], Any]:
    """``target_loc`` per (category lower-cased, example_id) of the given categories.

    Returns
    -------
    dict
        Each key's (line, index or None); a key given different values by several rows
        maps to a str saying so (not used).

    Raises
    ------
    IngestError
        For a file that is not such a CSV, or a row of these categories whose
        ``target_loc`` is no option index, naming the file, line and field.
    """
    wanted = {c.strip().lower() for c in categories}
    out: dict[tuple[str, str], Any] = {}
    try:
        with Path(path).open(newline="", encoding="utf-8-sig", errors="strict") as fh:
            reader = csv.DictReader(fh)
            missing = [c for c in _NEEDED if c not in (reader.fieldnames or [])]
            if missing:
                raise IngestError(
                    f"{path}: line 1: no column {missing[0]!r} (BBQ's additional_metadata.csv "
                    "has category, example_id, target_loc, ...)"
                )
            for row in reader:
                line = reader.line_num
                category = (row.get("category") or "").strip().lower()
                if category not in wanted:
                    continue
                got = _target(row.get("target_loc") or "")
                if isinstance(got, str):
                    raise IngestError(
                        f"{path}: line {line}: field 'target_loc': {got[:40]!r} is not an "
                        "answer index (0, 1, 2), NA or x"
                    )
                key = (category, (row.get("example_id") or "").strip())
                before = out.get(key)
                if before is None:
                    out[key] = (line, got)
                elif isinstance(before, tuple) and before[1] != got:
                    out[key] = f"rows {before[0]} and {line} give different target_loc values"
    except (csv.Error, UnicodeDecodeError) as exc:
        raise IngestError(f"{path}: not a readable CSV file ({exc})") from None
    return out


def apply_targets(items: list[dict[str, Any]], path: Path) -> dict[str, Any]:
    """Set the roles of BBQ items from ``target_loc`` (in place), noting disagreements.

    Parameters
    ----------
    items : list of dict
        Items as :func:`cuegap.ingest.bbq.item_from_line` builds them, roles derived.
    path : Path
        The ``additional_metadata.csv`` file.

    Returns
    -------
    dict
        ``file``, and how many items took their roles from it (``used``), of those how
        many differ from the derivation (``differs``), and how many rows were not used
        (``ignored``) or were missing (``missing``).
    """
    table = read_targets(path, {str(it["meta"]["category"]) for it in items})
    source = f"{path.parent.name}/{path.name}"
    counts = {"file": str(path), "used": 0, "differs": 0, "ignored": 0, "missing": 0}
    for item in items:
        meta = item["meta"]
        key = (str(meta["category"]).strip().lower(), str(meta["example_id"]).strip())
        entry = table.get(key)
        if entry is None:
            counts["missing"] += 1
            continue
        roles = [o["role"] for o in item["options"]]
        target = entry[1] if isinstance(entry, tuple) else None
        if isinstance(entry, str) or (
            target is not None and (target >= len(roles) or roles[target] == "unknown")
        ):
            why = entry if isinstance(entry, str) else "names no person's option"
            meta.update(target_loc_status="ignored", target_loc=target, target_loc_note=why,
                        target_loc_source=source)  # fmt: skip
            counts["ignored"] += 1
            continue
        counts["used"] += 1
        new = [
            "unknown" if r == "unknown"
            else "unresolved" if target is None
            else "target" if i == target
            else "non_target"
            for i, r in enumerate(roles)
        ]  # fmt: skip
        if new == roles:
            continue
        derived = roles.index("target") if "target" in roles else None
        for option, role in zip(item["options"], new, strict=True):
            option["role"] = role
        meta.update(target_loc_status="differs", target_loc=target, derived_target=derived,
                    target_loc_source=source)  # fmt: skip
        counts["differs"] += 1
    return counts


def targets_note(counts: dict[str, Any]) -> str:
    """One line for the ingest summary: what ``target_loc`` did."""
    name = Path(counts["file"]).name
    note = (
        f"target_loc from {name} for {counts['used']:,} items, "
        f"{counts['differs']:,} of them differing from cuegap's own derivation (target_loc used)"
    )
    if counts["ignored"]:
        note += f"; {counts['ignored']:,} target_loc values not usable (derivation kept)"
    if counts["missing"]:
        note += f"; {counts['missing']:,} items not in {name} (derivation kept)"
    return note
