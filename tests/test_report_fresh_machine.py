"""PDF bytes stay deterministic on a machine without libharfbuzz-subset0 (issue 12).

A fresh machine with only Python lacks the system library; WeasyPrint then subsets fonts
with fontTools, which stamps each font with the current time. The test removes WeasyPrint's
handle on the library (as on such a machine) and renders the same HTML twice, seconds
apart, with the real renderer.
"""

from __future__ import annotations

import time

import pytest

from cuegap.reports._render import render_pdf
from tests.conftest import need_pdf

HTML = (
    "<html><body><h1>Audit</h1><p>Net favour −2.1 pp é ü</p>"
    '<p style="font-family: serif">serif</p><code>mono</code></body></html>'
)


def test_pdf_bytes_are_the_same_without_harfbuzz_subset(monkeypatch) -> None:
    need_pdf()
    fonts = pytest.importorskip("weasyprint.pdf.fonts")
    monkeypatch.setattr(fonts, "harfbuzz_subset", None)
    first = render_pdf(HTML)
    time.sleep(1.1)  # fontTools' font timestamps have one-second resolution
    assert render_pdf(HTML) == first


def test_pdf_bytes_are_the_same_with_the_machines_libraries() -> None:
    need_pdf()
    first = render_pdf(HTML)
    time.sleep(1.1)
    assert render_pdf(HTML) == first
