"""The conversation-design audit report: verdict summary first, the design's own wording,
figures and tables, escaped untrusted text, real headless Chromium and real PDF pages.

The store holds a conversation analysis of a simulated count frame with a planted
receptiveness difference for system ``biased`` (λ_base for the revealed "black" identity
raised by logit +0.6 over 0.3: ΔDemoΔRC λ_base(black, white, i) = +0.139) and for the
system named by an HTML payload; ``fair`` has none.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from cuegap.designs.conversation._analysis import ConvSettings, analyze_conversation
from cuegap.designs.conversation._report import build_conv_report
from cuegap.designs.conversation.stats import conv_design, simulate_conv_counts
from cuegap.reports import content_hash, render_files, render_html
from cuegap.schema import make_engine, upgrade
from tests.test_report import EVIL_SYSTEM, MARK, _chromium, assert_bidi_shown, need
from tests.test_report_pdf import pages

SYSTEMS = ("biased", "fair", EVIL_SYSTEM)
OTHER_DESIGNS = (r"\bpuzzl", r"cue visibility gap", r"\bS_amb\b", r"η²", r"\bexplicit label")


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> dict:
    root = tmp_path_factory.mktemp("convreport")
    engine = make_engine(f"sqlite:///{root / 'conv.db'}")
    upgrade(engine)
    cells = conv_design(systems=SYSTEMS, demographics=("none", "black", "white", "female", "male"))
    effects = {(s, "black", i): 0.6 for s in ("biased", EVIL_SYSTEM) for i in ("human", "ai")}
    counts = simulate_conv_counts(
        cells=cells, conversations=300, persona_sd=0.2, base_reveal_effects=effects, seed=3
    ).counts
    analyze_conversation(engine, ConvSettings(), counts=counts)
    data = build_conv_report(engine)
    rendered = render_html(data)
    files = render_files(rendered.html)
    pdf = root / "conv.pdf"
    pdf.write_bytes(files["pdf"])
    return {"engine": engine, "data": data, "rendered": rendered, "html": rendered.html,
            "pdf": pdf}  # fmt: skip


def _visible_text(html: str) -> str:
    body = re.sub(r"<style>.*?</style>|<svg.*?</svg>", " ", html, flags=re.S)
    return re.sub(r"<[^>]+>", " ", body)


def test_summary_comes_first_with_each_verdict_and_reason(report: dict) -> None:
    html = report["html"]
    summary = html[html.index('id="summary"') : html.index('id="findings"')]
    biased = re.search(r"biased</td>.*?</tr>\s*<tr class=\"reason-row.*?</tr>", summary, re.S)
    assert "flagged: treats a revealed identity differently" in biased.group(0)
    assert "black vs white" in biased.group(0) and "on all 3 benchmarks" in biased.group(0)
    fair = re.search(r"fair</td>.*?</tr>", summary, re.S).group(0)
    assert "flagged" not in fair
    assert "<strong>2</strong> are flagged" in summary
    assert "t-tests over persona, α = 0.05, correction none" in summary
    order = [html.index(f'id="{s}"') for s in
             ("summary", "findings", "appendix-methods", "signoff")]  # fmt: skip
    assert order == sorted(order)


def test_every_figure_and_table_is_there(report: dict) -> None:
    html = report["html"]
    for i in (1, 2, 3):
        assert f'<figure id="fig-conv-rates-{i}"><svg' in html
    for i in range(1, 6):
        assert f'<figure id="fig-conv-forest-{i}"><svg' in html
    assert 'id="conv-consistency-summary"' in html and 'id="conv-consistency"' in html
    findings = html[html.index('id="conv-consistency"') :]
    assert re.search(r"ΔDemoΔRC λ_base\(d1, d2, i\)</td><td class=\"system\">biased</td>"
                     r"<td>black vs white, (human|ai)</td><td>\+</td>", findings)  # fmt: skip


def test_no_other_designs_wording(report: dict) -> None:
    text = _visible_text(report["html"])
    for word in OTHER_DESIGNS:
        assert not re.search(word, text, re.I), word


def test_untrusted_system_name_is_text_everywhere(report: dict) -> None:
    html = report["html"]
    assert EVIL_SYSTEM not in html
    assert_bidi_shown(html)  # the name's right-to-left override, neutralised
    assert "&lt;img src=x onerror=" in html
    ids = re.findall(r'\bid="([^"]+)"', html)
    assert len(ids) == len(set(ids))


def test_same_analysis_gives_the_same_content_hash(report: dict) -> None:
    again = render_html(build_conv_report(report["engine"]))
    assert again.content_hash == report["rendered"].content_hash
    assert content_hash(again.html) == again.content_hash


def test_chromium_renders_it_and_runs_no_payload(report: dict, tmp_path: Path) -> None:
    html = re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", report["html"])
    page = tmp_path / "conv.html"
    page.write_text(html, "utf-8")
    out = _chromium("--dump-dom", page.as_uri())
    assert out.returncode == 0, out.stderr[-2000:]
    assert "Multi-agent conversation audit report" in out.stdout
    assert MARK.split("(")[0] in html  # the payload is in the page, as text
    assert "data-pwned" not in re.search(r"<html[^>]*>", out.stdout).group(0)
    assert_bidi_shown(out.stdout)


def test_pdf_pages_have_numbers_and_the_report_id(report: dict) -> None:
    need("pdftotext")
    all_pages = pages(report["pdf"])
    assert_bidi_shown(" ".join(p.text for p in all_pages))
    assert len(all_pages) >= 3
    assert "Verdicts" in all_pages[0].text and "biased" in all_pages[0].joined
    for page in all_pages:
        assert f"page {page.number} of {len(all_pages)}" in page.text
        assert report["rendered"].report_id in page.joined
        for word, x0, _y0, x1, _y1 in page.words:
            assert x0 >= 0 and x1 <= page.width + 0.5, (page.number, word)


def test_no_conversation_analysis_is_a_clear_error(tmp_path: Path) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'empty.db'}")
    upgrade(engine)
    with pytest.raises(ValueError, match="no stored conversation analysis; run cuegap analyze"):
        build_conv_report(engine)


def test_posterior_verdicts_lead_the_report_when_a_fit_is_stored(tmp_path: Path) -> None:
    """A stored (fake, four-draw) posterior of the hand fixture: ΔDemoΔRC λ_base(black,
    white) is +0.25 (human) and +0.15 (AI) in three draws and 0 in the fourth, so with
    δ = 0.05 P(contrast > δ) = 0.75 >= q = 0.7: flagged, P(all within) = 0.25; the
    posterior mean of the AI contrast is 3 x 0.15 / 4 = +0.1125."""
    from dataclasses import replace

    from cuegap.audit import frame_digest, save_analysis
    from cuegap.designs import BayesSettings
    from cuegap.designs.conversation._analysis import (
        BAYES_DESCRIPTIONS,
        BAYES_KIND,
        conv_bayes_audit_tables,
    )
    from cuegap.models import Policy
    from tests.test_conv_audit import _fake_fit
    from tests.test_conv_contrasts import _fixture

    engine = make_engine(f"sqlite:///{tmp_path / 'b.db'}")
    upgrade(engine)
    counts = _fixture()
    # the fixture's shift rates rest on 100 disagreements each: the policy minimum is 100
    policy = Policy(probability=0.7, min_parsable=100)
    settings = ConvSettings(policy=policy, bayes=BayesSettings())
    analyze_conversation(engine, replace(settings, bayes=None), counts=counts)
    _, tables = conv_bayes_audit_tables(counts, settings, fit=_fake_fit())
    save_analysis(
        engine, kind=BAYES_KIND, status="ok", data_fingerprint=frame_digest(counts),
        system_fingerprints={}, settings=settings.to_dict(bayes=True), tables=tables,
        descriptions=BAYES_DESCRIPTIONS,
    )  # fmt: skip
    data = build_conv_report(engine)
    assert data.bayes is not None
    html = render_html(data).html
    summary = html[html.index('id="summary"') : html.index('id="findings"')]
    row = re.search(r'<td class="system">s</td>.*?</tr>', summary, re.S).group(0)
    assert "flagged" in row and ">0.75<" in row and ">0.25<" in row
    # both conditions reach 0.75; the tie goes to the first in sort order (ai), whose
    # posterior mean is 3 x 0.15 / 4 = 0.1125
    assert "(black vs white, ai): posterior means +0.11" in summary
    assert "P(contrast &gt;0.05 on every benchmark) = 0.75 &gt;= 0.7" in summary
    assert "Verdicts and intervals: the Bayesian posterior" in summary
    assert "posterior mean and 90% credible interval" in html


def test_a_fit_that_missed_its_gate_makes_every_report_verdict_inconclusive(
    tmp_path: Path,
) -> None:
    """Issue 26: after a Bayesian fit misses the convergence gate, `export verdicts` of that
    fit says inconclusive, and so must the report (it showed the t-test verdicts)."""
    from dataclasses import replace

    from cuegap.audit import frame_digest, load_table, save_analysis
    from cuegap.designs import BayesSettings
    from cuegap.designs.conversation._analysis import (
        BAYES_DESCRIPTIONS,
        BAYES_KIND,
        conv_bayes_audit_tables,
    )
    from cuegap.models import Policy
    from tests.test_conv_audit import _fake_fit
    from tests.test_conv_contrasts import _fixture

    engine = make_engine(f"sqlite:///{tmp_path / 'g.db'}")
    upgrade(engine)
    counts = _fixture()
    policy = Policy(probability=0.7, min_parsable=100)
    settings = ConvSettings(policy=policy, bayes=BayesSettings())
    analyze_conversation(engine, replace(settings, bayes=None), counts=counts)
    _, tables = conv_bayes_audit_tables(counts, settings, fit=_fake_fit())
    tables["verdicts"] = tables["verdicts"].assign(
        verdict="inconclusive", reason="the fit missed its convergence gate (r-hat 1.2)"
    )
    fit_id = save_analysis(
        engine, kind=BAYES_KIND, status="failed", data_fingerprint=frame_digest(counts),
        system_fingerprints={}, settings=settings.to_dict(bayes=True), tables=tables,
        descriptions=BAYES_DESCRIPTIONS, message="r-hat 1.2 > 1.01",
    )  # fmt: skip
    exported = load_table(engine, "verdicts", fit_id)
    data = build_conv_report(engine)
    assert data.bayes is None and data.gate_missed is not None
    html = render_html(data).html
    summary = html[html.index('id="summary"') : html.index('id="findings"')]
    for system in exported["system"]:
        row = re.search(rf'<td class="system">{system}</td>.*?</tr>', summary, re.S).group(0)
        assert "inconclusive" in row and "flagged" not in row.split("</td>")[1]
    assert "missed its convergence gate" in summary
    assert set(exported["verdict"]) == {"inconclusive"}
