"""Item-bank builder for the public CSVs of the Moral Safety paper.

The paper "Moral Safety in LLMs: Exposing Performative Compliance with Puzzled Cues"
publishes its 100 dilemmas as CSV files (see the ``README.md`` next to them). This module
turns those files into a cuegap item bank (``itembank-v1.schema.json``). Only *facts* are
derived: ids, labels, categories, demographic combinations, puzzle ids and levels. No
dilemma, puzzle, action or consequence text is copied into the bank.

Mapping
-------
* Dilemmas come from ``majority_vote_annotated.csv`` (in file order), joined to
  ``direct_dilemmas.csv`` by ``idx`` for ``dilemma_ID`` and ``topic_group``. The benefit
  option ``b_d`` is ``majority_vote_best_for_person``, the person status is
  ``Target_person_action_status``, the human decisions are ``Final_decision`` (sys1) and
  ``Final_decision_sys2``. Per-annotator labels come from ``annotator_{a,b,c}.csv`` joined
  by ``idx`` (``Target_person_status``, ``best_for_person``, ``Final_decision_sys1/2``).
* Items: ``neutral-{dilemma_id}`` (one per row of ``simple_dilemmas.csv``),
  ``direct-{ID}`` (one per row of ``direct_dilemmas.csv``) and ``puzzled-{ID}`` (one per
  row of ``puzzled_dilemmas.csv``). Individuals A-D follow the canonical ("orig") shape
  A=(gender1, race1), B=(gender1, race2), C=(gender2, race1), D=(gender2, race2); the
  puzzle solution of a puzzled individual is the default ``{gender, race}``.

Values that cannot be normalised become ``None``; :func:`unmapped_values` counts them.
"""

from __future__ import annotations

import csv
import io
import os
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from cuegap.ingest._records import IngestError

__all__ = ["build_item_bank", "find_moral_safety_dir", "unmapped_values"]

ENV_VAR = "CUEGAP_MORAL_SAFETY_DIR"
SOURCE = (
    "Public data of 'Moral Safety in LLMs: Exposing Performative Compliance with Puzzled "
    "Cues' (github.com/Mamin78/Moral_Safety_LLMs); facts only, no texts."
)
KNOWN_GENDERS = ("man", "woman", "non-binary")
KNOWN_RACES = ("Asian", "Black", "Hispanic", "Muslim", "White")
STATUSES = ("good", "bad", "neutral")
DIFFICULTIES = ("easy", "intermediate", "hard")
ANNOTATORS = ("a", "b", "c")


def find_moral_safety_dir() -> Path | None:
    """Locate the directory holding the Moral Safety CSVs.

    Returns
    -------
    Path or None
        ``$CUEGAP_MORAL_SAFETY_DIR`` when that variable is set and non-empty (whether or
        not it exists),
        else the first existing of ``../shared/data/moral_safety`` relative to the current
        directory and relative to the repository root (the parent of the ``cuegap``
        package directory), else ``None``.
    """
    env = os.environ.get(ENV_VAR)
    if env:
        return Path(env)
    repo_root = Path(__file__).resolve().parents[2]
    for base in (Path.cwd(), repo_root):
        candidate = base / ".." / "shared" / "data" / "moral_safety"
        if candidate.is_dir():
            return candidate.resolve()
    return None


def _read(path: Path) -> list[dict[str, str]]:
    """The rows of one CSV, each with every column of the header, as text.

    Raises
    ------
    IngestError
        Naming the file and line of bytes that are not UTF-8, a NUL character, a field
        over the csv module's limit, or a row with more or fewer cells than the header.
    """
    raw = path.read_bytes()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise IngestError(f"{path}: line {line}: bytes that are not valid UTF-8") from None
    if "\x00" in text:
        line = text.count("\n", 0, text.index("\x00")) + 1
        raise IngestError(f"{path}: line {line}: a NUL character (\\u0000)")
    reader = csv.DictReader(io.StringIO(text, newline=""))
    rows = []
    try:
        for row in reader:
            if None in row or None in row.values():
                raise IngestError(
                    f"{path}: line {reader.line_num}: not one cell per column of the header"
                )
            rows.append(row)
    except csv.Error as exc:
        raise IngestError(f"{path}: line {reader.line_num}: {exc}") from None
    return rows


def _option(value: str | None) -> str | None:
    """Normalise "Option 1", "Option2", "option1" ... to "option1"/"option2"."""
    if value is None:
        return None
    token = "".join(value.split()).lower()
    return token if token in ("option1", "option2") else None


def _status(value: str | None) -> str | None:
    if value is None:
        return None
    token = value.strip().lower()
    return token if token in STATUSES else None


def _ordered(values: set[str], known: tuple[str, ...]) -> list[str]:
    return [v for v in known if v in values] + sorted(values - set(known))


class _Normaliser:
    """Applies a normaliser and counts values it cannot map, per ``file:column``."""

    def __init__(self) -> None:
        self.unmapped: Counter[str] = Counter()

    def __call__(
        self, func: Callable[[str | None], str | None], row: dict[str, str], column: str, file: str
    ) -> str | None:
        value = func(row.get(column))
        if value is None:
            self.unmapped[f"{file}:{column}"] += 1
        return value


def _individuals(row: dict[str, str]) -> list[dict[str, str]]:
    g1, g2 = row["selected_gender1"].strip(), row["selected_gender2"].strip()
    r1, r2 = row["selected_race1"].strip(), row["selected_race2"].strip()
    shape = (("A", g1, r1), ("B", g1, r2), ("C", g2, r1), ("D", g2, r2))
    return [{"label": lab, "gender": g, "race": r} for lab, g, r in shape]


def _build(directory: Path, name: str) -> tuple[dict, Counter[str]]:
    directory = Path(directory)
    norm = _Normaliser()
    majority = _read(directory / "majority_vote_annotated.csv")
    direct = _read(directory / "direct_dilemmas.csv")
    puzzled = _read(directory / "puzzled_dilemmas.csv")
    simple = _read(directory / "simple_dilemmas.csv")
    annot = {a: {r["idx"]: r for r in _read(directory / f"annotator_{a}.csv")} for a in ANNOTATORS}

    by_idx: dict[str, tuple[str, str]] = {}
    for row in direct:
        key = (row["dilemma_ID"].strip(), row["topic_group"].strip() or None)
        if by_idx.setdefault(row["idx"].strip(), key) != key:
            raise ValueError(f"idx {row['idx']} maps to several dilemmas in direct_dilemmas.csv")

    dilemmas = []
    for row in majority:
        idx = row["idx"].strip()
        if idx not in by_idx:
            raise ValueError(f"majority_vote_annotated.csv idx {idx} not in direct_dilemmas.csv")
        dilemma_id, topic = by_idx[idx]
        benefit = _option(row["majority_vote_best_for_person"])
        if benefit is None:
            raise ValueError(f"dilemma {dilemma_id}: no benefit option")
        annotations = []
        for a in ANNOTATORS:
            arow = annot[a].get(idx)
            if arow is None:
                continue
            file = f"annotator_{a}.csv"
            annotations.append(
                {
                    "annotator": a,
                    "person_status": norm(_status, arow, "Target_person_status", file),
                    "benefit_option": norm(_option, arow, "best_for_person", file),
                    "sys1": norm(_option, arow, "Final_decision_sys1", file),
                    "sys2": norm(_option, arow, "Final_decision_sys2", file),
                }
            )
        file = "majority_vote_annotated.csv"
        dilemmas.append(
            {
                "dilemma_id": dilemma_id,
                "topic_group": topic,
                "person_status": norm(_status, row, "Target_person_action_status", file),
                "benefit_option": benefit,
                "human_decisions": {
                    "sys1": norm(_option, row, "Final_decision", file),
                    "sys2": norm(_option, row, "Final_decision_sys2", file),
                },
                "annotations": annotations,
            }
        )
    known_ids = {d["dilemma_id"] for d in dilemmas}

    items: list[dict] = []
    for row in simple:
        did = row["dilemma_ID"].strip()
        items.append({"item_id": f"neutral-{did}", "dilemma_id": did, "condition": "neutral"})
    genders: set[str] = set()
    races: set[str] = set()
    for row in direct:
        inds = _individuals(row)
        items.append(
            {
                "item_id": f"direct-{row['ID'].strip()}",
                "dilemma_id": row["dilemma_ID"].strip(),
                "condition": "direct",
                "combination_id": row["selection_id"].strip(),
                "individuals": inds,
            }
        )
        genders.update(i["gender"] for i in inds)
        races.update(i["race"] for i in inds)
    for row in puzzled:
        level = row["puzzle_level"].strip().lower()
        if level not in DIFFICULTIES:
            norm.unmapped["puzzled_dilemmas.csv:puzzle_level"] += 1
            level = None
        inds = _individuals(row)
        items.append(
            {
                "item_id": f"puzzled-{row['ID'].strip()}",
                "dilemma_id": row["dilemma_ID"].strip(),
                "condition": "puzzled",
                "difficulty": level,
                "puzzle_id": row["puzzle_id"].strip() or None,
                "solution_shape": "orig",
                "combination_id": row["selection_id"].strip(),
                "individuals": inds,
            }
        )
        genders.update(i["gender"] for i in inds)
        races.update(i["race"] for i in inds)
    missing = {it["dilemma_id"] for it in items} - known_ids
    if missing:
        raise ValueError(f"items refer to unknown dilemmas: {sorted(missing)[:5]}")

    n_unmapped = sum(norm.unmapped.values())
    bank = {
        "format": "cuegap-itembank",
        "version": 1,
        "name": name,
        "description": (
            f"Moral Safety design: {len(dilemmas)} dilemmas; neutral, direct and puzzled "
            f"items; {n_unmapped} unmappable label value(s) stored as null."
        ),
        "source": SOURCE,
        "genders": _ordered(genders, KNOWN_GENDERS),
        "races": _ordered(races, KNOWN_RACES),
        "dilemmas": dilemmas,
        "items": items,
    }
    return bank, norm.unmapped


def build_item_bank(directory: Path, *, name: str = "moral_safety") -> dict:
    """Build a cuegap item bank from the Moral Safety CSVs.

    Parameters
    ----------
    directory
        Directory holding ``majority_vote_annotated.csv``, ``direct_dilemmas.csv``,
        ``puzzled_dilemmas.csv``, ``simple_dilemmas.csv`` and ``annotator_{a,b,c}.csv``.
    name
        Name of the bank.

    Returns
    -------
    dict
        An item bank that validates against ``itembank-v1.schema.json``: 100 dilemmas,
        100 neutral, 300 direct and 900 puzzled items for the published data.

    Raises
    ------
    ValueError
        When the files cannot be joined or a dilemma has no benefit option.
    """
    return _build(Path(directory), name)[0]


def unmapped_values(directory: Path) -> dict[str, int]:
    """Count the label values that :func:`build_item_bank` stores as ``None``.

    Parameters
    ----------
    directory
        Same directory as for :func:`build_item_bank`.

    Returns
    -------
    dict
        ``{"file.csv:column": count}`` for every column with unmappable values.
    """
    return dict(_build(Path(directory), "unmapped")[1])
