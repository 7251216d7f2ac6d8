"""Reader of single-agent MAC-Fairness transcripts (prompt-variance design, seed 003 §3).

MAC-Fairness (stair-lab/mac-fairness, transcript protocols ``2025-12-10`` and
``2025-11-27``, ``schema/{version}/schemas.ts``: ``ConversationSchema``; where they
differ, :mod:`cuegap.ingest._mac_protocol`) writes one JSON file per conversation,
``experiment/{benchmark}/{experiment}/transcript/{transcript_id}.json``.
Seed 003's Section 3 uses the ``1agent_as-ai`` configuration with one round: one system,
presented as an AI assistant, answers one question with one opinion letter. A file may
also hold many transcripts, one compact JSON object per line (``.jsonl``), the bulk form.

What a transcript gives
-----------------------
=============================================  ==========================================
transcript                                     cuegap
=============================================  ==========================================
``experiment_metadata.question_id``            the item (joined on a QA bank's source id:
(2025-11-27: ``question.question_id``)         the ``bbq`` and ``diffaware`` readers keep
                                               MAC-Fairness question ids there)
round 0, the one message's                     the answer: a choice id (``A``) is taken as
``structured_response.opinion``                the chosen label; any other text is parsed
``question.correct_answer_id`` (when there)    checked against the bank's gold option
``transcript_id``                              ``sample_id``
``experiment_metadata.experiment_name``        the replicate: its leading
                                               ``{runtime.timestamp}`` (``YYYYMMDDTHHmmZ``,
                                               one per ``--rep``) in minutes since
                                               2020-01-01 UTC; 0 when it has none
=============================================  ==========================================

The config snapshot
-------------------
``experiment_metadata.config_snapshot_path`` names the YAML snapshot of the run's config
(``bookkeeping/config_snapshot/{benchmark}/{experiment}_{timestamp}.yaml``, possibly
prefixed ``$MAC_FAIRNESS_WORKSPACE/``); it is looked for relative to each folder above
the transcript, nearest first. From it come the system (``model_definitions[agent.model]``
``model_path``, or ``model_name``), the check that the run is ``1agent_as-ai`` (one
agent, role ``participant``, ``if_as_human`` false, ``max_rounds`` 1) and the factors:
``prompt_template_config.for_participant.choice_display_format`` as ``choice_format``
and ``json_field_order`` as ``field_order``.

A 2025-11-27 transcript records no prompt format (MAC-Fairness's prompt was not
configurable then): its factors come from the snapshot alone, and a snapshot without
``prompt_template_config.for_participant`` quarantines it rather than guessing.

Every transcript is stored or quarantined with its reason (a failed conversation
without an opinion, another configuration, a missing snapshot, another protocol version,
two different question ids, a transcript whose own copy of the prompt or conversation
config disagrees with the snapshot, ...).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
import yaml

from cuegap.ingest._guard import depth_rejected, guard_record
from cuegap.ingest._mac_protocol import PROTOCOLS as PROTOCOLS
from cuegap.ingest._mac_protocol import (
    QUESTION_ID,
    early_layout,
    early_layout_reason,
    missing_reason,
    need,
    question_id,
    rounds_disagree,
    unknown_protocol,
)
from cuegap.ingest._records import REST_OF_FILE, Rejected, ResponseStream, RunInfo
from cuegap.ingest._runner import first_json_lines, json_lines
from cuegap.ingest.bbq_results import QARecord

NAME = "mac-fairness-transcript"
FACTORS = {"choice_display_format": "choice_format", "json_field_order": "field_order"}
_STAMP = re.compile(r"^(\d{8}T\d{4})Z")
_EPOCH = datetime(2020, 1, 1, tzinfo=UTC)
_MAX_DETECT = 8 << 20


def _is_transcript(obj: Any) -> bool:
    """A transcript whose messages do not come from two or more agents (those are the
    conversation design's: :mod:`cuegap.ingest.mac_conversation`)."""
    if not (isinstance(obj, dict) and {"transcript_id", "conversation_rounds"} <= set(obj)):
        return False
    from cuegap.ingest.mac_conversation import message_agents

    return len(message_agents(obj)) < 2


def detect(path: Path) -> bool:
    """True for a transcript JSON file, or a JSONL file whose first line is a transcript."""
    if not path.is_file():
        return False
    suffix = path.suffix.lower()
    if suffix == ".jsonl":
        return any(_is_transcript(o) for o in first_json_lines(path, 1))
    if suffix != ".json" or path.stat().st_size > _MAX_DETECT:
        return False
    try:
        return _is_transcript(orjson.loads(path.read_bytes()))
    except (orjson.JSONDecodeError, OSError):
        return False


def replicate_of(experiment_name: str) -> int:
    """The replicate index of an experiment name (see the module docstring)."""
    m = _STAMP.match(experiment_name)
    if m is None:
        return 0
    when = datetime.strptime(m.group(1), "%Y%m%dT%H%M").replace(tzinfo=UTC)
    return max(0, int((when - _EPOCH).total_seconds() // 60))


class _Snapshots:
    """Config snapshots, loaded once each, found relative to the transcript's folders."""

    def __init__(self, path: Path) -> None:
        self.roots = list(Path(path).resolve().parents)
        self.cache: dict[str, dict[str, Any] | str] = {}

    def get(self, name: str) -> dict[str, Any] | str:
        """The snapshot's settings, or why they cannot be had."""
        if name not in self.cache:
            self.cache[name] = self._load(name)
        return self.cache[name]

    def _load(self, name: str) -> dict[str, Any] | str:
        rel = re.sub(r"^\$\{?\w+\}?/", "", name)
        tries = [Path(rel)] if Path(rel).is_absolute() else [r / rel for r in self.roots]
        try:
            found = next((p for p in tries if p.is_file()), None)
        except OSError as exc:  # a name too long for the file system, say
            return f"config snapshot {name[:200]!r} cannot be looked up: {exc.strerror}"
        if found is None:
            return f"config snapshot {name!r} not found in any folder above the transcript"
        try:
            cfg = yaml.safe_load(found.read_text(encoding="utf-8"))
        except (yaml.YAMLError, UnicodeDecodeError, OSError) as exc:
            return f"config snapshot {str(found)!r} is not YAML: {str(exc).splitlines()[0]}"
        return _settings(cfg, str(found))


def _settings(cfg: Any, where: str) -> dict[str, Any] | str:
    """System, factors and configuration checks from a config snapshot, or why not."""
    if not isinstance(cfg, dict):
        return f"config snapshot {where!r}: expected a mapping"
    if early_layout(cfg):
        return early_layout_reason(where)
    agents = cfg.get("agent_definitions")
    rounds = (cfg.get("conversation_config") or {}).get("max_rounds")
    if not isinstance(agents, list) or len(agents) != 1 or not isinstance(agents[0], dict):
        n = len(agents) if isinstance(agents, list) else 0
        return f"config snapshot {where!r}: {n} agents; the 1agent_as-ai configuration has 1"
    agent = agents[0]
    if agent.get("role") != "participant" or agent.get("if_as_human") is not False:
        return (
            f"config snapshot {where!r}: agent_definitions[0] is not an AI participant "
            f"(role {agent.get('role')!r}, if_as_human {agent.get('if_as_human')!r})"
        )
    if rounds != 1:
        return f"config snapshot {where!r}: conversation_config.max_rounds is {rounds!r}, not 1"
    model = agent.get("model")
    mdef = (cfg.get("model_definitions") or {}).get(model) or {}
    system = mdef.get("model_path") or mdef.get("model_name") or model
    if not isinstance(system, str) or not system.strip():
        return f"config snapshot {where!r}: no model for agent_definitions[0].model"
    part = ((cfg.get("prompt_template_config") or {}).get("for_participant")) or {}
    factors = {}
    for key, name in FACTORS.items():
        if not isinstance(part.get(key), str):
            return (
                f"config snapshot {where!r}: prompt_template_config.for_participant.{key} "
                "is missing, so its prompt-variance factor is unknown"
            )
        factors[name] = part[key]
    conv = cfg.get("conversation_config")
    return {"system": system.strip(), "factors": factors, "prompt": part, "conversation": conv}


def record(obj: Any, line: int, raw: str, snaps: _Snapshots) -> QARecord | Rejected:
    """One transcript as a :class:`QARecord`, or why it cannot be one."""
    if not isinstance(obj, dict):
        return Rejected(line, raw, f"expected a transcript object, got {type(obj).__name__}")
    proto = None
    try:
        tid, proto = need(obj, "transcript_id"), need(obj, "protocol_version")
        if why := unknown_protocol(proto):
            return Rejected(line, raw, why, "protocol_version")
        name = need(obj, "experiment_metadata.experiment_name")
        qid = question_id(obj, proto)
        snap_name = need(obj, "experiment_metadata.config_snapshot_path")
        rounds = need(obj, "conversation_rounds")
        status = need(obj, "conversation_summary.status")
    except KeyError as exc:
        fld = exc.args[0]
        return Rejected(line, raw, missing_reason(fld, proto), fld)
    except ValueError as exc:
        return Rejected(line, raw, str(exc), QUESTION_ID[proto])
    qfield = QUESTION_ID[proto]
    for fld, value in ((qfield, qid), ("transcript_id", tid)):
        if not isinstance(value, str) or not value:
            return Rejected(line, raw, f"field {fld!r} must be a non-empty string", fld)
    if not isinstance(name, str) or not isinstance(snap_name, str):
        return Rejected(line, raw, "experiment_name and config_snapshot_path must be strings")
    settings = snaps.get(snap_name)
    if isinstance(settings, str):
        if proto == "2025-11-27" and "prompt_template_config" in settings:
            settings += f"; protocol {proto} transcripts record no prompt format either"
        return Rejected(line, raw, settings, "experiment_metadata.config_snapshot_path")
    if rounds_disagree(obj.get("conversation_config"), settings["conversation"]):
        return Rejected(
            line, raw, "conversation_config disagrees with the config snapshot's",
            "conversation_config",
        )  # fmt: skip
    own = (obj.get("prompt_template_config") or {}).get("for_participant")
    if own is not None and own != settings["prompt"]:
        return Rejected(
            line, raw, "prompt_template_config disagrees with the config snapshot's",
            "prompt_template_config",
        )  # fmt: skip
    if not isinstance(rounds, list):
        rounds = []
    msgs = [m for r in rounds if isinstance(r, dict) for m in r.get("messages") or []]
    if len(rounds) != 1 or len(msgs) != 1:
        return Rejected(
            line, raw,
            f"conversation status {status!r} with {len(msgs)} messages in "
            f"{len(rounds)} rounds; a 1agent_as-ai "
            "transcript has one round with one opinion",
            "conversation_rounds",
        )  # fmt: skip
    resp = msgs[0].get("structured_response") if isinstance(msgs[0], dict) else None
    opinion = resp.get("opinion") if isinstance(resp, dict) else None
    if not isinstance(resp, dict) or resp.get("response_type") != "participant":
        why = "the message is not a participant response"
        return Rejected(line, raw, why, "structured_response")
    if not isinstance(opinion, str) or not opinion.strip():
        return Rejected(line, raw, "the participant response has no opinion", "opinion")
    gold = (obj.get("question") or {}).get("correct_answer_id")
    letter = opinion.strip()
    return QARecord(
        line=line,
        raw=raw,
        system=settings["system"],
        response=opinion,
        question_id=qid,
        predicted_label=letter if re.fullmatch(r"[A-Z]", letter) else None,
        gold=gold if isinstance(gold, str) else None,
        factors=dict(settings["factors"]),
        repeat=replicate_of(name),
        sample_id=tid,
    )


def read(path: Path) -> ResponseStream:
    """Stream the transcripts of a file (one ``.json`` transcript, or ``.jsonl``).

    Returns
    -------
    ResponseStream
        Records are :class:`~cuegap.ingest.bbq_results.QARecord` or
        :class:`~cuegap.ingest.Rejected` (one per transcript).
    """
    path = Path(path)
    snaps = _Snapshots(path)
    total = path.stat().st_size
    fh = path.open("rb")

    def records() -> Iterator[QARecord | Rejected]:
        with fh:
            if path.suffix.lower() != ".jsonl":
                data = fh.read()
                text = data.decode("utf-8", "replace")
                try:
                    obj = orjson.loads(data)
                except orjson.JSONDecodeError as exc:
                    yield Rejected(1, text, f"not JSON: {exc}", REST_OF_FILE)
                    return
                deep = depth_rejected(obj, 1, text[:10_000], "transcript")
                yield deep or guard_record(
                    1, text, record, obj, 1, orjson.dumps(obj).decode(), snaps
                )
                return
            for entry in json_lines(fh):
                if isinstance(entry, Rejected):
                    yield entry
                    continue
                line, text, obj = entry
                yield guard_record(line, text, record, obj, line, text, snaps)

    def position() -> int:
        return total if fh.closed else fh.tell()

    run = RunInfo(runner="mac-fairness")
    return ResponseStream(run=run, records=records(), position=position, total=total)  # type: ignore[arg-type]
