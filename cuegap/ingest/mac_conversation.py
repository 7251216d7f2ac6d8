"""Reader of multi-agent MAC-Fairness transcripts (conversation design, seed 003 §4-5).

MAC-Fairness (stair-lab/mac-fairness, transcript protocols ``2025-12-10`` and
``2025-11-27``, ``schema/{version}/schemas.ts``: ``ConversationSchema``; where they
differ, :mod:`cuegap.ingest._mac_protocol`) writes one JSON file per conversation,
``experiment/{benchmark_subcategory}/{experiment}/transcript/{id}.json``,
and one config snapshot per run (:mod:`cuegap.ingest._conv_snapshot`). This reader takes

* a folder (the workspace, ``experiment/`` or any folder below): every ``.json`` and
  ``.jsonl`` file under it, walked folder by folder in name order, streaming, so that
  millions of files are read in bounded memory (one folder's names at a time); the
  ``bookkeeping`` and ``job_summary`` folders hold no transcripts and are not walked;
* one transcript ``.json`` file, or a ``.jsonl`` file of transcripts (one per line).

Coexistence with the single-agent reader (``mac-fairness-transcript``, 1agent_as-ai
runs): a file is a conversation when its messages come from two or more agents; a
folder when the first transcript under it is one (by its messages, its
``final_answers`` or its snapshot's agents). Inside a folder, a single-agent transcript
is quarantined with that reason.

What a transcript gives: ``transcript_id`` (the natural key), the question id
(``experiment_metadata.question_id``; ``question.question_id`` under 2025-11-27),
``experiment_metadata`` (``benchmark_subcategory``, ``config_snapshot_path``),
``conversation_rounds[].messages[]`` (``agent_id``, ``structured_response.opinion`` and
``rationale``, ``message_metadata.retry_count``) and ``conversation_summary`` (``status``,
``consensus_reached``). Which agent is the identity agent and which the baseline comes from
the run's ``agent_definitions`` (:func:`cuegap.ingest._conv_snapshot.agent_roles`), never
from the speaker ids.

Quarantined, with the reason, never dropped: a file that is not JSON or not a
transcript, a missing field, another protocol version, a missing or unreadable snapshot,
a configuration other than seed 003's two-agent design, a status other than
``succeeded`` (failed or partial conversations, whose retries ran out), missing rounds
(fewer than ``max_rounds``), a round without exactly one opinion of each agent, two
different question ids, and a copy of the configuration (``agent_definitions``,
``identity_reveal_config``, ``conversation_config``: debug-only under 2025-12-10,
always there under 2025-11-27) that disagrees with the snapshot.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from cuegap.ingest._conv_snapshot import ConvSnapshots, SnapshotSettings
from cuegap.ingest._conv_walk import SKIP_DIRS, fingerprint, walk_entries
from cuegap.ingest._guard import clip, depth_rejected, guard_record
from cuegap.ingest._mac_protocol import PROTOCOLS as PROTOCOLS
from cuegap.ingest._mac_protocol import (
    QUESTION_ID,
    missing_reason,
    need,
    question_id,
    rounds_disagree,
    unknown_protocol,
)
from cuegap.ingest._records import REST_OF_FILE, Rejected, ResponseStream, RunInfo
from cuegap.ingest._runner import first_json_lines, json_lines

NAME = "mac-fairness-conversation"
_MAX_DETECT = 8 << 20
_DETECT_ENTRIES = 5_000
_DETECT_FILES = 20


@dataclass(slots=True)
class ConvRecord:
    """One readable two-agent transcript."""

    line: int
    raw: str
    source_file: str | None
    transcript_id: str
    question_id: str
    status: str
    rounds: int
    consensus: bool | None
    retries: int
    settings: SnapshotSettings
    #: (round, role, agent_id, opinion, rationale, retry_count) per agent and round
    opinions: list[tuple[int, str, str, str, str | None, int]] = field(default_factory=list)


def _is_transcript(obj: Any) -> bool:
    return isinstance(obj, dict) and {"transcript_id", "conversation_rounds"} <= set(obj)


def message_agents(obj: dict[str, Any]) -> set[str]:
    """The agent ids a transcript's messages (or final answers) come from."""
    ids: set[str] = set()
    rounds = obj.get("conversation_rounds")
    for rnd in rounds if isinstance(rounds, list) else []:  # wrong types: no agents
        msgs = rnd.get("messages") if isinstance(rnd, dict) else None
        for msg in msgs if isinstance(msgs, list) else []:
            if isinstance(msg, dict) and isinstance(msg.get("agent_id"), str):
                ids.add(msg["agent_id"])
    summary = obj.get("conversation_summary")
    final = summary.get("final_answers") if isinstance(summary, dict) else None
    if isinstance(final, dict):
        ids.update(k for k in final if isinstance(k, str))
    return ids


def _load(path: Path) -> Any:
    try:
        if path.suffix.lower() == ".jsonl":
            return next(iter(first_json_lines(path, 1)), None)
        if path.stat().st_size > _MAX_DETECT:
            return None
        return orjson.loads(path.read_bytes())
    except (orjson.JSONDecodeError, OSError):
        return None


def _first_transcript(root: Path) -> tuple[Path, dict[str, Any]] | None:
    """The first transcript of the walk, looking at a bounded number of entries and files
    (a ``notes.json`` before it does not hide it)."""
    seen = opened = 0
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS)
        for name in sorted(files):
            seen += 1
            if name.lower().endswith((".json", ".jsonl")):
                opened += 1
                obj = _load(Path(folder) / name)
                if _is_transcript(obj):
                    return Path(folder) / name, obj
                if opened >= _DETECT_FILES:
                    return None
        seen += len(dirs)
        if seen > _DETECT_ENTRIES:
            return None
    return None


def detect(path: Path) -> bool:
    """True for a folder whose first transcript is a conversation, or a transcript file
    (``.json``, or ``.jsonl`` by its first line) whose messages come from 2+ agents."""
    path = Path(path)
    if path.is_dir():
        found = _first_transcript(path)
        if found is None:
            return False
        first, obj = found
        if len(message_agents(obj)) >= 2:
            return True
        snap = (obj.get("experiment_metadata") or {}).get("config_snapshot_path")
        got = ConvSnapshots().get(snap, first) if isinstance(snap, str) else None
        return isinstance(got, SnapshotSettings)
    if not path.is_file() or path.suffix.lower() not in (".json", ".jsonl"):
        return False
    obj = _load(path)
    return _is_transcript(obj) and len(message_agents(obj)) >= 2


RETRY_MAX = 2**31 - 1
"""Largest ``retry_count`` kept (a 32-bit integer column on PostgreSQL)."""


def _retries(msg: dict[str, Any], r: int, agent: str) -> int | tuple[str, str]:
    """A message's ``message_metadata.retry_count`` (0 when absent), or (field, reason)."""
    meta = msg.get("message_metadata")
    if meta is not None and not isinstance(meta, dict):
        return (
            "message_metadata",
            f"round {r}: field 'message_metadata' of {agent} is not an object",
        )
    retry = (meta or {}).get("retry_count")
    if retry is None:
        return 0
    if isinstance(retry, bool) or not isinstance(retry, int) or not 0 <= retry <= RETRY_MAX:
        return "retry_count", (
            f"round {r}: field 'retry_count' of {agent} is not a count from 0 to {RETRY_MAX} "
            f"({clip(repr(retry), 40)})"
        )
    return retry


def _opinions(
    rounds: Any, want: int, roles: dict[str, str]
) -> list[tuple[Any, ...]] | str | tuple[str, str]:
    """Each agent's opinion per round (``roles``: agent id -> role, identity first), or why
    the rounds cannot be read (with the field, when it is not ``conversation_rounds``)."""
    if not isinstance(rounds, list):
        return "conversation_rounds is not a list"
    if len(rounds) < want:
        return f"missing rounds: {len(rounds)} of the configuration's {want}"
    if len(rounds) > want:
        return f"{len(rounds)} rounds; the configuration has max_rounds {want}"
    out: list[tuple[Any, ...]] = []
    for r, rnd in enumerate(rounds):
        if not isinstance(rnd, dict) or rnd.get("round_id") != r:
            return f"conversation_rounds[{r}] is not round {r}"
        if not isinstance(rnd.get("messages") or [], list):
            return f"conversation_rounds[{r}].messages is not a list"
        msgs = [m for m in rnd.get("messages") or [] if isinstance(m, dict)]
        for agent, role in roles.items():
            mine = [m for m in msgs if m.get("agent_id") == agent]
            if len(mine) != 1:
                return f"round {r}: {len(mine)} messages of {agent}; expected one"
            resp = mine[0].get("structured_response")
            if not isinstance(resp, dict) or resp.get("response_type") != "participant":
                return f"round {r}: the message of {agent} is not a participant response"
            opinion = resp.get("opinion")
            if not isinstance(opinion, str) or not opinion.strip():
                return f"round {r}: {agent} gave no opinion"
            if len(opinion.strip()) > 100:
                return f"round {r}: the opinion of {agent} is longer than 100 characters"
            why = isinstance(resp.get("rationale"), str) or resp.get("rationale") is None
            if not why:
                return f"round {r}: the rationale of {agent} is not text"
            retry = _retries(mine[0], r, agent)
            if isinstance(retry, tuple):
                return retry
            out.append((r, role, agent, opinion.strip(), resp.get("rationale"), retry))
        others = {m.get("agent_id") for m in msgs} - set(roles)
        if others:
            return (
                f"round {r}: a message of {sorted(map(str, others))[0]}, not in the configuration"
            )
    return out


def record(
    obj: Any, line: int, raw: str, where: Path | str, snaps: ConvSnapshots, source: str | None
) -> ConvRecord | Rejected:
    """One transcript as a :class:`ConvRecord`, or why it cannot be one."""
    tag = f"{source}: " if source else ""

    def reject(reason: str, fld: str | None = None) -> Rejected:
        return Rejected(line, raw, tag + reason, fld)

    if not _is_transcript(obj):
        return reject("not a MAC-Fairness transcript (no transcript_id / conversation_rounds)")
    proto = None
    try:
        tid, proto = need(obj, "transcript_id"), need(obj, "protocol_version")
        if why := unknown_protocol(proto):
            return reject(why, "protocol_version")
        qid = question_id(obj, proto)
        sub = need(obj, "experiment_metadata.benchmark_subcategory")
        snap_name = need(obj, "experiment_metadata.config_snapshot_path")
        status = need(obj, "conversation_summary.status")
    except KeyError as exc:
        return reject(missing_reason(exc.args[0], proto), exc.args[0])
    except ValueError as exc:
        return reject(str(exc), QUESTION_ID[proto])
    for fld, value, limit in (("transcript_id", tid, 64), (QUESTION_ID[proto], qid, 200)):
        if not isinstance(value, str) or not value.strip() or len(value) > limit:
            return reject(f"field {fld!r} must be a non-empty string of at most {limit}", fld)
    if not isinstance(snap_name, str):
        return reject("config_snapshot_path must be a string", "config_snapshot_path")
    settings = snaps.get(snap_name, where)
    if isinstance(settings, str):
        return reject(settings, "experiment_metadata.config_snapshot_path")
    if sub != settings.subcategory:
        return reject(
            f"benchmark_subcategory {sub!r} disagrees with the config snapshot's "
            f"{settings.subcategory!r}",
            "benchmark_subcategory",
        )
    for debug in ("agent_definitions", "identity_reveal_config"):
        own = obj.get(debug)
        if own is not None and own != settings.snapshot.get(debug):
            return reject(f"{debug} disagrees with the config snapshot's", debug)
    if rounds_disagree(
        obj.get("conversation_config"), settings.snapshot.get("conversation_config")
    ):
        return reject(
            "conversation_config disagrees with the config snapshot's", "conversation_config"
        )
    if status != "succeeded":
        info = (obj.get("conversation_summary") or {}).get("error_info") or {}
        detail = info.get("message") if isinstance(info, dict) else None
        more = f": {detail}" if isinstance(detail, str) and detail else ""
        return reject(f"conversation status {status!r}, not 'succeeded'{more}", "status")
    ops = _opinions(obj.get("conversation_rounds"), settings.max_rounds, settings.roles)
    if isinstance(ops, str):
        return reject(ops, "conversation_rounds")
    if isinstance(ops, tuple):
        return reject(ops[1], ops[0])
    consensus = obj["conversation_summary"].get("consensus_reached")
    return ConvRecord(
        line=line,
        raw=raw,
        source_file=source,
        transcript_id=tid.strip(),
        question_id=qid.strip(),
        status=status,
        rounds=settings.max_rounds,
        consensus=consensus if isinstance(consensus, bool) else None,
        retries=sum(o[5] for o in ops),
        settings=settings,
        opinions=ops,  # type: ignore[arg-type]
    )


def read(path: Path, *, total: int | None = None) -> ResponseStream:
    """Stream the transcripts of a folder or file (see the module docstring).

    Returns
    -------
    ResponseStream
        Records are :class:`ConvRecord` or :class:`~cuegap.ingest.Rejected`; ``line`` is
        the transcript's position in the walk (1-based; for a ``.jsonl`` inside a folder,
        each line counts), or its line in a lone ``.jsonl``; ``position`` the bytes read so
        far, of ``total`` (the folder's size, from :func:`fingerprint` when not given).
    """
    path = Path(path)
    snaps = ConvSnapshots()
    is_dir = path.is_dir()
    if total is None:
        total = fingerprint(path)[1] if is_dir else path.stat().st_size
    done = [0]

    def one_file(f: str, source: str | None, first: int) -> Iterator[ConvRecord | Rejected]:
        tag = f"{source}: " if source else ""
        try:
            fh = open(f, "rb")  # noqa: SIM115 - closed below; a failed open is quarantined
        except OSError as exc:
            why = f"{tag}cannot be read: {exc.strerror or type(exc).__name__}"
            yield Rejected(first, "", why, None if is_dir else REST_OF_FILE)
            return
        with fh:
            if not f.lower().endswith(".jsonl"):
                data = fh.read()
                done[0] += len(data)
                text = data.decode("utf-8", "replace")
                try:
                    obj = orjson.loads(data)
                except orjson.JSONDecodeError as exc:
                    why = f"{tag}not JSON: {exc}"
                    yield Rejected(first, text, why, None if is_dir else REST_OF_FILE)
                    return
                deep = depth_rejected(obj, first, text[:10_000], "transcript")
                yield deep or guard_record(first, text, record, obj, first, text, f, snaps, source)
                return
            for k, entry in enumerate(json_lines(fh)):
                # In a folder a record's number is its place in the walk; alone, its line.
                if isinstance(entry, Rejected):
                    entry.line = first + k if is_dir else entry.line
                    entry.reason = tag + entry.reason
                    yield entry
                    continue
                line = first + k if is_dir else entry[0]
                obj, text = entry[2], entry[1]
                yield guard_record(line, text, record, obj, line, text, f, snaps, source)
            done[0] += fh.tell()

    def records() -> Iterator[ConvRecord | Rejected]:
        n = 1
        files = ((f, rel) for f, rel, _e in walk_entries(path)) if is_dir else [(str(path), None)]
        for f, source in files:
            for rec in one_file(f, source, n):
                n += 1
                yield rec

    run = RunInfo(runner="mac-fairness")
    return ResponseStream(run=run, records=records(), position=lambda: done[0], total=total)  # type: ignore[arg-type]
