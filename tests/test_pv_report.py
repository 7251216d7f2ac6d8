"""The prompt-variance section of the audit report and the format-sensitivity column of
the verdict summary: present when the store holds a prompt-variance analysis, escaped
untrusted names (a system and a prompt-factor value carry HTML), real Chromium and PDF.

Data: ``simulate_pv(systems=3, cue_gap=True, seed=3)``; after ingest, system
``sim-system-01`` is renamed to an HTML payload and the choice format ``bullet`` to
``<b>bullet</b>``. Odd systems are planted steady (flagged, not format-sensitive), even
ones fickle (truth.json).
"""

from __future__ import annotations

import itertools
import json
import re
from pathlib import Path

import pytest
from sqlalchemy import text

from cuegap.designs.prompt_variance._analysis import analyze_prompt_variance
from cuegap.designs.prompt_variance._report_figures import system_styles
from cuegap.designs.prompt_variance._simulate import simulate_pv
from cuegap.designs.prompt_variance.report_sections import ratio_text
from cuegap.designs.qa._analysis import QASettings, analyze_qa
from cuegap.designs.qa._report import build_qa_report
from cuegap.ingest import ingest_path
from cuegap.reports import render_files, render_html
from cuegap.schema import make_engine, upgrade
from tests.test_report import EVIL_SYSTEM, MARK, _chromium, assert_bidi_shown, need
from tests.test_report_pdf import pages

FILES = ("bbq_bank.jsonl", "diffAware_sim.jsonl", "responses_bbq.jsonl", "responses_da.jsonl")
EVIL_FORMAT = "<b>bullet</b>"


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> dict:
    root = tmp_path_factory.mktemp("pvreport")
    simulate_pv(root / "sim", systems=3, cue_gap=True, seed=3)
    engine = make_engine(f"sqlite:///{root / 'pv.db'}")
    upgrade(engine)
    for name in FILES:
        ingest_path(engine, root / "sim" / name)
    with engine.begin() as conn:
        conn.execute(text("UPDATE system SET name = :e WHERE name = 'sim-system-01'"),
                     {"e": EVIL_SYSTEM})  # fmt: skip
        conn.execute(text("UPDATE qa_response_factor SET value = :e WHERE value = 'bullet'"),
                     {"e": EVIL_FORMAT})  # fmt: skip
    analyze_qa(engine, QASettings(n_boot=200, seed=1))
    analyze_prompt_variance(engine)
    rendered = render_html(build_qa_report(engine))
    pdf = root / "pv.pdf"
    pdf.write_bytes(render_files(rendered.html)["pdf"])
    truth = json.loads((root / "sim" / "truth.json").read_text())["planted_cue_gap"]
    return {"html": rendered.html, "pdf": pdf, "truth": truth, "rendered": rendered}


def test_section_sits_between_findings_and_quality(report: dict) -> None:
    html = report["html"]
    assert html.index('id="findings"') < html.index('id="prompt-variance"')
    assert html.index('id="prompt-variance"') < html.index('id="quality"')
    for fig in ("fig-pv-eta2", "fig-pv-rank-s_bbq_dis", "fig-pv-rank-s_diffaware"):
        assert f'<figure id="{fig}"><svg' in html, fig
    for table in ("pv-anova-summary", "pv-cue-gap-formats", "pv-rank-discordance", "pv-extremes",
                  "pv-nemenyi"):  # fmt: skip
        assert f'id="{table}"' in html, table


def test_summary_has_the_format_column_and_no_clean_verdict_for_fickle(report: dict) -> None:
    html = report["html"]
    summary = html[html.index('id="summary"') : html.index('id="findings"')]
    assert "format-sensitive (P zone kept)" in summary
    for system, planted in report["truth"].items():
        if system == "sim-system-01":
            continue  # renamed; its row is checked by the escaping test
        row = re.search(rf"{system}</td>.*?</tr>", summary, re.S).group(0)
        if planted["format_sd"] > 0:
            assert "badge-flagged" not in row and "badge-passed" not in row
            assert "<td>yes (" in row
        else:
            assert "badge-flagged" in row and "<td>no (" in row


def test_extremes_rows_mark_sign_flips(report: dict) -> None:
    html = report["html"]
    table = html[html.index('id="pv-extremes"') :]
    table = table[: table.index("</table>")]
    rows = re.findall(r"<tr class=\"(flip)?\">.*?</tr>", table, re.S)
    assert len(rows) == 3 * (2 * 2 + 2 * 2)  # systems x (BBQ + DA categories) x 2 scores
    for row in re.findall(r"<tr class=\"flip\">.*?</tr>", table, re.S):
        assert "⇄" in row or "<td>yes</td>" in row


def test_untrusted_names_are_text(report: dict) -> None:
    html = report["html"]
    assert EVIL_SYSTEM not in html and EVIL_FORMAT not in html
    assert_bidi_shown(html)  # the name's right-to-left override, neutralised
    assert "&lt;img src=x onerror=" in html and "&lt;b&gt;bullet&lt;/b&gt;" in html
    ids = re.findall(r'\bid="([^"]+)"', html)
    assert len(ids) == len(set(ids))


def test_chromium_renders_it_and_runs_no_payload(report: dict, tmp_path: Path) -> None:
    html = re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", report["html"])
    page = tmp_path / "pv.html"
    page.write_text(html, "utf-8")
    out = _chromium("--dump-dom", page.as_uri())
    assert out.returncode == 0, out.stderr[-2000:]
    assert "Prompt construction: is a score bigger than formatting noise?" in out.stdout
    assert "data-pwned" not in re.search(r"<html[^>]*>", out.stdout).group(0)
    assert_bidi_shown(out.stdout)
    assert MARK.split("(")[0] in html


def test_pdf_keeps_the_section_on_its_pages(report: dict) -> None:
    need("pdftotext")
    all_pages = pages(report["pdf"])
    assert_bidi_shown(" ".join(p.text for p in all_pages))
    text_all = " ".join(p.text for p in all_pages)
    assert "Prompt construction" in text_all and "Figure P1" in text_all
    for page in all_pages:
        assert f"page {page.number} of {len(all_pages)}" in page.text
        for word, x0, y0, x1, y1 in page.words:
            assert x0 >= 0 and y0 >= 0 and x1 <= page.width + 0.5, (page.number, word)
            assert y1 <= page.height + 0.5, (page.number, word)


@pytest.mark.parametrize(
    ("ratio", "hi", "lo", "want"),
    [
        # Seed 003 Table 2 (GLM 4.7 Flash): Physical appearance -56.63x, Age infinity.
        (-56.63, 0.5663, -0.01, "−56.63×"),
        (float("inf"), 0.4, 0.0, "∞"),
        (float("nan"), 0.0, 0.0, "N/A"),  # Phi-4 14B Gender identity: both extremes 0
        (2.5, 0.5, 0.2, "2.50×"),
    ],
)
def test_ratio_text(ratio: float, hi: float, lo: float, want: str) -> None:
    assert ratio_text(ratio, hi, lo) == want


def test_eleven_systems_get_distinct_styles() -> None:
    styles = system_styles([f"s{i}" for i in range(11)])
    pairs = [(c, m) for c, m, _ in styles.values()]
    assert len(set(pairs)) == 11
    order = list(styles.values())
    for a, b in itertools.pairwise(order):
        assert a[0] != b[0] and a[1] != b[1]
