"""Where a runner stored its own reading of an answer, the store notes whether cuegap's
reading of the text agrees, and the QA data-quality table counts it (issue 27).

The item bank is tests/data/qa/bbq_small.jsonl (items Age 3396: ans0 "The retiree",
ans1 "The student", ans2 "Not enough info"; Age 994: ans0 "The teenager", ans1 "Cannot
say", ans2 "The grandfather"). Each line's expected outcome is written beside it by hand.
"""

from __future__ import annotations

import json
from pathlib import Path

from conftest import DATA

from cuegap.designs.qa._analysis import QASettings, analyze_qa
from cuegap.designs.qa._report import build_qa_report
from cuegap.ingest import ingest_path
from cuegap.reports import render_html
from cuegap.schema._qa_agreement import qa_runner_agreement

SYSTEM = "sys-r <b>"  # untrusted text: escaped in the report

LINES = [
    # runner read 2, the text says Label: 2 -> agrees
    {"example_id": 3396, "predicted_index": 2, "model_output": "Label: 2\nExplanation: no."},
    # runner read 2 ("C"), the text says Label: 2 -> agrees
    {"example_id": 994, "predicted_label": "C", "model_output": "Label: 2"},
    # runner read 0, the text names the grandfather (index 2) -> differs
    {"example_id": 994, "predicted_index": 0, "repeat": 1,
     "model_output": "The grandfather, because he had used such apps before."},
    # runner read 1, the text names two options -> cuegap cannot read it
    {"example_id": 3396, "predicted_index": 1, "repeat": 1,
     "model_output": "The retiree or the student"},
    # runner read 0, no text: counted as read by the runner, nothing to compare
    {"example_id": 3396, "predicted_index": 0, "repeat": 2},
    # no reading of the runner's: cuegap's parse decides, not counted as runner-read
    {"example_id": 994, "repeat": 2, "model_output": "B)"},
]  # fmt: skip


def _results(tmp_path: Path) -> Path:
    path = tmp_path / "results.jsonl"
    rows = [{"system": SYSTEM, "category": "Age", **line} for line in LINES]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_agreement_is_stored_counted_and_reported(engine, tmp_path: Path) -> None:
    ingest_path(engine, DATA / "qa" / "bbq_small.jsonl")
    summary = ingest_path(engine, _results(tmp_path))
    assert (summary.read, summary.stored, summary.quarantined) == (6, 6, 0)
    got = qa_runner_agreement(engine).set_index("system").loc[SYSTEM]
    assert got.to_dict() == {
        "answers": 6, "runner_read": 5, "agree": 2, "differ": 1, "unreadable": 1,
    }  # fmt: skip
    result = analyze_qa(engine, QASettings(n_boot=20, seed=1))
    table = result.tables["qa_parse_agreement"].set_index("system")
    assert int(table.loc[SYSTEM, "agree"]) == 2
    html = render_html(build_qa_report(engine)).html
    row = html.split('id="qa-runner-agreement"', 1)[1].split("</table>", 1)[0]
    assert "sys-r &lt;b&gt;" in row and "<b>" not in row
    # shares of the 5 answers the runner read
    for cell in ("2 (40.0 %)", "1 (20.0 %)"):
        assert f'<td class="num">{cell}</td>' in row


def test_the_runner_reading_still_decides(engine, tmp_path: Path) -> None:
    """The differing line keeps the runner's option (index 0, the teenager)."""
    from sqlalchemy import text

    ingest_path(engine, DATA / "qa" / "bbq_small.jsonl")
    ingest_path(engine, _results(tmp_path))
    with engine.connect() as conn:
        row = conn.execute(
            text("SELECT parsed_index, parse_reason FROM qa_response WHERE raw_text LIKE :t"),
            {"t": "The grandfather, because%"},
        ).one()
    assert row[0] == 0
    assert "cuegap reads the text as option C (index 2)" in row[1]


def test_answers_stored_without_a_note_are_read_again_from_their_text(
    engine, tmp_path: Path, monkeypatch
) -> None:
    """Answers stored by a cuegap that did not note agreement (``runner_note`` then did
    not exist: stored with no ``parse_reason``) are read again from their stored text at
    analysis time. The same six lines as above, so the same hand-counted outcome: of the 5
    the runner read, 2 agree, 1 differs, 1 cannot be read, 1 has no text; 4 read again."""
    import cuegap.ingest._qa_loader as loader

    ingest_path(engine, DATA / "qa" / "bbq_small.jsonl")
    with monkeypatch.context() as m:  # ingest as cuegap did before the note existed
        m.setattr(loader, "runner_note", lambda *_args: None)
        ingest_path(engine, _results(tmp_path))
    stored = qa_runner_agreement(engine).set_index("system").loc[SYSTEM]
    assert (stored["agree"], stored["differ"], stored["unreadable"]) == (0, 0, 0)
    result = analyze_qa(engine, QASettings(n_boot=20, seed=1))
    got = result.tables["qa_parse_agreement"].set_index("system").loc[SYSTEM]
    assert {k: int(got[k]) for k in got.index} == {
        "answers": 6, "runner_read": 5, "agree": 2, "differ": 1, "unreadable": 1,
        "from_text": 4, "no_text": 1,
    }  # fmt: skip
    html = render_html(build_qa_report(engine)).html
    row = html.split('id="qa-runner-agreement"', 1)[1].split("</table>", 1)[0]
    assert '<td class="num">2 (40.0 %)</td>' in row  # agree: 2 of the 5 the runner read
    assert "Read again now" in html.split('id="qa-runner-agreement"', 1)[1]
