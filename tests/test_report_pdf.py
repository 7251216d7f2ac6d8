"""The signed PDF report as a reader sees it: page furniture and long untrusted strings.

The stylesheet used to be HTML-escaped inside ``<style>``, so the PDF had no page numbers
and no report id on its pages; and a reviewer name of 143 characters without a space
pushed the decision, the hashes and the comment off the page, so a "reject" was
invisible. The report is made, signed and re-rendered signed through the real CLI, and
read back with poppler's ``pdftotext -raw -bbox`` (word boxes, in drawing order).
"""

from __future__ import annotations

import html
import json
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cuegap.cli import app
from cuegap.compliance import signoffs
from cuegap.designs.dilemma._analysis import analyze
from cuegap.designs.dilemma._analysis_settings import AnalysisSettings
from cuegap.designs.dilemma.simulate import simulate, synthetic_item_bank
from cuegap.ingest import ingest_path
from cuegap.schema import make_engine, upgrade
from tests.test_report import need

# 143 characters without a space, as in the issue
LONG_REVIEWER = "Reviewer" + "".join(chr(ord("a") + i % 26) for i in range(132)) + "END"
LONG_SYSTEM = "system-" + "Q" * 100 + "-tail"
COMMENT = "Rejected because " + "W" * 120 + " see the board minutes of 2026-03-01"


@dataclass
class Page:
    number: int
    width: float
    height: float
    words: list[tuple[str, float, float, float, float]]  # text, xMin, yMin, xMax, yMax

    @property
    def text(self) -> str:
        return " ".join(w[0] for w in self.words)

    @property
    def joined(self) -> str:
        """The words run together: a string wrapped over lines is found whole."""
        return "".join(w[0] for w in self.words)


_PAGE = re.compile(r'<page width="([\d.]+)" height="([\d.]+)">(.*?)</page>', re.S)
_WORD = re.compile(
    r'<word xMin="([\d.-]+)" yMin="([\d.-]+)" xMax="([\d.-]+)" yMax="([\d.-]+)">(.*?)</word>'
)


def pages(pdf: Path) -> list[Page]:
    out = subprocess.run(
        [need("pdftotext"), "-raw", "-bbox", str(pdf), "-"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return [
        Page(
            i,
            float(w),
            float(h),
            [
                (html.unescape(t), float(a), float(b), float(c), float(d))
                for a, b, c, d, t in _WORD.findall(body)
            ],
        )
        for i, (w, h, body) in enumerate(_PAGE.findall(out), start=1)
    ]


def cli(db: Path, *args: str) -> str:
    result = CliRunner().invoke(app, ["--db", f"sqlite:///{db}", *args], env={"COLUMNS": "300"})
    assert result.exit_code == 0, result.output
    return result.output


@pytest.fixture(scope="module")
def signed(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """A report of a small simulated audit (one system with a 112-character name), signed
    twice (a long-named reviewer rejects, Ada approves), re-rendered signed as PDF."""
    root = tmp_path_factory.mktemp("signed-pdf")
    bank = synthetic_item_bank(seed=5, n_dilemmas=20)
    sim = simulate(root / "sim", systems=3, seed=5, item_bank=bank)
    text = sim.responses_path.read_text("utf-8")
    sim.responses_path.write_text(
        text.replace(json.dumps("sim-system-02"), json.dumps(LONG_SYSTEM)), "utf-8"
    )
    db = root / "store.db"
    engine = make_engine(f"sqlite:///{db}")
    upgrade(engine)
    for path in (sim.itembank_path, sim.responses_path):
        ingest_path(engine, path)
    analyze(engine, AnalysisSettings(n_boot=5))
    first = cli(db, "report", "--out", str(root / "draft"), "--format", "html")
    report_id = re.search(r"HTML report (\d+):", first).group(1)
    cli(db, "signoff", report_id, "--reviewer", LONG_REVIEWER, "--decision", "reject",
        "--comment", COMMENT)  # fmt: skip
    cli(db, "signoff", report_id, "--reviewer", "Ada", "--decision", "approve")
    out = cli(db, "report", "--signed", report_id, "--out", str(root / "signed"), "-f", "pdf")
    pdf = Path(re.search(r"PDF report \d+: (.+\.pdf)", out).group(1).strip())
    records = signoffs(engine)
    engine.dispose()
    return {"pdf": pdf, "pages": pages(pdf), "records": records}


def test_every_page_has_its_number_and_the_report_id(signed: dict) -> None:
    all_pages = signed["pages"]
    assert len(all_pages) >= 5
    report_id = re.search(r"CG-\d+-[0-9a-f]{12}", all_pages[0].text).group(0)
    for page in all_pages:
        assert f"page {page.number} of {len(all_pages)}" in page.text, page.number
        assert f"cuegap · {report_id}" in page.text, page.number


def test_no_text_leaves_the_page(signed: dict) -> None:
    for page in signed["pages"]:
        for word, x0, y0, x1, y1 in page.words:
            assert x0 >= 0 and y0 >= 0, (page.number, word)
            assert x1 <= page.width + 0.5 and y1 <= page.height + 0.5, (page.number, word)


def test_signoff_page_shows_decisions_hashes_and_comment_despite_a_long_reviewer(
    signed: dict,
) -> None:
    page = next(p for p in signed["pages"] if p.text.startswith("Sign-off"))
    joined = page.joined
    rejected, approved = signed["records"]
    assert rejected.reviewer == LONG_REVIEWER and rejected.decision == "reject"
    assert LONG_REVIEWER + "reject" in joined  # the decision right after the name
    assert "Ada" + "approve" in joined
    for rec in (rejected, approved):
        assert rec.record_hash in joined and rec.report_sha256 in joined
    assert "".join(COMMENT.split()) in joined


def test_a_long_system_name_wraps_in_the_summary(signed: dict) -> None:
    summary = next(p for p in signed["pages"] if "Executive summary" in p.text)
    assert LONG_SYSTEM in summary.joined
