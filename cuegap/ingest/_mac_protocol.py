"""Where MAC-Fairness transcript protocols keep the fields both MAC-Fairness readers need.

stair-lab/mac-fairness publishes two transcript protocols (``schema/{version}/schemas.ts``,
``ConversationSchema``); its ``schema/index.json`` says older transcripts stay valid
under the ``protocol_version`` they name. What differs for our readers:

==============================  ===============================  ===============================
field                           ``2025-11-27``                   ``2025-12-10``
==============================  ===============================  ===============================
question id                     ``question.question_id`` (the    ``experiment_metadata.
                                full question object, required)  question_id`` (required)
``question``                    required                         debug only (optional)
``conversation_config``,        required copies of the run's     debug only (optional)
``identity_reveal_config``,     config
``agent_definitions``
``prompt_template_config``      absent: the prompt format was    debug only (optional);
                                not configurable, so the         ``for_participant`` factors
                                snapshot is the only source      also in the snapshot
==============================  ===============================  ===============================

Everything else both readers use is the same in both: ``transcript_id``,
``protocol_version``, ``experiment_metadata`` (``experiment_name``,
``benchmark_subcategory``, ``config_snapshot_path``), ``conversation_rounds[].messages[]``
(``agent_id``, ``structured_response`` with ``response_type`` / ``opinion`` /
``rationale``, ``message_metadata.retry_count``) and ``conversation_summary``
(``status`` in succeeded / partial / failed, ``final_answers``, ``consensus_reached``).
An earlier revision of the 2025-11-27 schema named the copies ``routing_config`` and
``agents``; the readers take the configuration from the snapshot and do not read them.
"""

from __future__ import annotations

from typing import Any

#: Transcript protocol versions the MAC-Fairness readers read.
PROTOCOLS = ("2025-11-27", "2025-12-10")
#: Where each protocol keeps the question id (dotted path).
QUESTION_ID = {
    "2025-11-27": "question.question_id",
    "2025-12-10": "experiment_metadata.question_id",
}


def need(obj: Any, dotted: str) -> Any:
    """The value at a dotted path of a transcript; ``KeyError(dotted)`` when missing."""
    cur: Any = obj
    for part in dotted.split("."):
        if not isinstance(cur, dict) or part not in cur:
            raise KeyError(dotted)
        cur = cur[part]
    return cur


def unknown_protocol(proto: Any) -> str | None:
    """Why a ``protocol_version`` cannot be read, or None when it can."""
    if proto in PROTOCOLS:
        return None
    return f"protocol_version {proto!r}; readable: {', '.join(PROTOCOLS)}"


def question_id(obj: dict[str, Any], proto: str) -> Any:
    """The question id where protocol ``proto`` keeps it.

    Raises
    ------
    KeyError
        With the dotted path the protocol keeps it at, when it is missing there.
    ValueError
        When the transcript names a second, different question id in the other place
        (a 2025-12-10 debug ``question`` object, or a 2025-11-27 transcript that also has
        ``experiment_metadata.question_id``).
    """
    where = QUESTION_ID[proto]
    qid = need(obj, where)
    other = next(p for p in QUESTION_ID.values() if p != where)
    try:
        second = need(obj, other)
    except KeyError:
        return qid
    if second != qid:
        raise ValueError(f"{where} {qid!r} disagrees with {other} {second!r}")
    return qid


def missing_reason(dotted: str, proto: str) -> str:
    """The reason for a missing field, saying where the protocol keeps the question id."""
    if dotted == QUESTION_ID.get(proto):
        return f"field {dotted!r} is missing (protocol {proto} keeps the question id there)"
    return f"field {dotted!r} is missing"


def rounds_disagree(own: Any, snapshot: Any) -> bool:
    """True when a transcript's copy of ``conversation_config`` differs from the
    snapshot's on a key it records (the transcript copies routing strategy and rounds)."""
    if not isinstance(own, dict):
        return False
    snap = snapshot if isinstance(snapshot, dict) else {}
    return any(snap.get(k) != v for k, v in own.items())


def early_layout(cfg: Any) -> bool:
    """True for a config of MAC-Fairness's early layout (an ``experiment`` section with
    ``agents``, ``as_human`` and a ``shared_model_backbone``; no ``agent_definitions``)."""
    return (
        isinstance(cfg, dict)
        and "agent_definitions" not in cfg
        and isinstance(cfg.get("experiment"), dict)
    )


def early_layout_reason(where: str) -> str:
    """Why an early-layout config snapshot is not read."""
    return (
        f"config snapshot {where!r} has MAC-Fairness's early layout (an 'experiment' "
        "section, no agent_definitions or model_definitions): its agents and system are "
        "not read"
    )
