"""Conversation roles come from each run's ``agent_definitions``, never from speaker ids.

MAC-Fairness's schema leaves agent ids free and its grids sweep the first agent
(``agent_definitions.0.*``) beside a fixed "vanilla" baseline
(config/colm_exp_configs/*_2agent_var-and-vanilla_*.yaml). Each test writes a small
workspace: one snapshot and three transcripts, two of them (A,B)(B,B)(B,B) and one
(A,B)(A,A)(A,A): the identity agent moves after a disagreement twice, the baseline once.
Counted by hand with seed 003's Eqs. 1-2 (transitions r-1 -> r after a disagreement):
the first two give identity 1 disagreement and 1 shift, baseline 1 and 0 each; the third
identity 1 and 0, baseline 1 and 1. Total: identity 3 / 2, baseline 3 / 1. Swapped roles
would give 3 / 1 and 3 / 2, so every test below fails if the reader takes the wrong agent.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import yaml
from sqlalchemy import select
from typer.testing import CliRunner

from cuegap.cli import app
from cuegap.designs.conversation._simulate import snapshot, transcript
from cuegap.ingest import ingest_path
from cuegap.schema import ConvAgent, conv_counts

SUB, NAME = "bbq_age_sampled", "20260115T1200Z_sys_2agent_var-and-vanilla_v2025-12-10"
ROUNDS = [
    [("A", "B"), ("B", "B"), ("B", "B")],
    [("A", "B"), ("B", "B"), ("B", "B")],
    [("A", "B"), ("A", "A"), ("A", "A")],
]
COUNTS = ["iden_disagree", "iden_shift", "base_disagree", "base_shift", "conversations"]
HAND = (3, 2, 3, 1, 3)
CELL = {"demographics": "black", "persona": "teacher", "instantiation": "human",
        "reveal": "revealed"}  # fmt: skip


def _rename(doc: object, names: dict[str, str]) -> object:
    """``doc`` with every speaker id renamed (ids appear as values and as keys)."""
    text = json.dumps(doc)
    for old in names:
        text = text.replace(f'"{old}"', f'"@{old}"')
    for old, new in names.items():
        text = text.replace(f'"@{old}"', f'"{new}"')
    return json.loads(text)


def _workspace(
    root: Path,
    *,
    names: dict[str, str] | None = None,
    edit: Callable[[dict], None] | None = None,
    cell: dict[str, str] = CELL,
) -> Path:
    """A workspace whose first agent is the identity agent, unless ``edit`` changes it."""
    names = names or {}
    cfg = _rename(snapshot("sys", NAME, SUB, "BBQ", cell), names)
    assert isinstance(cfg, dict)
    if edit is not None:
        edit(cfg)
    snap = root / "bookkeeping" / "config_snapshot" / SUB / f"{NAME}.yaml"
    snap.parent.mkdir(parents=True)
    snap.write_text(yaml.safe_dump(cfg), encoding="utf-8")
    folder = root / "experiment" / SUB / NAME / "transcript"
    folder.mkdir(parents=True)
    rel = snap.relative_to(root).as_posix()
    for k, rounds in enumerate(ROUNDS):
        doc = _rename(transcript(f"t{k}", NAME, SUB, rel, f"q{k}", rounds), names)
        (folder / f"t{k}.json").write_text(json.dumps(doc), encoding="utf-8")
    return root


def _stored(engine) -> tuple[tuple[int, ...], dict[str, str]]:
    got = conv_counts(engine)
    assert len(got) == 1
    with engine.connect() as conn:
        roles = dict(conn.execute(select(ConvAgent.agent_id, ConvAgent.role)).all())
    return tuple(int(got.iloc[0][c]) for c in COUNTS), roles


def _ok(summary) -> None:
    assert (summary.read, summary.stored, summary.quarantined) == (3, 3, 0), summary.problems
    assert summary.read == summary.stored + summary.duplicate + summary.quarantined


def test_seed_ids_read_as_before(engine, tmp_path: Path) -> None:
    _ok(ingest_path(engine, _workspace(tmp_path)))
    assert _stored(engine) == (HAND, {"spkr_000": "identity", "spkr_001": "baseline"})


def test_agents_spkr_001_and_spkr_002(engine, tmp_path: Path) -> None:
    ws = _workspace(tmp_path, names={"spkr_000": "spkr_001", "spkr_001": "spkr_002"})
    _ok(ingest_path(engine, ws))
    assert _stored(engine) == (HAND, {"spkr_001": "identity", "spkr_002": "baseline"})


def test_swapped_order_and_ids_follow_the_configuration(engine, tmp_path: Path) -> None:
    """The baseline is listed first and has the id seed 003 gives the identity agent."""

    def baseline_first(cfg: dict) -> None:
        cfg["agent_definitions"].reverse()

    names = {"spkr_000": "spkr_001", "spkr_001": "spkr_000"}
    _ok(ingest_path(engine, _workspace(tmp_path, names=names, edit=baseline_first)))
    assert _stored(engine) == (HAND, {"spkr_001": "identity", "spkr_000": "baseline"})


def test_both_alike_the_order_decides(engine, tmp_path: Path) -> None:
    """An identity agent with no demographics or persona, as an AI, looks like the
    baseline: the first agent is the identity agent, as MAC-Fairness writes them."""
    cell = {"demographics": "none", "persona": "none", "instantiation": "ai",
            "reveal": "anonymous"}  # fmt: skip
    ws = _workspace(tmp_path, names={"spkr_000": "a1", "spkr_001": "a2"}, cell=cell)
    _ok(ingest_path(engine, ws))
    assert _stored(engine) == (HAND, {"a1": "identity", "a2": "baseline"})
    got = conv_counts(engine).iloc[0]
    assert (got["demographics"], got["persona"], got["instantiation"]) == ("none", "none", "ai")


def test_indistinguishable_roles_are_quarantined_with_the_reason(engine, tmp_path: Path) -> None:
    def two_identities(cfg: dict) -> None:
        cfg["agent_definitions"][1]["demographics"] = "white"

    ws = _workspace(tmp_path, edit=two_identities)
    s = ingest_path(engine, ws)
    assert (s.read, s.stored, s.quarantined) == (3, 0, 3)
    assert s.read == s.stored + s.duplicate + s.quarantined
    reasons = " | ".join(why for _line, why in s.problems)
    assert "cannot tell the identity agent from the baseline" in reasons
    assert "neither 'spkr_000' nor 'spkr_001' has null demographics" in reasons


def test_cli_names_the_reason_and_suggests_no_mapping(tmp_path: Path) -> None:
    def two_identities(cfg: dict) -> None:
        cfg["agent_definitions"][1]["if_as_human"] = True

    ws = _workspace(tmp_path / "ws", edit=two_identities)
    db = f"sqlite:///{tmp_path / 's.db'}"
    res = CliRunner().invoke(app, ["--db", db, "ingest", str(ws)], env={"COLUMNS": "300"})
    assert res.exit_code == 3, res.output
    assert "all 3 records were quarantined" in res.output
    assert "cannot tell the identity agent from the baseline" in res.output
    assert "--mapping" not in res.output  # the conversation reader takes no mapping
