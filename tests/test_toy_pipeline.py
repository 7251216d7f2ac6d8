"""A fifth design, registered from the tests only, goes through the whole pipeline with no
edit to shared code: ingest -> analyze -> report -> signoff -> verify -> reanalyze.

The toy design (``tests/toy_design.py``) counts each system's stored responses; a system
passes with at least ``[toy] min_responses`` (5). The tiny fixture holds 9 responses of
sys-a and 1 of sys-b, so sys-a passes and sys-b stays inconclusive until more of its
responses arrive; the re-analysis must then say that sys-b's decision changed.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import DATA
from toy_design import ToyDesign
from typer.testing import CliRunner

from cuegap.cli import app
from cuegap.designs import Design, register, unregister

runner = CliRunner()


@pytest.fixture
def toy() -> Iterator[Design]:
    design = register(ToyDesign())
    try:
        yield design
    finally:
        unregister("toy")


def _more_of_sys_b(path: Path) -> Path:
    """sys-a's nine responses given again as sys-b's (new responses: the system differs)."""
    lines = (DATA / "tiny_responses.jsonl").read_text().splitlines()
    out = [lines[0]]  # the header names the item bank and the run
    for line in lines[1:]:
        rec = json.loads(line)
        if rec.get("system") == "sys-a":
            out.append(json.dumps({**rec, "system": "sys-b"}))
    path.write_text("\n".join(out) + "\n")
    return path


def test_a_toy_design_goes_from_ingest_to_reanalysis(
    toy: Design, db_url: str, tiny_bank: Path, tmp_path: Path
) -> None:
    db = ["--db", db_url]
    env = {"COLUMNS": "200"}

    def cli(*args: str) -> tuple[int, str]:
        res = runner.invoke(app, [*db, *args], env=env)
        return res.exit_code, res.output

    code, out = cli("ingest", str(tiny_bank), str(DATA / "tiny_responses.jsonl"))
    assert code == 0, out
    code, out = cli("analyze", "--design", "toy")
    assert code == 0 and "toy analysis of 2 systems" in out, out

    # the report: page 1 from the verdict record, the toy's tables, its policy section
    code, out = cli("report", "--design", "toy", "--out", str(tmp_path / "r1"))
    assert code == 0, out
    (html_path,) = sorted((tmp_path / "r1").glob("*.html"))
    assert len(list((tmp_path / "r1").glob("*.pdf"))) == 1
    html = html_path.read_text(encoding="utf-8")
    page1 = html.split('id="tables"')[0]
    assert "sys-a" in page1 and "sys-b" in page1
    assert page1.count("passed") >= 1 and "inconclusive" in page1
    assert "1 responses stored (5 needed)" in page1
    assert "[toy]" in html and "min_responses = 5" in html

    code, out = cli("signoff", str(html_path), "--reviewer", "Dana Board",
                    "--decision", "approve")  # fmt: skip
    assert code == 0, out
    code, out = cli("verify")
    assert code == 0, out

    # nothing new: the scheduled re-analysis writes nothing and exits 0
    code, out = cli("reanalyze", "--design", "toy", "--out", str(tmp_path / "r2"))
    assert code == 0, out
    assert not (tmp_path / "r2").exists() or not list((tmp_path / "r2").glob("*.html"))

    # more of sys-b's responses: re-analysed, a new report version says what changed
    code, out = cli("ingest", str(_more_of_sys_b(tmp_path / "more.jsonl")))
    assert code == 0, out
    code, out = cli("reanalyze", "--design", "toy", "--out", str(tmp_path / "r3"))
    assert code == 1, out
    (new_html,) = sorted((tmp_path / "r3").glob("*.html"))
    text = new_html.read_text(encoding="utf-8")
    changes = text.split('id="changes"')[1].split("</section>")[0]
    row = next(r for r in changes.split("<tr") if "sys-b" in r)
    assert "inconclusive" in row and "passed" in row  # then inconclusive, now passed
    assert "sys-a" not in changes.split("</thead>")[1] or "sys-a" not in row
    code, out = cli("verify")
    assert code == 0, out


def test_a_toy_design_joins_the_board_report_through_the_default_sections(
    toy: Design, db_url: str, tiny_bank: Path, tmp_path: Path
) -> None:
    """The store holds the dilemma design's responses and the toy reads them: two designs,
    so ``report`` renders the board. The dilemma design was never analysed: its column is
    *no verdict*, with the command to run; the toy's sections are the default
    ``Design.report_sections`` (the generic result tables and provenance). By hand: sys-a
    passes the toy but has no dilemma verdict, so it stays open; sys-b is open on both."""
    db = ["--db", db_url]
    for args in (("ingest", str(tiny_bank), str(DATA / "tiny_responses.jsonl")),
                 ("analyze", "--design", "toy")):  # fmt: skip
        res = runner.invoke(app, [*db, *args])
        assert res.exit_code == 0, res.output
    res = runner.invoke(app, [*db, "report", "--out", str(tmp_path), "--format", "html"],
                        env={"COLUMNS": "200"})  # fmt: skip
    assert res.exit_code == 0, res.output
    # the columns follow the registry's order, which depends on when the toy registered
    assert re.search(r"Board report across 2 designs \((dilemma, toy|toy, dilemma)\)", res.output)
    (path,) = tmp_path.glob("cuegap-board-report*.html")
    html = path.read_text(encoding="utf-8")
    assert "run cuegap analyze --design dilemma" in html.split('id="design-1"')[0]
    assert "kept open by dilemma (no verdict)</span>" in html  # sys-a
    assert (
        "kept open by dilemma (no verdict), toy (inconclusive)" in html
        or "kept open by toy (inconclusive), dilemma (no verdict)" in html
    )  # sys-b
    assert 'id="toy-tables"' in html and "min_responses = 5" in html  # default sections
    assert runner.invoke(app, [*db, "verify"]).exit_code == 0


def test_the_board_rule_comes_from_the_policy_the_analyses_ran_under(
    toy: Design, db_url: str, tiny_bank: Path, tmp_path: Path
) -> None:
    """The toy runs under a policy whose [board] rule passes a system that half the designs
    pass. By hand: 2 designs held, ceil(0.5 x 2) = 1 must pass; sys-a passes the toy (the
    dilemma holds no verdict), so it passes overall; sys-b passes neither: inconclusive."""
    policy = tmp_path / "board.toml"
    policy.write_text("[board]\nflag_min_designs = 2\npass_min_share = 0.5\n", "utf-8")
    db = ["--db", db_url]
    for args in (("ingest", str(tiny_bank), str(DATA / "tiny_responses.jsonl")),
                 ("analyze", "--design", "toy", "--policy", str(policy))):  # fmt: skip
        res = runner.invoke(app, [*db, *args])
        assert res.exit_code == 0, res.output
    res = runner.invoke(app, [*db, "report", "--out", str(tmp_path / "r"), "--format", "html"])
    assert res.exit_code == 0, res.output
    (path,) = (tmp_path / "r").glob("cuegap-board-report*.html")
    html = path.read_text(encoding="utf-8")
    assert "flagged if at least 2 designs flag the system; otherwise passed if at least 0.5" in html
    assert "passed by 1 of 2 designs (toy); 1 needed" in html
    assert html.count('<td class="overall"><span class="badge badge-passed">') == 1
    assert "pass_min_share = 0.5" in html
