"""The prompt-variance report on its own (``cuegap report --design prompt-variance``): page-1
summary, the prompt-variance section, provenance, methods and sign-off; escaped untrusted
names; real Chromium and PDF; the CLI.

Data: ``simulate_pv(systems=3, cue_gap=True, seed=3)`` (odd systems planted steady, even
ones fickle: ``truth.json``); after ingest ``sim-system-01`` is renamed to an HTML payload.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from sqlalchemy import text
from typer.testing import CliRunner

from cuegap.cli import app
from cuegap.designs.prompt_variance._analysis import analyze_prompt_variance
from cuegap.designs.prompt_variance._report import build_pv_report
from cuegap.designs.prompt_variance._simulate import simulate_pv
from cuegap.ingest import ingest_path
from cuegap.reports import render_files, render_html
from cuegap.schema import make_engine, upgrade
from tests.test_report import EVIL_SYSTEM, _chromium, assert_bidi_shown, need
from tests.test_report_pdf import pages

FILES = ("bbq_bank.jsonl", "diffAware_sim.jsonl", "responses_bbq.jsonl", "responses_da.jsonl")


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> dict:
    root = tmp_path_factory.mktemp("pvstandalone")
    simulate_pv(root / "sim", systems=3, cue_gap=True, seed=3)
    db = root / "pv.db"
    engine = make_engine(f"sqlite:///{db}")
    upgrade(engine)
    for name in FILES:
        ingest_path(engine, root / "sim" / name)
    with engine.begin() as conn:
        conn.execute(text("UPDATE system SET name = :e WHERE name = 'sim-system-01'"),
                     {"e": EVIL_SYSTEM})  # fmt: skip
    # Before any prompt-variance analysis, the CLI says what to run:
    before = CliRunner().invoke(app, ["--db", f"sqlite:///{db}", "report", "--design",
                                      "prompt-variance", "-o", str(root / "none")])  # fmt: skip
    result = analyze_prompt_variance(engine)
    rendered = render_html(build_pv_report(engine))
    pdf = root / "pv.pdf"
    pdf.write_bytes(render_files(rendered.html)["pdf"])
    truth = json.loads((root / "sim" / "truth.json").read_text())["planted_cue_gap"]
    engine.dispose()
    return {"html": rendered.html, "pdf": pdf, "truth": truth, "db": db, "result": result,
            "before": before}  # fmt: skip


def test_sections_in_house_order_and_no_qa_content(report: dict) -> None:
    html = report["html"]
    order = ['id="summary"', 'id="prompt-variance"', 'id="quality"', 'id="appendix-methods"',
             'id="signoff"']  # fmt: skip
    at = [html.index(x) for x in order]
    assert at == sorted(at)
    assert "Prompt-construction variance report" in html
    assert 'id="findings"' not in html and "Explicit vs implicit cue audit" not in html
    for fig in ("fig-pv-eta2", "fig-pv-rank-s_bbq_dis", "fig-pv-rank-s_diffaware"):
        assert f'<figure id="{fig}"><svg' in html, fig
    for table in ("pv-summary", "pv-anova-summary", "pv-cue-gap-formats", "pv-extremes"):
        assert f'id="{table}"' in html, table


def test_summary_counts_the_planted_fickle_gaps(report: dict) -> None:
    """truth.json: the even-numbered system (sim-system-02) has a format-driven gap."""
    fickle = sum(1 for planted in report["truth"].values() if planted["format_sd"] > 0)
    html = report["html"]
    summary = html[html.index('id="summary"') : html.index('id="prompt-variance"')]
    assert f"Of 3 systems with an explicit vs implicit gap, <strong>{fickle}</strong>" in summary
    table = html[html.index('id="pv-cue-gap-formats"') :]
    table = table[: table.index("</table>")]
    assert table.count("<td>yes</td>") == fickle
    assert "sim-system-02</td>" in re.search(r'<tr class="flip">.*?</tr>', table, re.S).group(0)


def test_summary_flip_counts_match_the_extremes_table(report: dict) -> None:
    """Page 1's "cells with a sign flip" per score = the extremes table's flip rows."""
    html = report["html"]
    ext = html[html.index('id="pv-extremes"') :]
    ext = ext[: ext.index("</table>")]
    summary = html[html.index('id="pv-summary"') :]
    summary = summary[: summary.index("</table>")]
    for metric in ("s_BBQ_dis", "s_BBQ_amb"):
        rows = re.findall(rf"<tr class=\"(flip)?\"><td>{metric}</td>", ext)
        flips = sum(1 for r in rows if r)
        row = re.search(rf"<td>{metric}</td>(.*?)</tr>", summary, re.S).group(1)
        assert f">{flips}/{len(rows)}<" in row, (metric, row)


def test_untrusted_names_are_text_and_chromium_runs_no_payload(report: dict, tmp_path) -> None:
    html = report["html"]
    assert EVIL_SYSTEM not in html and "&lt;img src=x onerror=" in html
    assert_bidi_shown(html)  # the name's right-to-left override, neutralised
    ids = re.findall(r'\bid="([^"]+)"', html)
    assert len(ids) == len(set(ids))
    page = tmp_path / "pv.html"
    page.write_text(re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", html))
    out = _chromium("--dump-dom", page.as_uri())
    assert out.returncode == 0, out.stderr[-2000:]
    assert "Prompt-construction variance report" in out.stdout
    assert "data-pwned" not in re.search(r"<html[^>]*>", out.stdout).group(0)
    assert_bidi_shown(out.stdout)


def test_pdf_pages_keep_their_words_and_numbers(report: dict) -> None:
    need("pdftotext")
    all_pages = pages(report["pdf"])
    assert_bidi_shown(" ".join(p.text for p in all_pages))
    text_all = " ".join(p.text for p in all_pages)
    # page 1 is the verdict page every design's report opens with; the title follows it
    assert all_pages[0].text.startswith("Verdicts Report id CG-")
    assert text_all.index("Verdicts") < text_all.index("Prompt-construction variance report")
    assert text_all.index("Prompt-construction variance report") < text_all.index("Figure P1")
    assert "Figure P1" in text_all and "Sign-off" in text_all
    for page in all_pages:
        assert f"page {page.number} of {len(all_pages)}" in page.text
        for word, x0, y0, x1, y1 in page.words:
            assert x0 >= 0 and y0 >= 0 and x1 <= page.width + 0.5, (page.number, word)
            assert y1 <= page.height + 0.5, (page.number, word)


def test_cli_report_design_prompt_variance_writes_the_standalone_report(
    report: dict, tmp_path: Path
) -> None:
    db = ["--db", f"sqlite:///{report['db']}"]
    out = tmp_path / "r"
    res = CliRunner().invoke(app, [*db, "report", "--design", "prompt-variance", "-o", str(out),
                                   "-f", "html"])  # fmt: skip
    assert res.exit_code == 0, res.output
    html = next(out.glob("*.html")).read_text()
    assert "Prompt-construction variance report" in html and 'id="findings"' not in html
    assert f"CG-{report['result'].id}-" in html


def test_cli_report_without_a_prompt_variance_analysis_says_what_to_run(report: dict) -> None:
    res = report["before"]
    assert res.exit_code != 0
    assert "run cuegap analyze --design prompt-variance" in res.output


def test_report_under_another_policy_reruns_the_analysis_with_it(
    report: dict, tmp_path: Path
) -> None:
    """--policy with a wider δ (0.2 on the bias-score scale): a new prompt-variance analysis
    with that policy, same factors, and its report."""
    from sqlalchemy import select

    from cuegap.models import Policy
    from cuegap.schema import Analysis

    db = tmp_path / "copy.db"
    source = make_engine(f"sqlite:///{report['db']}")
    with source.connect() as conn:  # the store may still have a WAL: copy through SQLite
        conn.exec_driver_sql(f"VACUUM INTO '{db}'")
    source.dispose()
    policy = tmp_path / "policy.toml"
    policy.write_text(Policy(delta_bias=0.2).to_toml())
    res = CliRunner().invoke(app, ["--db", f"sqlite:///{db}", "report", "--design",
                                   "prompt-variance", "--policy", str(policy), "-o",
                                   str(tmp_path / "r"), "-f", "html"])  # fmt: skip
    assert res.exit_code == 0, res.output
    engine = make_engine(f"sqlite:///{db}")
    with engine.connect() as conn:
        rows = conn.execute(
            select(Analysis.id, Analysis.settings).where(Analysis.kind == "prompt_variance")
        ).all()
    engine.dispose()
    assert len(rows) == 2
    first, second = (r.settings for r in sorted(rows))
    assert second["policy"]["delta_bias"] == 0.2 and second["factors"] == first["factors"]
    html = next((tmp_path / "r").glob("*.html")).read_text()
    assert f"CG-{max(r.id for r in rows)}-" in html and "δ = 0.2" in html
