"""The reader registry: one module per runner format, picked by name or detected.

A reader module provides ``detect(path) -> bool`` and ``read(path)``. Response readers
return a :class:`~cuegap.ingest._records.ResponseStream`; item-bank readers return a
validated item-bank dict. Runner readers (inspect-ai, lm-eval, ...) also take a mapping,
``read(path, mapping=None)``: how the runner's sample metadata maps to cuegap's fields
(:mod:`cuegap.ingest.mapping`).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from cuegap.format_names import FORMAT_NAMES
from cuegap.ingest import (
    _runner,
    bbq,
    bbq_results,
    diffaware,
    generic,
    helm,
    implicit_bbq,
    inspect_bbq,
    inspect_log,
    itembank,
    lm_eval,
    lm_eval_bbq,
    mac_conversation,
    mac_transcript,
    openai_batch,
    promptfoo,
    qa_itembank,
)
from cuegap.ingest._bbq_repo import expand_repository, is_bbq_repository
from cuegap.ingest._records import IngestError


@dataclass(frozen=True, slots=True)
class Reader:
    """A registered input format."""

    name: str
    kind: Literal["responses", "item_bank"]
    description: str
    detect: Callable[[Path], bool]
    read: Callable[..., Any]
    mapping: bool = False
    """True when ``read`` takes ``mapping=`` (a runner's metadata to cuegap's fields)."""
    design: str = "dilemma"
    """The study design whose items or responses the format holds (:mod:`cuegap.designs`)."""
    system: bool = False
    """True when ``read`` takes ``system=``: the system of records that name none."""
    joins: bool = False
    """True for an item bank joined to banks already stored: it is ingested after them."""


def _moral_safety_detect(path: Path) -> bool:
    return path.is_dir() and (path / "majority_vote_annotated.csv").is_file()


def _moral_safety_bank(path: Path) -> dict[str, Any]:
    from cuegap.ingest.moral_safety import build_item_bank

    try:
        return build_item_bank(path)
    except (ValueError, KeyError, TypeError) as exc:  # rows that do not join up
        raise IngestError(f"{path}: not the seed paper's CSVs: {exc}") from None


READERS: dict[str, Reader] = {
    r.name: r
    for r in (
        Reader(
            itembank.NAME,
            "item_bank",
            "cuegap item-bank JSON (format: cuegap-itembank)",
            itembank.detect,
            itembank.read,
        ),
        Reader(
            "moral-safety",
            "item_bank",
            "the seed paper's public CSV directory (majority_vote_annotated.csv, ...)",
            _moral_safety_detect,
            lambda p: itembank.validate(_moral_safety_bank(p), source=str(p)),
        ),
        Reader(
            generic.NAME,
            "responses",
            "cuegap responses JSONL (format: cuegap-responses)",
            generic.detect,
            generic.read,
        ),
        # Before the single-agent reader: it claims only transcripts of two or more agents
        # (a folder by its first transcript), which the single-agent reader leaves alone.
        Reader(
            mac_conversation.NAME,
            "responses",
            "MAC-Fairness two-agent conversation transcripts: a folder of them (walked and "
            "streamed), one transcript JSON or JSONL of them, joined to their config "
            "snapshots (conversation design)",
            mac_conversation.detect,
            mac_conversation.read,
            design="conversation",
        ),
        Reader(
            mac_transcript.NAME,
            "responses",
            "MAC-Fairness single-agent (1agent_as-ai) transcript JSON, or JSONL of them, "
            "joined to its config snapshot for the prompt factors (prompt-variance design)",
            mac_transcript.detect,
            mac_transcript.read,
            design="qa",
        ),
        # The BBQ readers come before the general runner readers: they claim only runner
        # files whose samples are BBQ records, which the general readers would also claim.
        Reader(
            inspect_bbq.NAME,
            "responses",
            "inspect-ai log of a BBQ task (inspect_evals' bbq; QA design)",
            inspect_bbq.detect,
            inspect_bbq.read,
            design="qa",
        ),
        Reader(
            lm_eval_bbq.NAME,
            "responses",
            "lm-evaluation-harness --log_samples JSONL of a BBQ task (lm-eval's bbq; QA design)",
            lm_eval_bbq.detect,
            lm_eval_bbq.read,
            design="qa",
        ),
        Reader(
            inspect_log.NAME,
            "responses",
            "inspect-ai evaluation log (.eval zip, zstd or deflate; .json)",
            inspect_log.detect,
            inspect_log.read,
            mapping=True,
        ),
        Reader(
            lm_eval.NAME,
            "responses",
            "lm-evaluation-harness --log_samples JSONL, joined with its results JSON",
            lm_eval.detect,
            lm_eval.read,
            mapping=True,
        ),
        Reader(
            openai_batch.NAME,
            "responses",
            "OpenAI Batch output or error JSONL, joined with its input file on custom_id",
            openai_batch.detect,
            openai_batch.read,
            mapping=True,
        ),
        Reader(
            promptfoo.NAME,
            "responses",
            "promptfoo eval results JSON (-o results.json; format versions 2 and 3)",
            promptfoo.detect,
            promptfoo.read,
            mapping=True,
        ),
        Reader(
            helm.NAME,
            "responses",
            "HELM scenario_state.json (benchmark_output/runs/SUITE/RUN/)",
            helm.detect,
            helm.read,
            mapping=True,
        ),
        Reader(
            bbq.NAME,
            "item_bank",
            "BBQ data JSONL, or MAC-Fairness BBQ questions wrapping it (QA design)",
            bbq.detect,
            bbq.read,
            design="qa",
        ),
        Reader(
            implicit_bbq.NAME,
            "item_bank",
            "ImplicitBBQ-style data JSONL (context, question, answers, label, example_id), "
            "joined to the stored BBQ items of the same example_id and category (QA design)",
            implicit_bbq.detect,
            implicit_bbq.read,
            design="qa",
            joins=True,
        ),
        Reader(
            diffaware.NAME,
            "item_bank",
            "MAC-Fairness Difference-Awareness questions (split different / equal; "
            "QA tables, prompt-variance design)",
            diffaware.detect,
            diffaware.read,
            design="qa",
        ),
        Reader(
            qa_itembank.NAME,
            "item_bank",
            "cuegap QA item-bank JSONL (format: cuegap-qa-itembank; ImplicitBBQ style)",
            qa_itembank.detect,
            qa_itembank.read,
            design="qa",
        ),
        Reader(
            bbq_results.NAME,
            "responses",
            "BBQ-style result JSONL (example_id + category or item_id, model_output / "
            "predicted_index), joined to a QA item bank",
            bbq_results.detect,
            bbq_results.read,
            design="qa",
            system=True,
        ),
    )
}


def known_formats() -> str:
    """Comma-separated names of the registered formats, for messages."""
    return ", ".join(FORMAT_NAMES)  # the registry's keys, held equal by a test


def get_reader(name: str) -> Reader:
    """Look up a reader by name.

    Raises
    ------
    ValueError
        When no reader has that name; the message lists the known ones.
    """
    try:
        return READERS[name]
    except KeyError:
        raise ValueError(f"unknown format {name!r}; known formats: {known_formats()}") from None


def detect_reader(path: Path) -> Reader:
    """Find the reader that recognises ``path``.

    Raises
    ------
    FileNotFoundError
        When the path does not exist.
    ValueError
        When no reader recognises it; the message lists the known formats.
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such file or directory")
    for reader in READERS.values():
        if reader.detect(path):
            return reader
    if path.is_file() and not _runner.head(path, 1 << 16).strip():
        raise ValueError(f"{str(path)!r} is empty: nothing to ingest")
    raise ValueError(
        f"No reader recognises {str(path)!r}; known formats: {known_formats()}. "
        "Use --format NAME to force one."
    )


def with_mapping(reader: Reader, mapping: Path | str | Any | None) -> Reader:
    """``reader`` with its ``read`` bound to a mapping (a TOML path or a parsed Mapping).

    Item-bank readers are returned unchanged, so one command can ingest a bank and runner
    files with the same mapping.

    Raises
    ------
    ValueError
        When the reader's format takes no mapping (cuegap's own formats), or the mapping
        file is invalid; FileNotFoundError when it does not exist.
    """
    if mapping is None or reader.kind == "item_bank":
        return reader  # item banks are cuegap's own format: nothing to map
    if not reader.mapping:
        runners = ", ".join(r.name for r in READERS.values() if r.mapping)
        raise ValueError(
            f"a mapping applies to runner formats ({runners}), not to format {reader.name!r}"
        )
    from cuegap.ingest.mapping import as_mapping

    bound = functools.partial(reader.read, mapping=as_mapping(mapping))
    return dataclasses.replace(reader, read=bound)


def run_file(path: Path) -> Path:
    """The file a runner's output folder stands for (HELM: its ``scenario_state.json``),
    else ``path`` itself."""
    state = Path(path) / "scenario_state.json"
    return state if Path(path).is_dir() and helm.detect(state) else Path(path)


def expand_path(path: Path, *, format: str | None = None) -> tuple[list[Path], list[Path]]:
    """What ``cuegap ingest PATH`` ingests: a file, or a folder's files a reader claims.

    A folder that a reader reads as a whole (the seed paper's CSV folder, a HELM run
    folder) is one input. A BBQ-family repository as cloned gives its ``data/`` banks and
    the result files of its other folders (:mod:`cuegap.ingest._bbq_repo`). Any other
    folder gives its files, item banks first (responses need their bank), each group in
    name order; files no reader recognises (a README, ``truth.json`` beside simulated
    data) are skipped and returned for the caller to list.

    Parameters
    ----------
    path : Path
        A file or folder.
    format : str, optional
        A forced format: a folder then gives the files of that format.

    Returns
    -------
    (list of Path, list of Path)
        The inputs to ingest, in order, and the files skipped.

    Raises
    ------
    FileNotFoundError
        When the path does not exist.
    """
    path = run_file(Path(path))
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such file or directory")
    if not path.is_dir() or any(r.detect(path) for r in READERS.values()):
        return [path], []
    if is_bbq_repository(path):  # BBQ or ImplicitBBQ as cloned: data/ and result folders
        return expand_repository(path, _claim, format=format)
    banks: list[Path] = []
    responses: list[Path] = []
    skipped: list[Path] = []
    for child in sorted(path.iterdir()):
        child = run_file(child)
        reader = next((r for r in READERS.values() if r.detect(child)), None)
        if reader is None or (format is not None and reader.name != format):
            if child.is_file() and not child.name.startswith("."):
                skipped.append(child)
            continue
        (banks if reader.kind == "item_bank" else responses).append(child)
    return banks + responses, skipped


def _claim(path: Path) -> Reader | None:
    return next((r for r in READERS.values() if r.detect(path)), None)
