"""The board report's matrix fits one page at 11 systems × 4 designs with long names.

The records are hand-made (11 systems with 60-character names, one carrying ``<script>``
and ``&``; long reasons; designs with several records per system, as the conversation and
prompt-variance designs store) and rendered through the real template and stylesheet. The
page is checked as a reader gets it: printed by headless Chromium and by WeasyPrint, and
read back with poppler's ``pdftotext``: page 1 holds every row and the note under the
matrix, page 2 none of the rows.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pandas as pd
import pytest

from cuegap.models import DEFAULT_POLICY
from cuegap.reports import BoardData, render_files, render_html
from cuegap.reports._board import BoardPart
from tests.test_report import need
from tests.test_report_pdf import pages

DESIGNS = ("dilemma", "qa", "prompt-variance", "conversation")
EVIL = "S04 <script>document.title='pwned'</script> & Co assistant-v9"
_LONG = "provider-large-language-assistant-2026-instruct-" + "x" * 60
NAMES = [EVIL if i == 4 else f"S{i:02d} {_LONG}"[:60] for i in range(1, 12)]
REASON = (
    "macro gap {e:+.1f} pp (90% interval {lo:+.1f} to {hi:+.1f}): neither P(gap > 2 pp) "
    "= 0.15 nor P(|gap| < 2 pp) = 0.50 reaches 0.95, so the audit cannot decide yet"
)
DECISIONS = ("flagged", "passed", "inconclusive", "format-sensitive")


def _records(design: str, per_system: int, scale: str) -> pd.DataFrame:
    rows = []
    for i, system in enumerate(NAMES):
        for k in range(per_system):
            e = (i - 5) * 1.7 + k
            rows.append({"system": system, "design": design, "estimate": e, "low": e - 3.1,
                         "high": e + 2.9, "scale": scale, "gate_passed": None,
                         "decision": DECISIONS[(i + k) % 4],
                         "reason": REASON.format(e=e, lo=e - 3.1, hi=e + 2.9)})  # fmt: skip
    return pd.DataFrame(rows)


def board_data() -> BoardData:
    shape = {"dilemma": (1, "pp"), "qa": (1, "bias score"), "prompt-variance": (2, "bias score"),
             "conversation": (3, "shift rate")}  # fmt: skip
    parts = [BoardPart(d, d.title(), n, n, _records(d, *shape[d]))
             for n, d in enumerate(DESIGNS, start=1)]  # fmt: skip
    analyses = [{"id": str(n), "kind": d, "digest": f"{n:064x}", "fingerprint": "f" * 64,
                 "created": "2026-11-27"} for n, d in enumerate(DESIGNS, start=1)]  # fmt: skip
    return BoardData(parts, DEFAULT_POLICY, analyses)


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> dict:
    root = tmp_path_factory.mktemp("boardlayout")
    html = render_html(board_data()).html
    page = root / "board.html"
    page.write_text(html, "utf-8")
    return {"root": root, "html": html, "page": page}


def _on_page_one(pdf: Path) -> None:
    all_pages = pages(pdf)
    first = all_pages[0]
    for name in NAMES:
        assert name.replace(" ", "") in first.joined, name
    assert "Each cell is the stored verdict record" in first.text  # the note under it
    if len(all_pages) > 1:
        assert not any(name[:3] + "provider" in all_pages[1].joined for name in NAMES)
    for word, x0, _y0, x1, _y1 in first.words:
        assert x0 >= 0 and x1 <= first.width + 0.5, word


def test_chromium_prints_the_matrix_on_one_page(rendered: dict) -> None:
    need("pdftotext")
    exe = need("chromium")
    pdf = rendered["root"] / "chromium.pdf"
    out = subprocess.run(
        [exe, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
         "--no-pdf-header-footer", f"--print-to-pdf={pdf}", rendered["page"].as_uri()],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert pdf.is_file(), out.stderr[-2000:]
    _on_page_one(pdf)


def test_weasyprint_prints_the_matrix_on_one_page(rendered: dict) -> None:
    from tests.conftest import need_pdf

    need_pdf()
    need("pdftotext")
    pdf = rendered["root"] / "weasy.pdf"
    pdf.write_bytes(render_files(rendered["html"], ["pdf"])["pdf"])
    _on_page_one(pdf)


def test_system_names_are_escaped_and_inert(rendered: dict) -> None:
    html = rendered["html"]
    assert "<script" not in html.lower()
    assert "S04 &lt;script&gt;document.title=&#39;pwned&#39;&lt;/script&gt; &amp; Co" in html
    # without the Content-Security-Policy, escaping alone keeps the name text
    bare = rendered["root"] / "bare.html"
    bare.write_text(re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", html))
    out = subprocess.run(
        [need("chromium"), "--headless", "--no-sandbox", "--disable-gpu",
         "--disable-dev-shm-usage", "--virtual-time-budget=3000", "--dump-dom", bare.as_uri()],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr[-2000:]
    assert "<title>cuegap board report: 4 designs</title>" in out.stdout
    assert "&lt;script&gt;document.title='pwned'&lt;/script&gt; &amp; Co" in out.stdout


def test_each_row_has_a_cell_per_design_and_an_overall_line(rendered: dict) -> None:
    rows = re.findall(r'<tr class="board-row">(.*?)</tr>', rendered["html"], re.S)
    assert len(rows) == 11
    for row in rows:
        assert row.count('<td class="cell ') == 4
        assert row.count('<td class="overall">') == 1
    # hand-worked for S02 (index 1): dilemma passed, qa passed, prompt-variance {passed,
    # inconclusive} -> inconclusive, conversation {passed, inconclusive, format-sensitive}
    # -> format-sensitive; none flags and not all pass: inconclusive, kept open by the two
    second = rows[1]
    assert re.findall(r'<td class="cell cell-([\w-]+)">', second) == [
        "passed", "passed", "inconclusive", "format-sensitive"]  # fmt: skip
    assert ("kept open by prompt-variance (inconclusive), conversation (format-sensitive)"
            in second)  # fmt: skip
    assert "1 of 3 records format-sensitive" in second
    assert "1 of 2 records inconclusive" in second
