"""The Design interface: a toy fifth design registered from the tests only, and the one
verdict record every design writes.

The toy design lives in this file: nothing in ``cuegap/`` names it. Registered, it is
found by ``--design``, analysed through the shared ``cuegap analyze``, described by
``cuegap analyses``, its verdicts listed by ``cuegap verdicts`` and sealed in the ledger
like any analysis (``cuegap verify``).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest
from conftest import DATA
from sqlalchemy.engine import Connection, Engine
from toy_design import ToyDesign
from typer.testing import CliRunner

from cuegap.audit import load_table
from cuegap.cli import app
from cuegap.compliance import verify
from cuegap.designs import (
    Design,
    StatusPart,
    analysis_kinds,
    for_kind,
    get,
    refuse_options,
    register,
    registered,
    unregister,
)
from cuegap.designs._verdicts import RECORD_COLUMNS, records_frame, two_sided_rule
from cuegap.ingest import ingest_path
from cuegap.models import Policy, PolicyKey, Range, declare_section, load_policy, sections

runner = CliRunner()


@pytest.fixture
def toy() -> Iterator[Design]:
    design = register(ToyDesign())
    try:
        yield design
    finally:
        unregister("toy")


def test_built_in_designs_register_through_the_same_door() -> None:
    assert list(registered())[:4] == ["dilemma", "qa", "prompt-variance", "conversation"]
    kinds = analysis_kinds()
    assert len(kinds) == len(set(kinds))  # no two designs store the same kind
    assert for_kind("qa_bayesian").name == "qa" and for_kind("bayesian").name == "dilemma"
    with pytest.raises(ValueError, match="no registered design stores analyses of kind 'x'"):
        for_kind("x")
    with pytest.raises(ValueError, match="unknown design 'nope'; known designs: dilemma"):
        get("nope")
    with pytest.raises(TypeError, match="takes a Design instance"):
        register(object())  # type: ignore[arg-type]


def test_options_are_refused_from_what_each_design_declares() -> None:
    qa = get("qa")
    refuse_options(qa, frozenset({"strategy"}), command="analyze")  # its own: accepted
    with pytest.raises(ValueError, match=r"^--unit applies to the conversation design only$"):
        refuse_options(qa, frozenset({"unit"}), command="analyze")
    with pytest.raises(ValueError, match="--strategy applies to the QA and prompt-variance"):
        refuse_options(get("dilemma"), frozenset({"strategy"}), command="analyze")


def test_a_design_that_reuses_a_kind_is_refused(toy: Design) -> None:
    class Clash(ToyDesign):
        name = "clash"

    with pytest.raises(ValueError, match="toy_count that design 'toy' already stores"):
        register(Clash())


def test_a_toy_design_runs_through_the_shared_commands(toy: Design, db_url: str,
                                                       tiny_bank: Path) -> None:  # fmt: skip
    """Registered from this file only: --design finds it, analyze dispatches to it, analyses
    describes it, verdicts lists its records, and verify covers its stored analysis."""
    from cuegap.schema import make_engine, upgrade

    engine = make_engine(db_url)
    upgrade(engine)
    ingest_path(engine, tiny_bank)
    ingest_path(engine, DATA / "tiny_responses.jsonl")
    db = ["--db", db_url]
    res = runner.invoke(app, [*db, "analyze", "--design", "toy", "--strategy", "all"])
    assert res.exit_code == 0 and "toy analysis of 2 systems" in res.output, res.output
    bad = runner.invoke(app, [*db, "analyze", "--design", "toy", "--unit", "persona"])
    assert bad.exit_code == 2 and "--unit applies to the conversation design only" in bad.output
    listed = runner.invoke(app, [*db, "analyses"], env={"COLUMNS": "200"})
    assert "toy_count" in listed.output and "responses (all)" in listed.output
    shown = runner.invoke(app, [*db, "verdicts", "--design", "toy"], env={"COLUMNS": "200"})
    assert shown.exit_code == 0 and "sys-a" in shown.output, shown.output
    records = load_table(engine, "verdict_records", kind="toy_count")
    assert list(records.columns) == list(RECORD_COLUMNS)
    assert set(records["design"]) == {"toy"} and records["estimate"].sum() == 10
    assert verify(engine).ok
    engine.dispose()


class CountingToy(ToyDesign):
    """The toy design with records of its own: a status line, a table and a tally that
    verify finds edited."""

    def status(self, engine: Engine) -> StatusPart:
        return StatusPart(7, "toy widget", lambda console: console.print("toy widget table"))

    def tally_problems(self, conn: Connection) -> list[str]:
        return ["toy tally: 1 widget count(s) no longer match the stored widgets"]


def test_a_toy_design_speaks_in_status_and_verify(db_url: str, tiny_bank: Path) -> None:
    """``cuegap status`` counts the toy design's records and prints its table, ``cuegap
    verify`` names its tally problem: nothing shared was edited for it."""
    from cuegap.schema import make_engine, upgrade

    engine = make_engine(db_url)
    upgrade(engine)
    ingest_path(engine, tiny_bank)
    ingest_path(engine, DATA / "tiny_responses.jsonl")
    register(CountingToy())
    try:
        db = ["--db", db_url]
        st = runner.invoke(app, [*db, "status"], env={"COLUMNS": "200"})
        assert st.exit_code == 0, st.output
        assert "2 systems, 10 responses, 7 toy widgets from 1 file;" in st.output
        assert "toy widget table" in st.output and "Conditions" in st.output
        problem = "toy tally: 1 widget count(s) no longer match the stored widgets"
        assert problem in verify(engine).problems
        res = runner.invoke(app, [*db, "verify"], env={"COLUMNS": "200"})
        assert res.exit_code != 0 and problem in res.output, res.output
    finally:
        unregister("toy")
    assert verify(engine).ok  # unregistered: the built-in designs' tallies agree
    engine.dispose()


#: Quoted design names that may stay in the shared modules, each with its reason.
_NAMED_ON_PURPOSE = {
    ("cuegap/cli/_ingest.py", '] = "dilemma",'):
        "`cuegap simulate --design`'s default: typer shows a literal default in --help",
    ("cuegap/compliance/_verify_unsealed.py", '"conversation": ("conversations",'):
        "the store's `conversation` table, keyed by table name like `response`",
}  # fmt: skip


def test_shared_modules_name_no_design() -> None:
    """Issue 26: the CLI, compliance, publishing, the catalogue and the renderer ask the
    registry; none quotes a design's name (beyond the few lines named above)."""
    import re

    root = Path(__file__).resolve().parents[1]
    quoted = re.compile(r"""(["'])(dilemma|qa|prompt-variance|conversation)\1""")
    paths = [*sorted((root / "cuegap/cli").glob("*.py")),
             *sorted((root / "cuegap/compliance").glob("*.py"))]  # fmt: skip
    paths += [root / p for p in ("cuegap/publish.py", "cuegap/audit/_catalog.py",
                                 "cuegap/ingest/_loader.py",
                                 "cuegap/reports/_render.py")]  # fmt: skip
    found, used = [], set()
    for path in paths:
        rel = path.relative_to(root).as_posix()
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if not quoted.search(line):
                continue
            allowed = [k for k in _NAMED_ON_PURPOSE if k[0] == rel and k[1] in line]
            used.update(allowed)
            if not allowed:
                found.append(f"{rel}:{n}: {line.strip()}")
    assert not found, "shared code names a design:\n" + "\n".join(found)
    assert used == set(_NAMED_ON_PURPOSE), "stale whitelist entries"


def test_records_frame_keeps_every_verdict_and_states_the_rule() -> None:
    """Hand-made verdicts: the record carries each row's decision, estimate, interval and
    reason unchanged; the level is 2p − 1 (a 0.95 policy gives the 90% interval the
    reasons quote); an unknown decision is refused."""
    verdicts = pd.DataFrame({
        "system": ["a", "b"], "verdict": ["flagged", "passed"], "reason": ["r1", "r2"],
        "gap_pp": [4.0, 0.5], "lo": [2.5, -1.0], "hi": [5.5, 1.5],
        "pf": [0.99, 0.01], "pp": [0.0, 0.97],
    })  # fmt: skip
    rule = two_sided_rule(2.0, 0.95, "macro gap", " pp")
    out = records_frame(
        verdicts,
        design="d",
        kind="k",
        compared="x vs y",
        estimate="gap_pp",
        low="lo",
        high="hi",
        scale="pp",
        method="bootstrap",
        gate_passed=None,
        rule=rule,
        delta=2.0,
        probability=0.95,
        p_flag="pf",
        p_pass="pp",
    )
    assert out["decision"].tolist() == ["flagged", "passed"]
    assert out["estimate"].tolist() == [4.0, 0.5] and out["high"].tolist() == [5.5, 1.5]
    assert out["level"].tolist() == [0.9, 0.9] and out["reason"].tolist() == ["r1", "r2"]
    assert rule == ("flagged when P(macro gap > 2 pp) >= 0.95; passed when "
                    "P(|macro gap| < 2 pp) >= 0.95; otherwise inconclusive")  # fmt: skip
    with pytest.raises(ValueError, match="unknown decision"):
        records_frame(verdicts.assign(verdict=["flagged", "fine"]), design="d", kind="k",
                      compared="", estimate=None, low=None, high=None, scale="", method="",
                      gate_passed=None, rule="", delta=None, probability=None, p_flag=None,
                      p_pass=None)  # fmt: skip


def test_a_dilemma_analysis_writes_records_that_match_its_verdicts(engine, tmp_path) -> None:
    from cuegap.designs.dilemma._analysis import analyze
    from cuegap.designs.dilemma._analysis_settings import AnalysisSettings
    from cuegap.designs.dilemma.simulate import simulate, synthetic_item_bank

    sim = simulate(tmp_path, systems=2, seed=3, item_bank=synthetic_item_bank(seed=3, n_dilemmas=8))
    ingest_path(engine, sim.itembank_path)
    ingest_path(engine, sim.responses_path)
    result = analyze(engine, AnalysisSettings(n_boot=20))
    verdicts = load_table(engine, "verdicts", result.id)
    records = load_table(engine, "verdict_records", result.id)
    assert records["system"].tolist() == verdicts["system"].tolist()
    assert records["decision"].tolist() == verdicts["verdict"].tolist()
    assert records["reason"].tolist() == verdicts["reason"].tolist()
    pd.testing.assert_series_equal(records["estimate"], verdicts["gap_pp"], check_names=False)
    assert set(records["design"]) == {"dilemma"} and set(records["method"]) == {"bootstrap"}


def test_a_design_brings_its_own_policy_section(toy: Design, tmp_path: Path) -> None:
    """The toy design declares ``[toy] min_responses``: a policy file may set it, every
    policy reads it, its report prints it; unregistering the design forgets it."""
    assert [k.name for k in sections()["toy"]] == ["min_responses"]
    assert Policy().min_responses == 5  # the declared default
    path = tmp_path / "policy.toml"
    path.write_text("[toy]\nmin_responses = 2\n")
    policy = load_policy(path)
    assert policy.min_responses == 2 and policy.to_dict()["min_responses"] == 2
    assert policy.to_toml(("toy",)) == "[toy]\nmin_responses = 2\n"
    path.write_text("[toy]\nmin_responses = 0\n")
    with pytest.raises(ValueError, match=r"toy\.min_responses = 0 is out of range"):
        load_policy(path)
    path.write_text("[toy]\nmin_responses = 2.5\n")
    with pytest.raises(ValueError, match=r"toy\.min_responses must be an integer"):
        load_policy(path)
    # a stored policy of a design not registered here is read without its keys
    stored = {**Policy().to_dict(), "min_responses": 3}
    unregister("toy")
    try:
        assert "toy" not in sections()
        assert "min_responses" not in Policy.from_dict(stored).to_dict()
        path.write_text("[toy]\nmin_responses = 2\n")
        with pytest.raises(ValueError, match=r"unknown section \[toy\]"):
            load_policy(path)
    finally:
        register(toy)


def test_a_policy_key_belongs_to_one_section(toy: Design) -> None:
    with pytest.raises(ValueError, match=r"'delta_bias' of \[other\] is already in \[qa\]"):
        declare_section("other", (PolicyKey("delta_bias", 0.1, Range(0, 1)),))
    with pytest.raises(ValueError, match=r"\[verdict\] is one of the core sections"):
        declare_section("verdict", ())
    with pytest.raises(ValueError, match=r"\[toy\] is already declared with other keys"):
        declare_section("toy", (PolicyKey("min_responses", 6, Range(1, 10)),))


def test_the_toy_design_applies_its_policy_key(toy: Design, tmp_path: Path) -> None:
    """``analyze --design toy --policy`` decides by the toy's own key: 3 responses pass
    at min_responses = 3 and stay inconclusive at the default 5."""
    db = tmp_path / "toy.db"
    result = runner.invoke(app, ["--db", str(db), "ingest", str(DATA / "tiny_bank.json"),
                                 str(DATA / "tiny_responses.jsonl")])  # fmt: skip
    assert result.exit_code == 0, result.output
    from cuegap.schema import make_engine

    engine = make_engine(f"sqlite:///{db}")
    counts = pd.read_sql(
        "SELECT s.name AS system, COUNT(r.id) AS n FROM response r JOIN system s "
        "ON r.system_id = s.id GROUP BY s.name", engine,
    )  # fmt: skip
    need = int(counts["n"].min())
    assert need < 5  # the fixture has a system the default keeps inconclusive
    policy = tmp_path / "policy.toml"
    policy.write_text(f"[toy]\nmin_responses = {need}\n")
    for args, passed in (([], set(counts[counts.n >= 5].system)),
                         (["--policy", str(policy)], set(counts.system))):  # fmt: skip
        result = runner.invoke(app, ["--db", str(db), "analyze", "--design", "toy", "--force",
                                     *args])  # fmt: skip
        assert result.exit_code == 0, result.output
        newest = max(pd.read_sql("SELECT id FROM analysis", engine)["id"])
        verdicts = load_table(engine, "verdicts", int(newest))
        assert set(verdicts[verdicts.verdict == "passed"].system) == passed
