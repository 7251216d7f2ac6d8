"""Everything the CLI does goes through the notebook API (issue 29).

The command bodies of ``ingest``, ``simulate``, ``report`` and ``reanalyze`` import
``cuegap.api`` and none of the internals they used to call (read from their source, so a
command that goes back to calling ingest, publishing or the design registry directly
fails here); and each new ``Audit`` method works on a real SQLite store: ingest counts
every line once and stores nothing twice, an option of another design is refused by name,
a store with two designs gets one board report.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

import cuegap
from cuegap.api import ingest_failures, plan_ingest
from cuegap.api import simulate as api_simulate

ROOT = Path(__file__).resolve().parents[1]

#: The internals the commands called before they went through the API.
INTERNALS = ("cuegap.ingest", "cuegap.reanalysis", "cuegap.publish", "cuegap.designs",
             "cuegap.models", "cuegap.compliance", "cuegap.schema", "cuegap.audit",
             "cuegap.reports")  # fmt: skip
#: (module, command function, helper functions of that module it calls)
COMMANDS = (
    ("cuegap/cli/_ingest.py", "ingest", ()),
    ("cuegap/cli/_ingest.py", "simulate", ()),
    ("cuegap/cli/_report.py", "report", ("_print_published",)),
    ("cuegap/cli/_report.py", "reanalyze", ()),
    ("cuegap/cli/_store.py", "recover", ()),
)


def _imports(tree: ast.AST) -> list[str]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.append(node.module)
        elif isinstance(node, ast.Import):
            found.extend(a.name for a in node.names)
    return found


def _module_level_imports(tree: ast.Module) -> list[str]:
    """Imports outside functions and ``if TYPE_CHECKING:`` blocks (those run)."""
    found = []
    for node in tree.body:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            continue
        if isinstance(node, ast.Import | ast.ImportFrom):
            found.extend(_imports(node))
    return found


def _internal(module: str) -> bool:
    return any(module == i or module.startswith(i + ".") for i in INTERNALS)


@pytest.mark.parametrize(("path", "command", "helpers"), COMMANDS)
def test_each_command_calls_the_api_and_no_internal(path: str, command: str,
                                                    helpers: tuple[str, ...]) -> None:  # fmt: skip
    tree = ast.parse((ROOT / path).read_text("utf-8"))
    functions = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    assert command in functions, f"{path} has no function {command}"
    body = _imports(functions[command])
    assert "cuegap.api" in body, f"{command} does not import cuegap.api"
    used = body + [m for h in helpers for m in _imports(functions[h])]
    used += _module_level_imports(tree)
    assert [m for m in used if _internal(m)] == [], f"{command} imports internals"


def test_the_check_finds_an_internal_import() -> None:
    """The AST check above can fail: a body that imports the publisher is caught."""
    tree = ast.parse("def report():\n    from cuegap.reanalysis import publish_report\n")
    assert [m for m in _imports(tree) if _internal(m)] == ["cuegap.reanalysis"]


# -- the API on a real store ------------------------------------------------------------
@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict]:
    """The prompt-variance simulation (QA answers under prompt formats, a cue contrast)
    in a SQLite store, analysed as the QA and the prompt-variance design. Every tenth BBQ
    answer is held back in ``held.jsonl``, for the re-analysis test to ingest later."""
    root = tmp_path_factory.mktemp("routing")
    data = root / "data"
    audit = cuegap.open(f"sqlite:///{root / 'store.db'}", create=True, quiet=True)
    assert api_simulate("prompt-variance", data, systems=2, seed=8, cue_gap=True,
                        console=audit.out) == data  # fmt: skip
    lines = (data / "responses_bbq.jsonl").read_text("utf-8").splitlines()
    header, answers = lines[0], lines[1:]
    kept = [a for i, a in enumerate(answers) if i % 10]
    held = [a for i, a in enumerate(answers) if not i % 10]
    (data / "responses_bbq.jsonl").write_text("\n".join([header, *kept]) + "\n", "utf-8")
    (root / "held.jsonl").write_text("\n".join([header, *held]) + "\n", "utf-8")
    summaries = audit.ingest(data)
    audit.analyze("qa", boot=40)
    audit.analyze("prompt-variance", boot=40)
    url = f"sqlite:///{root / 'store.db'}"
    yield {"audit": audit, "root": root, "data": data, "summaries": summaries,
           "kept": len(kept), "held": len(held), "url": url}  # fmt: skip
    audit.close()


def test_plan_ingest_refuses_before_any_store(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="no such file or directory"):
        plan_ingest([tmp_path / "typo.jsonl"])
    with pytest.raises(ValueError, match="no file a reader recognises"):
        plan_ingest([tmp_path])
    with pytest.raises(ValueError, match="no such mapping file"):
        plan_ingest([tmp_path], mapping=tmp_path / "typo.toml")
    assert list(tmp_path.iterdir()) == []


def test_ingest_stores_every_line_once(store: dict) -> None:
    """Banks first; each answer file's lines are all stored (the header line is not a
    record); ingesting the folder again stores nothing new."""
    audit, summaries = store["audit"], store["summaries"]
    assert Path(summaries[0].path).name == "bbq_bank.jsonl"
    bbq = next(s for s in summaries if Path(s.path).name == "responses_bbq.jsonl")
    kept = store["kept"]
    assert (bbq.read, bbq.stored, bbq.duplicate, bbq.quarantined) == (kept, kept, 0, 0)
    seen: list = []
    again = audit.ingest(store["data"], each=lambda s: seen.append(s.path))
    assert [s.path for s in again] == seen
    for s in again:
        assert s.stored == 0 and s.read == s.duplicate + s.quarantined
    assert ingest_failures(again) == []


def test_ingest_failures_name_a_file_whose_records_were_all_quarantined(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join(json.dumps({"nothing": i}) for i in range(3)) + "\n", "utf-8")
    with cuegap.open(f"sqlite:///{tmp_path / 's.db'}", create=True, quiet=True) as audit:
        summaries = audit.ingest(bad, format="generic")
    assert (summaries[0].read, summaries[0].quarantined) == (3, 3)
    (message,) = ingest_failures(summaries)
    assert message.startswith(f"{bad}: nothing stored, all 3 records were quarantined")


def test_simulate_refuses_another_designs_option(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="named"):
        api_simulate("qa", tmp_path / "out", named=True)
    assert not (tmp_path / "out").exists()
    with pytest.raises(ValueError, match="unknown design"):
        api_simulate("nope", tmp_path / "out")


def test_report_of_two_designs_is_the_board_and_design_reports_one(store: dict) -> None:
    audit, root = store["audit"], store["root"]
    assert audit.designs == ("qa", "prompt-variance")
    board = audit.report(out=root / "board", formats=("html",))
    path, report_id = board["html"]
    assert path.name.startswith("cuegap-board-report") and isinstance(report_id, int)
    assert path.read_text("utf-8").count('class="board-row"') == 2
    alone = audit.report("qa", out=root / "qa", formats=("html",))
    assert alone["html"][0].name.startswith("cuegap-report-")
    assert alone["html"][1] > report_id


def test_reanalyze_of_two_designs_publishes_one_board_report(store: dict) -> None:
    """Nothing changed: nothing written, exit 0. Then the held-back answers arrive: both
    designs re-analyse (their systems' data changed), and ``cuegap reanalyze`` publishes
    one board report (HTML and PDF) carrying each design's "what changed", exit 1."""
    from typer.testing import CliRunner

    from cuegap.cli import app

    audit, root = store["audit"], store["root"]
    url = store["url"]
    reported = audit.report(out=root / "reported", formats=("html",))  # what changes compare to
    signoff = ["--db", url, "signoff", str(reported["html"][1]), "--reviewer", "Ada",
               "--decision", "approve"]  # fmt: skip
    assert CliRunner().invoke(app, signoff).exit_code == 0
    same = audit.reanalyze(out=root / "v2", boot=40)
    assert (same.changed, same.exit_code, same.reports) == (False, 0, [])
    assert not (root / "v2").exists()
    (held,) = audit.ingest(root / "held.jsonl")
    assert held.stored == store["held"]
    before = set(audit.analyses()["id"])
    args = ["--db", url, "reanalyze", "--out", str(root / "v3"), "--boot", "40"]
    run = CliRunner().invoke(app, args, env={"COLUMNS": "250"})
    assert run.exit_code == 1, run.output
    new = audit.analyses()
    assert set(new[~new["id"].isin(before)]["kind"]) == {"qa", "prompt_variance"}
    written = sorted(p.name for p in (root / "v3").iterdir())
    assert len(written) == 2 and all(n.startswith("cuegap-board-report") for n in written)
    assert {f"wrote {root / 'v3' / n}" for n in written} <= {
        line.strip() for line in run.output.splitlines()
    }
    html = next((root / "v3").glob("*.html")).read_text("utf-8")
    # the signed board is registered under the prompt-variance analysis and lists the QA
    # one: signing it signed both parts, so each design's "what changed" follows its
    # verdict page, its id prefixed
    assert 'id="prompt-variance-changes"' in html
    assert 'id="qa-changes"' in html
    assert html.count('class="board-row"') == 2
