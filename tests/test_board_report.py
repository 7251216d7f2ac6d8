"""The board report: ``cuegap report`` on a real store holding all four designs.

The store is made the way a user makes one: each design's simulator writes its files,
the systems are renamed in those files so that the same two systems appear in every
design (one name carries ``<script>`` and ``&``), and ``cuegap ingest``, ``analyze`` and
``report`` run through the CLI. The board report must list both systems in a matrix on
page 1 (HTML and PDF), give each the overall verdict the ``[board]`` rule gives the stored
records (worked out here from the records table itself), carry every design's sections,
and be registered, signed and verified as one report.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

import pandas as pd
import pytest
from sqlalchemy import text
from typer.testing import CliRunner

from cuegap.cli import app
from cuegap.compliance import check_report, verify
from cuegap.reports import content_hash
from cuegap.schema import make_engine
from tests.test_report import need
from tests.test_report_pdf import pages

DESIGNS = ("dilemma", "qa", "prompt-variance", "conversation")
EVIL = ("Acme <script>alert(1)</script> & Sons assistant " + "v" * 60)[:60]
PLAIN = ("Plain system of the board " + "long-name-" * 6)[:60]
NAMES = (EVIL, PLAIN)
_SIM = re.compile(r"(sim-qa-system-|sim-system-|sim/system-)(\d\d)")


def cli(*args: object, code: int = 0) -> str:
    res = CliRunner().invoke(app, [str(a) for a in args], env={"COLUMNS": "250"})
    assert res.exit_code == code, res.output
    return res.output


def build_store(root: Path, names: tuple[str, ...], url: str) -> None:
    """Simulate every design for ``len(names)`` systems, rename the systems in the
    simulated files, ingest and analyse them into ``url``."""
    for design in DESIGNS:
        cli("simulate", root / design, "--design", design, "--systems", len(names),
            "--seed", 5)  # fmt: skip
        for f in (root / design).rglob("*"):
            if f.is_file() and f.suffix in (".json", ".jsonl", ".yaml", ".csv"):
                old = f.read_text("utf-8")
                new = _SIM.sub(lambda m: names[int(m.group(2)) - 1], old)
                if new != old:
                    f.write_text(new, "utf-8")
        cli("--db", url, "ingest", root / design)
    for design in DESIGNS:
        cli("--db", url, "analyze", "--design", design, "--boot", 20)


@pytest.fixture(scope="module")
def board(tmp_path_factory: pytest.TempPathFactory) -> dict:
    root = tmp_path_factory.mktemp("board")
    url = f"sqlite:///{root / 'store.db'}"
    build_store(root, NAMES, url)
    out = cli("--db", url, "report", "--out", root / "reports")
    html_path = next((root / "reports").glob("cuegap-board-report*.html"))
    return {"root": root, "url": url, "out": out, "html": html_path.read_text("utf-8"),
            "html_path": html_path, "pdf": html_path.with_suffix(".pdf")}  # fmt: skip


def _stored_records(url: str) -> pd.DataFrame:
    """Every design's newest verdict records, read with SQL and pandas only."""
    from cuegap.audit import load_table

    engine = make_engine(url)
    with engine.connect() as conn:
        ids = [r.id for r in conn.execute(text(
            "SELECT max(id) AS id FROM analysis WHERE kind IN "
            "('frequentist', 'qa', 'prompt_variance', 'conversation') GROUP BY kind"))]  # fmt: skip
    return pd.concat([load_table(engine, "verdict_records", i) for i in ids])


def test_the_cli_renders_one_board_report_and_registers_it(board: dict) -> None:
    assert "Board report across 4 designs (dilemma, qa, prompt-variance, conversation)" in (
        re.sub(r"\s+", " ", board["out"])
    )
    assert re.search(r"HTML report \d+: .*cuegap-board-report", board["out"])
    assert re.search(r"PDF report \d+: .*cuegap-board-report", board["out"])
    html = board["html"]
    assert html.count('class="board-row"') == 2
    for design in DESIGNS:
        assert re.search(rf"<th>{re.escape(design)} <span class=\"analysis\">", html)
    # every design's own sections follow page 1, then provenance and the sign-off last
    designs = [html.index(f'id="design-{i}"') for i in range(1, 5)]
    order = [html.index('id="board-page"'), *designs, html.index('id="board-provenance"'),
             html.index('id="signoff"')]  # fmt: skip
    assert order == sorted(order)
    assert "Executive summary" in html  # the dilemma design's summary section
    assert content_hash(html) in html


def test_system_names_are_text(board: dict) -> None:
    html = board["html"]
    assert "<script" not in html.lower()
    assert "Acme &lt;script&gt;alert(1)&lt;/script&gt; &amp; Sons" in html


def test_the_overall_line_follows_the_default_rule_on_the_stored_records(board: dict) -> None:
    """By hand: a cell is flagged if any of its records is; the system is flagged if any
    cell is, passed if all four cells pass, else inconclusive."""
    from cuegap.designs import gate_applied

    records = gate_applied(_stored_records(board["url"]))
    html = board["html"]
    rows = re.findall(r'<tr class="board-row">(.*?)</tr>', html, re.S)
    assert len(rows) == 2
    for system in NAMES:
        mine = records[records["system"] == system]
        assert set(mine["design"]) == set(DESIGNS)  # the renamed systems are in every design
        cells = {d: set(mine[mine["design"] == d]["decision"]) for d in DESIGNS}
        if any("flagged" in c for c in cells.values()):
            expected = "flagged"
        elif all(c == {"passed"} for c in cells.values()):
            expected = "passed"
        else:
            expected = "inconclusive"
        escaped = system.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
        (row,) = [r for r in rows if f'<td class="system">{escaped}</td>' in r]
        overall = re.search(r'<td class="overall"><span class="badge badge-[\w-]+">([\w-]+)',
                            row).group(1)  # fmt: skip
        assert overall == expected, (system, cells)


def test_page_one_of_the_pdf_holds_the_matrix(board: dict) -> None:
    need("pdftotext")
    first = pages(board["pdf"])[0]
    assert "Audit board report" in first.text
    for name in NAMES:
        assert name.replace(" ", "") in first.joined
    assert "Each cell is the stored verdict record" in first.text


def test_verify_covers_every_analysis_the_board_shows(board: dict, tmp_path: Path) -> None:
    """verify passes; then one design's analysis (not the one the report is registered
    under) gets another content digest, and the board report is named for it."""
    import shutil

    assert verify(make_engine(board["url"])).ok
    db = tmp_path / "copy.db"
    shutil.copy(Path(board["url"].removeprefix("sqlite:///")), db)
    engine = make_engine(f"sqlite:///{db}")
    with engine.begin() as conn:
        report_id, primary = conn.execute(text(
            "SELECT id, analysis_id FROM report WHERE path LIKE '%board%' ORDER BY id LIMIT 1"
        )).one()  # fmt: skip
        listed = [int(i) for i in re.findall(r'data-cuegap-analysis="(\d+)"', board["html"])]
        assert len(listed) >= 4 and primary in listed
        other = min(listed)
        assert other != primary
        conn.execute(text("UPDATE analysis SET content_digest = :d WHERE id = :i"),
                     {"d": "0" * 64, "i": other})  # fmt: skip
    assert f"analysis {other} no longer has the reported content" in check_report(engine, report_id)
    result = verify(engine)
    assert any(f"analysis {other} no longer has the content" in p for p in result.problems)


def test_signed_as_one_document(board: dict, tmp_path: Path) -> None:
    import shutil

    db = tmp_path / "signed.db"
    shutil.copy(Path(board["url"].removeprefix("sqlite:///")), db)
    url = f"sqlite:///{db}"
    engine = make_engine(url)
    with engine.connect() as conn:
        query = "SELECT id FROM report WHERE path LIKE '%board%' AND format = 'html'"
        (report_id,) = conn.execute(text(query)).one()
    cli("--db", url, "signoff", report_id, "--reviewer", "Ada", "--decision", "approve")
    cli("--db", url, "report", "--signed", report_id, "--out", tmp_path / "signed",
        "--format", "html")  # fmt: skip
    (signed,) = (tmp_path / "signed").glob("*.html")
    copy = signed.read_text("utf-8")
    assert content_hash(copy) == content_hash(board["html"])
    assert "Ada" in copy and "approve" in copy
    assert verify(engine).ok


def test_one_design_alone_with_design(board: dict, tmp_path: Path) -> None:
    out = cli("--db", board["url"], "report", "--design", "qa", "--out", tmp_path,
              "--format", "html")  # fmt: skip
    assert "Board report" not in out
    (path,) = tmp_path.glob("*.html")
    page = path.read_text("utf-8")
    assert 'class="data board-matrix"' not in page and "QA audit report" in page
    # alone, a design's report still shows the store's files (the board shows them once)
    assert page.count("<h3>Ingested files</h3>") == 1 and "qa_results.jsonl" in page


class _Ids(HTMLParser):
    """Every element id of a page, and every in-page reference (href="#x", url(#x))."""

    def __init__(self) -> None:
        super().__init__()
        self.ids: list[str] = []
        self.refs: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if name == "id" and value:
                self.ids.append(value)
            elif value and name in ("href", "xlink:href") and value.startswith("#"):
                self.refs.append(value[1:])
            elif value and "url(#" in value:
                self.refs.extend(re.findall(r"url\(#([^)]+)\)", value))


def test_every_id_is_unique_and_every_reference_resolves(board: dict) -> None:
    """Four designs' sections in one page (two of them with the same prompt-variance
    figures), yet no id twice, and each in-page link or SVG reference finds its element."""
    found = _Ids()
    found.feed(board["html"])
    repeated = sorted({i for i in found.ids if found.ids.count(i) > 1})
    assert repeated == []
    assert len(found.ids) > 100 and len(found.refs) > 10  # figures and links were checked
    assert sorted(set(found.refs) - set(found.ids)) == []
    for design in DESIGNS:  # each design's own page 1 is there, under its prefix
        assert f"{design}-verdict-page" in found.ids


def test_the_stores_data_tables_appear_once(board: dict) -> None:
    """Item banks, ingested files and quarantined lines are the whole store's: once in the
    board, in its provenance section, not once per design."""
    html = board["html"]
    assert html.count("<h3>Ingested files</h3>") == 1
    assert html.count("<h3>Item banks</h3>") == 1
    assert "Ingest passes" not in html and "Quarantined input lines" not in html
    store = html.index('id="board-store"')
    assert store > html.index('id="board-provenance"')
    for name in ("qa_results.jsonl", "responses_bbq.jsonl", "responses.jsonl"):
        assert html.count(f"/{name}</td>") == 1, name
    # the store's table keeps what each design's own table showed: the runner of each file,
    # as the store's runs table (read with SQL here) records it
    engine = make_engine(board["url"])
    with engine.connect() as conn:
        runners = {r for (r,) in conn.execute(text("SELECT DISTINCT runner FROM run"))}
    engine.dispose()
    section = html[store:]
    assert runners and all(f"<td>{r}" in section for r in runners), runners
    assert "<th>runner</th><th>run started</th>" in section
