"""Page 1 of every design's report is the stored verdict record (issue 26).

For each of the four designs a real SQLite store holds an analysis; one of its stored
``verdict_records`` rows is then altered directly in the store (decision, reason, and the
system name made an HTML payload). The rendered report's page 1 must show the altered
record, escaped: it reads the record, it does not recompute it. A QA store whose Bayesian
fit missed the convergence gate shows *inconclusive* for every system on page 1.
"""

from __future__ import annotations

import html as htmllib
import re
import shutil
from pathlib import Path

from sqlalchemy import select, update

from cuegap.audit import frame_digest, save_analysis
from cuegap.audit._table_codec import table_from_json, table_to_json
from cuegap.designs import get
from cuegap.designs._verdicts import DECISIONS
from cuegap.reports import render_html
from cuegap.schema import AnalysisTable, make_engine, upgrade
from cuegap.terminal import show_bidi
from tests.test_report import store  # noqa: F401  # the dilemma store fixture

SCRIPT = "<script>alert('page1')</script>"
REASON = "altered in the store <b>by hand</b>: the report must print this record"


def _alter(engine, analysis_id: int) -> tuple[str, str]:
    """Rewrite every stored verdict record of the first system of ``analysis_id``: another
    decision, another reason, and the system named by a script payload. Returns the
    original system name and the new decision."""
    with engine.connect() as conn:
        row = conn.execute(
            select(AnalysisTable.id, AnalysisTable.data).where(
                AnalysisTable.analysis_id == analysis_id, AnalysisTable.name == "verdict_records"
            )
        ).one()
    records = table_from_json(row.data)
    original = str(records.loc[0, "system"])
    mine = records["system"] == original
    decision = next(d for d in DECISIONS if d not in set(records.loc[mine, "decision"]))
    records.loc[mine, ["system", "decision", "reason"]] = [SCRIPT, decision, REASON]
    with engine.begin() as conn:
        conn.execute(
            update(AnalysisTable)
            .where(AnalysisTable.id == row.id)
            .values(data=table_to_json(records))
        )
    return original, decision


def _page_one(html: str) -> str:
    start = html.index('<section id="verdict-page"')
    return html[start : html.index("</section>", start)]


def _rows(page: str) -> dict[str, tuple[str, str]]:
    """system -> (decision, reason) as page 1 prints them."""
    found = re.findall(
        r'<td class="system">(.*?)</td>\s*<td class="verdict"><span class="badge [^"]*">(.*?)'
        r'</span>.*?<span class="record-reason">(.*?)</span>',
        page,
        re.S,
    )
    return {htmllib.unescape(s): (htmllib.unescape(d), htmllib.unescape(r)) for s, d, r in found}


def _check(design: str, engine, analysis_id: int) -> None:
    before = _rows(_page_one(render_html(get(design).report_data(engine, analysis_id, None)).html))
    original, decision = _alter(engine, analysis_id)
    original = show_bidi(original)  # as the report prints it (fixtures name bidi payloads)
    assert before[original][0] != decision  # the alteration changes what page 1 shows
    html = render_html(get(design).report_data(engine, analysis_id, None)).html
    page = _page_one(html)
    rows = _rows(page)
    assert rows[SCRIPT] == (decision, REASON)
    assert original not in rows and len(rows) == len(before)
    assert SCRIPT not in html and "&lt;script&gt;alert(" in page  # text, never markup
    assert "<b>by hand</b>" not in html
    assert html.index('id="verdict-page"') < html.index('id="summary"' if 'id="summary"' in
                                                       html else 'id="cover"')  # fmt: skip


def test_dilemma_page_one_reads_the_record(store: Path, tmp_path: Path) -> None:  # noqa: F811
    db = tmp_path / "d.db"
    shutil.copy(store, db)
    engine = make_engine(f"sqlite:///{db}")
    _check("dilemma", engine, get("dilemma").report_analysis(engine))
    engine.dispose()


def _qa_store(tmp_path: Path):
    from cuegap.designs.qa._analysis import DESCRIPTIONS, KIND, QASettings, qa_tables
    from tests.test_qa_report import _counts

    engine = make_engine(f"sqlite:///{tmp_path / 'qa.db'}")
    upgrade(engine)
    counts = _counts()
    settings = QASettings(n_boot=200, seed=5)
    analysis_id = save_analysis(
        engine, kind=KIND, status="ok", data_fingerprint=frame_digest(counts),
        system_fingerprints={}, settings=settings.to_dict(),
        tables=qa_tables(counts, settings), descriptions=DESCRIPTIONS,
    )  # fmt: skip
    return engine, analysis_id


def test_qa_page_one_reads_the_record(tmp_path: Path) -> None:
    engine, analysis_id = _qa_store(tmp_path)
    _check("qa", engine, analysis_id)
    engine.dispose()


def test_qa_gate_miss_is_inconclusive_on_page_one(tmp_path: Path) -> None:
    """The fixture's bootstrap flags two systems and passes ``steady``; a Bayesian fit of
    the same data and settings that missed the gate makes page 1 inconclusive throughout,
    as ``cuegap verdicts`` and ``export`` say."""
    from tests.test_qa_report import _store_fit

    engine, analysis_id = _qa_store(tmp_path)
    data = get("qa").report_data(engine, analysis_id, None)
    boot = _rows(_page_one(render_html(data).html))
    assert {d for d, _ in boot.values()} == {"flagged", "passed"}
    fit_id = _store_fit(engine, data, converged=False)
    page = _page_one(render_html(get("qa").report_data(engine, analysis_id, None)).html)
    rows = _rows(page)
    assert set(rows) == set(boot)
    assert {d for d, _ in rows.values()} == {"inconclusive"}
    assert all("convergence gate" in reason for _, reason in rows.values())
    assert f"analysis {fit_id} (qa_bayesian)" in page and "convergence gate missed" in page
    engine.dispose()


def test_prompt_variance_page_one_reads_the_record(tmp_path: Path) -> None:
    from cuegap.designs.prompt_variance._analysis import analyze_prompt_variance
    from cuegap.designs.prompt_variance._simulate import simulate_pv
    from cuegap.ingest import ingest_path
    from tests.test_pv_standalone_report import FILES

    simulate_pv(tmp_path / "sim", systems=2, cue_gap=True, seed=3)
    engine = make_engine(f"sqlite:///{tmp_path / 'pv.db'}")
    upgrade(engine)
    for name in FILES:
        ingest_path(engine, tmp_path / "sim" / name)
    analysis_id = analyze_prompt_variance(engine).id
    _check("prompt-variance", engine, analysis_id)
    engine.dispose()


def test_conversation_page_one_reads_the_record(tmp_path: Path) -> None:
    from cuegap.designs.conversation._analysis import ConvSettings, analyze_conversation
    from cuegap.designs.conversation.stats import conv_design, simulate_conv_counts

    engine = make_engine(f"sqlite:///{tmp_path / 'conv.db'}")
    upgrade(engine)
    cells = conv_design(systems=("biased", "fair"), demographics=("none", "black", "white"))
    effects = {("biased", "black", i): 0.6 for i in ("human", "ai")}
    counts = simulate_conv_counts(
        cells=cells, conversations=300, persona_sd=0.2, base_reveal_effects=effects, seed=3
    ).counts
    analysis_id = analyze_conversation(engine, ConvSettings(), counts=counts).id
    _check("conversation", engine, analysis_id)
    engine.dispose()
