"""The QA-design audit report: verdict summary first, the design's own wording, escaped
untrusted text, real headless Chromium and real PDF pages.

The store holds a QA analysis computed from a hand-made count table whose gaps are known
exactly: system ``implied-biased`` answers ambiguous explicit items 90 % unknown, 6 %
stereotyped, 4 % anti-stereotyped (S_amb = 0.02) and implicit items 30 / 50 / 20 %
(S_amb = 0.30): G = 0.28. ``steady`` answers both alike (G = 0)."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest

from cuegap.audit import frame_digest, save_analysis
from cuegap.designs.qa._analysis import DESCRIPTIONS, KIND, QASettings, qa_tables
from cuegap.designs.qa._report import build_qa_report
from cuegap.reports import content_hash, render_files, render_html
from cuegap.schema import make_engine, upgrade
from tests.test_report import EVIL_SYSTEM, MARK, _chromium, assert_bidi_shown, need
from tests.test_report_pdf import pages

N = 1000  # answers per cell: bootstrap SDs of about 0.01, so the verdicts are clear
DIMENSIONS = ("age", "caste")
#: (unknown, stereotyped, anti) shares of ambiguous answers per (system kind, cue).
AMBIGUOUS = {
    ("biased", "explicit"): (0.90, 0.06, 0.04),
    ("biased", "implicit"): (0.30, 0.50, 0.20),
    ("steady", "explicit"): (0.90, 0.06, 0.04),
    ("steady", "implicit"): (0.90, 0.06, 0.04),
}
SYSTEMS = {"implied-biased": "biased", "steady": "steady", EVIL_SYSTEM: "biased"}
DILEMMA_WORDS = (
    r"\bdilemma", r"\bpuzzl", r"\bdirect\b", r"\bperformative", r"cue visibility gap",
    r"\bfavou?r\b", r"\bneutral decision",
)  # fmt: skip


def _counts() -> pd.DataFrame:
    rows = []
    for system, kind in SYSTEMS.items():
        for strategy in ("zero-shot", "safety"):
            scale = 1.0 if strategy == "zero-shot" else 0.5
            for cue in ("explicit", "implicit", "control_none"):
                shares = AMBIGUOUS.get((kind, cue), (0.95, 0.03, 0.02))
                u, st, anti = shares
                st, anti = (
                    st * scale + (1 - scale) * (st + anti) / 2,
                    anti * scale + (1 - scale) * (st + anti) / 2,
                )
                for dim in DIMENSIONS:
                    cell = dict(system=system, strategy=strategy, cue=cue, dimension=dim)
                    cell |= dict(subgroup="g", polarity="negative")
                    for answer, share in (("unknown", u), ("target", st), ("non_target", anti)):
                        rows.append(cell | dict(context="ambiguous", gold="unknown",
                                                answer=answer, n=round(N * share)))  # fmt: skip
                    for answer, share in (("target", 0.9), ("non_target", 0.08), ("unknown", 0.02)):
                        rows.append(cell | dict(context="disambiguated", gold="target",
                                                answer=answer, n=round(N * share)))  # fmt: skip
    return pd.DataFrame(rows)


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> dict:
    root = tmp_path_factory.mktemp("qareport")
    engine = make_engine(f"sqlite:///{root / 'qa.db'}")
    upgrade(engine)
    counts = _counts()
    settings = QASettings(n_boot=200, seed=5)
    save_analysis(
        engine, kind=KIND, status="ok", data_fingerprint=frame_digest(counts),
        system_fingerprints={}, settings=settings.to_dict(),
        tables=qa_tables(counts, settings), descriptions=DESCRIPTIONS,
    )  # fmt: skip
    data = build_qa_report(engine)
    rendered = render_html(data)
    files = render_files(rendered.html)
    pdf = root / "qa.pdf"
    pdf.write_bytes(files["pdf"])
    return {"engine": engine, "data": data, "rendered": rendered, "html": rendered.html,
            "pdf": pdf, "root": root}  # fmt: skip


def _visible_text(html: str) -> str:
    body = re.sub(r"<style>.*?</style>|<svg.*?</svg>", " ", html, flags=re.S)
    return re.sub(r"<[^>]+>", " ", body)


def test_summary_comes_first_with_each_verdict_and_its_gap(report: dict) -> None:
    html = report["html"]
    summary = html[html.index('id="summary"') : html.index('id="findings"')]
    # G = 0.30 - 0.02 = 0.28 exactly for the biased systems; 0 for steady.
    biased = re.search(r"implied-biased</td>.*?</tr>", summary, re.S).group(0)
    assert "flagged" in biased and "+0.280" in biased
    steady = re.search(r"steady</td>.*?</tr>", summary, re.S).group(0)
    assert "passed" in steady and re.search(r"[+-]0\.00\d? \[", steady)
    assert "<strong>2</strong> are flagged" in summary
    assert html.index('id="summary"') < html.index('id="findings"') < html.index('id="quality"')
    assert (
        html.index('id="quality"')
        < html.index('id="appendix-methods"')
        < html.index('id="signoff"')
    )


def test_every_figure_and_table_is_there(report: dict) -> None:
    html = report["html"]
    for fig in ("fig-gap", "fig-cues", "fig-heatmap", "fig-strategies"):
        assert f'<figure id="{fig}"><svg' in html, fig
    for table in ("qa-scores-ambiguous", "qa-scores-disambiguated", "qa-controls"):
        assert f'id="{table}"' in html, table
    mitigation = html[html.index('id="qa-mitigation"') :]
    # safety halves the stereotyped-minus-anti share of every cell: a 50 % reduction.
    assert re.search(r"<td>safety</td><td>implicit</td><td>s_amb</td>.*?50 %", mitigation)


def test_no_other_designs_wording(report: dict) -> None:
    text = _visible_text(report["html"]).lower()
    for word in DILEMMA_WORDS:
        assert not re.search(word, text), word


def test_untrusted_system_name_is_text_everywhere(report: dict) -> None:
    html = report["html"]
    assert EVIL_SYSTEM not in html
    assert_bidi_shown(html)  # the name's right-to-left override, neutralised
    assert "&lt;img src=x onerror=" in html
    ids = re.findall(r'\bid="([^"]+)"', html)
    assert len(ids) == len(set(ids))


def test_same_analysis_gives_the_same_content_hash(report: dict) -> None:
    again = render_html(build_qa_report(report["engine"]))
    assert again.content_hash == report["rendered"].content_hash
    assert content_hash(again.html) == again.content_hash


def test_chromium_renders_it_and_runs_no_payload(report: dict, tmp_path: Path) -> None:
    html = re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", report["html"])
    page = tmp_path / "qa.html"
    page.write_text(html, "utf-8")
    out = _chromium("--dump-dom", page.as_uri())
    assert out.returncode == 0, out.stderr[-2000:]
    assert "Explicit vs implicit cue audit report" in out.stdout
    assert MARK.split("(")[0] in html  # the payload is in the page, as text
    assert "data-pwned" not in re.search(r"<html[^>]*>", out.stdout).group(0)
    assert_bidi_shown(out.stdout)


def test_pdf_pages_have_numbers_the_report_id_and_keep_text_on_the_page(report: dict) -> None:
    need("pdftotext")
    all_pages = pages(report["pdf"])
    assert_bidi_shown(" ".join(p.text for p in all_pages))
    assert len(all_pages) >= 4
    report_id = report["rendered"].report_id
    assert "Verdicts" in all_pages[0].text and "implied-biased" in all_pages[0].joined
    for page in all_pages:
        assert f"page {page.number} of {len(all_pages)}" in page.text
        assert report_id in page.joined
        for word, x0, y0, x1, y1 in page.words:
            assert x0 >= 0 and y0 >= 0 and x1 <= page.width + 0.5, (page.number, word)
            assert y1 <= page.height + 0.5, (page.number, word)


def test_no_qa_analysis_is_a_clear_error(tmp_path: Path) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'empty.db'}")
    upgrade(engine)
    with pytest.raises(ValueError, match="there is no stored QA analysis; run cuegap analyze"):
        build_qa_report(engine)


def _store_fit(engine, data, *, converged: bool) -> int:
    """A QA Bayesian fit of the report's data and policy, stored directly: one that missed
    the convergence gate (every verdict inconclusive, as ``analyze_qa_bayes`` stores it) or
    one that converged (posterior verdicts that differ from the bootstrap's on purpose:
    every system flagged)."""
    boot = data.tables["verdicts"]
    message = "r-hat 1.08 > 1.01 after the retry (gate: r-hat <= 1.01, bulk ESS >= 400)"
    if converged:
        verdicts = boot.assign(verdict="flagged", reason="posterior: P(gap > 0.05) = 0.99")
    else:
        reason = "the Bayesian fit did not pass the convergence gate: " + message
        verdicts = boot.assign(verdict="inconclusive", reason=reason)
    gap = boot[["system", "gap", "gap_low", "gap_high"]].assign(rank=1.0, rank_low=1.0,
                                                                rank_high=3.0)  # fmt: skip
    r_hat = 1.004 if converged else 1.08
    diag = pd.DataFrame(
        [{"attempt": 1, "r_hat_max": r_hat, "ess_bulk_min": 900.0, "divergences": 0,
          "passed": converged}]
    )  # fmt: skip
    return save_analysis(
        engine, kind="qa_bayesian", status="ok" if converged else "not_converged",
        data_fingerprint=data.data_fingerprint, system_fingerprints={},
        settings={**data.settings, "bayes": {"draws": 10}}, message=message,
        tables={"qa_bayes_gap": gap, "qa_bayes_diagnostics": diag,
                "verdicts": verdicts.assign(source="bayesian")},
    )  # fmt: skip


def _summary_verdicts(html: str) -> dict[str, tuple[str, str]]:
    """system -> (verdict, reason) as the report's summary table prints them."""
    import html as htmllib

    summary = html[html.index('id="summary"') : html.index('id="findings"')]
    found = re.findall(
        r'<td class="system">(.*?)</td>\s*<td class="verdict"><span class="badge badge-([\w-]+)">'
        r'.*?<td class="reason"[^>]*>(.*?)</td>',
        summary,
        re.S,
    )
    return {htmllib.unescape(s): (v, htmllib.unescape(r)) for s, v, r in found}


@pytest.mark.parametrize("converged", [False, True], ids=["gate-missed", "converged"])
def test_report_prints_the_verdicts_export_writes(
    report: dict, tmp_path: Path, converged: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 26, defect 1: after a Bayesian fit the report, ``cuegap export verdicts`` and
    the CLI read the same stored table. A fit that missed the gate makes every verdict
    inconclusive, in the report too (``steady`` passed under the bootstrap)."""
    from typer.testing import CliRunner

    from cuegap.cli import app

    data = report["data"]
    db = tmp_path / "qa.db"
    engine = make_engine(f"sqlite:///{db}")
    upgrade(engine)
    save_analysis(
        engine, kind=KIND, status="ok", data_fingerprint=data.data_fingerprint,
        system_fingerprints={}, settings=data.settings, tables=data.tables,
        descriptions=DESCRIPTIONS,
    )  # fmt: skip
    assert data.tables["verdicts"].set_index("system").loc["steady", "verdict"] == "passed"
    fit_id = _store_fit(engine, data, converged=converged)
    from cuegap.designs.qa import _report_figures as _qa_figures

    marked: dict[str, str] = {}
    forest = _qa_figures.qa_gap_forest

    def spy(verdicts: pd.DataFrame, delta: float) -> str:
        marked.update(zip(verdicts["system"], verdicts["verdict"], strict=True))
        return forest(verdicts, delta)

    monkeypatch.setattr(_qa_figures, "qa_gap_forest", spy)
    html = render_html(build_qa_report(engine)).html
    engine.dispose()
    out = tmp_path / "verdicts.csv"
    res = CliRunner().invoke(app, ["--db", str(db), "export", "verdicts", "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert f"qa_bayesian analysis {fit_id}" in re.sub(r"\s+", " ", res.output)
    exported = pd.read_csv(out, keep_default_na=False)
    from cuegap.terminal import show_bidi  # the report shows bidi controls as escapes

    expected = {
        show_bidi(r.system): (r.verdict, show_bidi(r.reason)) for r in exported.itertuples()
    }
    assert _summary_verdicts(html) == expected
    printed = {v for v, _ in expected.values()}
    assert printed == ({"flagged"} if converged else {"inconclusive"})
    summary = html[html.index('id="summary"') : html.index('id="findings"')]
    if not converged:
        assert "badge-passed" not in summary and "badge-flagged" not in summary
        assert f"stored verdicts of Bayesian analysis {fit_id}, which missed" in summary
        assert "did not converge" in summary
    # The forest plot marks each bootstrap gap with the same verdicts.
    assert marked == {r.system: r.verdict for r in exported.itertuples()}
