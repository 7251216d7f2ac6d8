"""MAC-Fairness config snapshots of two-agent runs: found, loaded once, checked.

Outside debug mode a transcript does not record its agents' configuration: it names the
YAML snapshot of the resolved run config (``experiment_metadata.config_snapshot_path``,
``bookkeeping/config_snapshot/{benchmark_subcategory}/{experiment}_{timestamp}.yaml``,
possibly prefixed ``$MAC_FAIRNESS_WORKSPACE/``). It is looked for relative to each folder
above the transcript, nearest first, as the single-agent reader does
(:mod:`cuegap.ingest.mac_transcript`).

From a snapshot come the system (``model_definitions[agent.model]``: ``model_path``, or
``model_name``), the benchmark (the folder under ``data/`` of
``experiment_metadata.questions_file``) and category (``benchmark_subcategory`` without
its benchmark prefix and ``_sampled`` suffix), the agents, the identity agent's
demographics, persona and instantiation (``if_as_human``), the reveal condition
(``identity_reveal_config``: ``revealed`` when its three switches are true,
``anonymous`` when all false, else ``partial``, as MAC-Fairness's
``script/consolidate_2agent.py`` reads them) and ``conversation_config.max_rounds``.
Seed 003's design is checked: two participants of the same system, one of them the
baseline (null demographics, null persona, ``if_as_human`` false: an AI instantiation)
and the other the identity agent.

**Roles come from the configuration, never from the speaker ids** (which the schema leaves
free: ``spkr_001`` and ``spkr_002`` are as valid as ``spkr_000`` and ``spkr_001``). The
baseline is the agent that looks like one; when both do (an identity agent with no
demographics or persona, as an AI), the order of ``agent_definitions`` decides, as
MAC-Fairness writes it: the first agent is the identity agent, whose demographics, persona
and ``if_as_human`` its grids sweep (``agent_definitions.0.*``), the second the fixed
"vanilla" baseline. When neither looks like a baseline the roles cannot be told apart,
and the run's transcripts are quarantined with that reason.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import yaml

from cuegap.ingest._mac_protocol import early_layout, early_layout_reason

_AGENT_ID_MAX = 20  # conv_agent.agent_id
#: libyaml's safe loader when PyYAML has it (about ten times faster), else the pure one.
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_PREFIXES = {
    "bbq_": "BBQ",
    "diffaware_": "DifferenceAwareness",
    "diff_aware_": "DifferenceAwareness",
    "discrimeval_": "DiscrimEval",
    "discrim_eval_": "DiscrimEval",
}


@dataclass(slots=True)
class SnapshotSettings:
    """What a two-agent config snapshot says about its conversations."""

    config_key: str
    path: str
    system: str
    experiment_name: str
    subcategory: str
    benchmark: str
    category: str
    demographics: str | None
    persona: str | None
    instantiation: str
    reveal: str
    switches: tuple[bool, bool, bool]
    max_rounds: int
    routing_strategy: str | None
    agents: list[dict[str, Any]] = field(default_factory=list)
    snapshot: dict[str, Any] = field(default_factory=dict)
    #: agent_id -> ``identity`` or ``baseline``, identity first
    roles: dict[str, str] = field(default_factory=dict)


def _category(sub: str) -> tuple[str | None, str]:
    low = sub.lower()
    bench = next((b for p, b in _PREFIXES.items() if low.startswith(p)), None)
    cat = sub
    if bench is not None:
        cat = sub[next(len(p) for p in _PREFIXES if low.startswith(p)) :]
    return bench, cat.removesuffix("_sampled") or sub


def _text(value: Any) -> str | None:
    """A demographic / persona value: None for null (or blank), else the stripped text."""
    if value is None:
        return None
    text = str(value).strip()
    return text or None


def _looks_baseline(agent: dict[str, Any]) -> bool:
    """No demographics, no persona and an AI instantiation (``if_as_human`` not true)."""
    return not (_text(agent.get("demographics")) or _text(agent.get("persona"))) and (
        agent.get("if_as_human") is not True
    )


def agent_roles(agents: list[dict[str, Any]], where: str) -> tuple[int, int] | str:
    """The positions of the identity and the baseline agent in ``agent_definitions``, or
    why they cannot be told apart (see the module docstring)."""
    ids = [a.get("agent_id") for a in agents]
    for i, aid in enumerate(ids):
        if not isinstance(aid, str) or not aid.strip() or len(aid) > _AGENT_ID_MAX:
            return (
                f"config snapshot {where!r}: agent_definitions[{i}].agent_id must be a "
                f"non-empty string of at most {_AGENT_ID_MAX} characters"
            )
    if ids[0] == ids[1]:
        return f"config snapshot {where!r}: both agents have agent_id {ids[0]!r}"
    first, second = (_looks_baseline(a) for a in agents)
    if first and not second:
        return 1, 0
    if second:  # the second alone, or both alike: the order decides, as MAC-Fairness writes
        return 0, 1
    return (
        f"config snapshot {where!r}: cannot tell the identity agent from the baseline: "
        f"neither {ids[0]!r} nor {ids[1]!r} has null demographics, null persona and "
        "if_as_human false (the baseline agent of seed 003's two-agent design)"
    )


def conv_settings(cfg: Any, where: str) -> SnapshotSettings | str:
    """Settings of a two-agent snapshot, or why its conversations cannot be read."""
    if not isinstance(cfg, dict):
        return f"config snapshot {where!r}: expected a mapping"
    if early_layout(cfg):
        return early_layout_reason(where)
    agents = cfg.get("agent_definitions")
    if not isinstance(agents, list) or not all(isinstance(a, dict) for a in agents):
        return f"config snapshot {where!r}: agent_definitions is missing"
    if len(agents) == 1:
        return (
            f"config snapshot {where!r} has 1 agent: a single-agent transcript; ingest it "
            "with --format mac-fairness-transcript"
        )
    if len(agents) != 2:
        return (
            f"config snapshot {where!r}: {len(agents)} agents; the conversation design reads "
            "two-agent runs (an identity agent and a baseline)"
        )
    if any(a.get("role") != "participant" for a in agents):
        return f"config snapshot {where!r}: both agents must have role 'participant'"
    found = agent_roles(agents, where)
    if isinstance(found, str):
        return found
    iden, base = agents[found[0]], agents[found[1]]
    iden_id = iden["agent_id"]
    if not isinstance(iden.get("if_as_human"), bool):
        return f"config snapshot {where!r}: {iden_id}.if_as_human must be true or false"
    if iden.get("model") != base.get("model"):
        return f"config snapshot {where!r}: the two agents use different models"
    mdef = (cfg.get("model_definitions") or {}).get(iden.get("model")) or {}
    system = mdef.get("model_path") or mdef.get("model_name") or iden.get("model")
    if not isinstance(system, str) or not system.strip():
        return f"config snapshot {where!r}: no model for {iden_id}.model"
    meta = cfg.get("experiment_metadata") or {}
    sub, name = meta.get("benchmark_subcategory"), meta.get("experiment_name")
    if not isinstance(sub, str) or not sub or not isinstance(name, str):
        return f"config snapshot {where!r}: experiment_metadata is incomplete"
    bench, category = _category(sub)
    qfile = meta.get("questions_file")
    if isinstance(qfile, str) and (m := re.search(r"(?:^|/)data/([^/]+)/", qfile)):
        bench = m.group(1)
    if bench is None:
        return f"config snapshot {where!r}: cannot tell the benchmark of {sub!r}"
    rc = cfg.get("identity_reveal_config")
    keys = ("reveal_persona", "reveal_demographics", "reveal_presence_mode")
    if not isinstance(rc, dict) or not all(isinstance(rc.get(k), bool) for k in keys):
        return f"config snapshot {where!r}: identity_reveal_config needs {', '.join(keys)}"
    switches = tuple(bool(rc[k]) for k in keys)
    reveal = "revealed" if all(switches) else "anonymous" if not any(switches) else "partial"
    conv = cfg.get("conversation_config") or {}
    rounds = conv.get("max_rounds")
    if not isinstance(rounds, int) or isinstance(rounds, bool) or rounds < 1:
        return f"config snapshot {where!r}: conversation_config.max_rounds must be >= 1"
    key = hashlib.sha256(orjson.dumps(cfg, option=orjson.OPT_SORT_KEYS, default=str))
    return SnapshotSettings(
        config_key=key.hexdigest(),
        path=where,
        system=system.strip(),
        experiment_name=name,
        subcategory=sub,
        benchmark=bench,
        category=category,
        demographics=_text(iden.get("demographics")),
        persona=_text(iden.get("persona")),
        instantiation="human" if iden["if_as_human"] else "ai",
        reveal=reveal,
        switches=switches,  # type: ignore[arg-type]
        max_rounds=rounds,
        routing_strategy=conv.get("routing_strategy"),
        agents=agents,
        snapshot=cfg,
        roles={iden_id: "identity", base["agent_id"]: "baseline"},
    )


class ConvSnapshots:
    """Config snapshots found relative to a transcript's folders, loaded once while in use.

    The cache keeps the ``size`` most recently used snapshots (a folder's transcripts
    share a few hundred at most), so a walk over millions of transcripts and tens of
    thousands of snapshots stays in bounded memory.
    """

    def __init__(self, size: int = 2048) -> None:
        self.cache: OrderedDict[tuple[str, str], SnapshotSettings | str] = OrderedDict()
        self.size = size

    def get(self, name: str, transcript: Path | str) -> SnapshotSettings | str:
        """The settings of the snapshot ``name`` seen from ``transcript``, or why not."""
        folder = os.path.dirname(os.fspath(transcript))
        key = (folder, name)
        got = self.cache.get(key)
        if got is None:
            got = self.cache[key] = self._load(name, Path(folder))
            if len(self.cache) > self.size:
                self.cache.popitem(last=False)
        else:
            self.cache.move_to_end(key)
        return got

    def _load(self, name: str, folder: Path) -> SnapshotSettings | str:
        rel = re.sub(r"^\$\{?\w+\}?/", "", name)
        roots = [folder.resolve(), *folder.resolve().parents]
        tries = [Path(rel)] if Path(rel).is_absolute() else [r / rel for r in roots]
        try:
            found = next((p for p in tries if p.is_file()), None)
        except OSError as exc:  # a name too long for the file system, say
            return f"config snapshot {name[:200]!r} cannot be looked up: {exc.strerror}"
        if found is None:
            return f"config snapshot {name!r} not found in any folder above the transcript"
        try:
            cfg = yaml.load(found.read_text(encoding="utf-8"), Loader=_LOADER)
        except (yaml.YAMLError, UnicodeDecodeError, OSError) as exc:
            return f"config snapshot {str(found)!r} is not YAML: {str(exc).splitlines()[0]}"
        return conv_settings(cfg, str(found))
