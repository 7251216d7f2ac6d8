"""The report's "What it would take to decide" section reads the stored plan table.

A real QA store: before ``cuegap plan`` the section names the command to run; after it,
the section shows the stored rows (compared with the exported plan); a later plan
analysis with a script payload as system name and contrast is shown escaped. Every
design's report template includes the shared page 1, which includes the section.
"""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest
from markupsafe import escape
from typer.testing import CliRunner

from cuegap.audit import save_analysis
from cuegap.cli import app
from cuegap.reports import TEMPLATES_DIR
from cuegap.schema import make_engine

SCRIPT = "<script>alert('plan')</script>"


def cli(db: Path, *args: object, code: int = 0) -> str:
    res = CliRunner().invoke(app, ["--db", str(db), *map(str, args)], env={"COLUMNS": "250"})
    assert res.exit_code == code, res.output
    return res.output


def _section(out_dir: Path) -> str:
    (html_file,) = sorted(out_dir.glob("*.html"))
    html = html_file.read_text(encoding="utf-8")
    start = html.index('<section id="plan"')
    return html[start : html.index("</section>", start)]


@pytest.fixture(scope="module")
def qa_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("plansection")
    db, sim = root / "qa.db", root / "sim"
    cli(db, "simulate", sim, "--design", "qa", "--systems", 2, "--seed", 4)
    cli(db, "ingest", sim / "qa_itembank.jsonl", sim / "qa_results.jsonl")
    cli(db, "analyze", "--boot", 100)
    return db


def test_without_a_plan_the_section_names_the_command(qa_db: Path) -> None:
    out = qa_db.parent / "r0"
    cli(qa_db, "report", "--out", out, "--format", "html")
    section = _section(out)
    assert "What it would take to decide" in section
    assert "No audit plan is stored" in section and "cuegap plan --design qa" in section


def test_the_section_shows_the_stored_plan_rows_escaped(qa_db: Path) -> None:
    root = qa_db.parent
    cli(qa_db, "plan")
    cli(qa_db, "export", "plan", "--out", root / "plan.csv")
    plan = pd.read_csv(root / "plan.csv")
    cli(qa_db, "report", "--out", root / "r1", "--format", "html")
    section = _section(root / "r1")
    rows = re.findall(r"<tr>\s*<td class=\"system\">(.*?)</td><td>(.*?)</td><td>(.*?)</td>",
                      section)  # fmt: skip
    stored = zip(plan["system"], plan["contrast"], plan["decision"], strict=True)
    assert rows == [(str(escape(s)), str(escape(c)), d) for s, c, d in stored]
    for p in plan["p_decide"]:
        assert f'<td class="num">{p:.2f}</td>' in section
    assert "cuegap plan --design qa" in section  # how to refresh it

    # A newer plan whose stored text is an HTML payload: shown as text, never as markup.
    evil = plan.head(1).assign(system=SCRIPT, contrast=SCRIPT)
    save_analysis(make_engine(f"sqlite:///{qa_db}"), kind="plan", status="ok",
                  data_fingerprint="evil", system_fingerprints={}, settings={},
                  tables={"plan": evil})  # fmt: skip
    cli(qa_db, "report", "--out", root / "r2", "--format", "html")
    section = _section(root / "r2")
    assert SCRIPT not in section
    assert str(escape(SCRIPT)) in section


def test_every_design_report_includes_the_section() -> None:
    """Every top-level report template (each built-in design's, and the generic one a
    plug-in design uses) includes page 1, and page 1 the section."""
    page = (TEMPLATES_DIR / "partials" / "_verdict_page.html.j2").read_text(encoding="utf-8")
    assert '{% include "partials/_plan_section.html.j2" %}' in page
    for tpl in sorted(TEMPLATES_DIR.glob("*.html.j2")):
        if tpl.name == "board_report.html.j2":  # renders each design's page 1 in code
            board = (TEMPLATES_DIR.parent / "reports" / "_board.py").read_text(encoding="utf-8")
            assert '"partials/_verdict_page.html.j2"' in board and "plan_section(" in board
            continue
        text = tpl.read_text(encoding="utf-8")
        assert '{% include "partials/_verdict_page.html.j2" %}' in text, tpl.name
