"""Render a report: Jinja2 (autoescaped) to self-contained HTML, WeasyPrint to PDF.

Reproducibility: the HTML is rendered with placeholders for the three values that cannot
be part of its own hash (generation time, content hash, report id); the SHA-256 of that
text is the **content hash**, and the report id is derived from it. The same store and
policy thus give the same content hash, and the same bytes apart from the timestamp.
:func:`content_hash` recomputes the hash of a rendered file.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape

from cuegap.reports._build import ReportData
from cuegap.reports._context import report_context
from cuegap.reports._fetcher import TEMPLATES_DIR, TemplateOnlyFetcher

Format = Literal["html", "pdf"]
FORMATS: tuple[Format, ...] = ("html", "pdf")

_MARKERS = ("generated-at", "content-hash", "report-id")
_PLACEHOLDER = "@@cuegap:{}@@"
# <tag ... data-cuegap="NAME" ...>VALUE</tag>: the values excluded from the content hash.
_MARKED = re.compile(
    r'(<(\w+)[^>]*\sdata-cuegap="(' + "|".join(_MARKERS) + r')"[^>]*>)(.*?)(</\2>)'
)


def environment() -> Environment:
    """The Jinja2 environment of the report templates, autoescaping everything."""
    env = Environment(
        loader=FileSystemLoader(TEMPLATES_DIR),
        autoescape=select_autoescape(
            enabled_extensions=("html", "htm", "xml", "j2", "svg"),
            default_for_string=True,
            default=True,
        ),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    return env


@dataclass(frozen=True, slots=True)
class RenderedReport:
    """A rendered report.

    Attributes
    ----------
    html : str
        The self-contained HTML document.
    content_hash : str
        SHA-256 of the HTML with the generation time, hash and id left out.
    report_id : str
        ``CG-<analysis id>-<first 12 hex digits of the content hash>``.
    generated_at : str
        ISO 8601 UTC generation time printed in the report.
    """

    html: str
    content_hash: str
    report_id: str
    generated_at: str


def _fill(html: str, values: dict[str, str]) -> str:
    for key, value in values.items():
        html = html.replace(_PLACEHOLDER.format(key), value)
    return html


def content_hash(html: str) -> str:
    """The content hash of a rendered report: SHA-256 without timestamp, hash and id.

    Parameters
    ----------
    html : str
        A report rendered by :func:`render_html` (possibly read back from its file).

    Returns
    -------
    str
        Hex digest; equals the hash printed in the report unless the file was altered.
    """
    canonical = _MARKED.sub(
        lambda m: m.group(1) + _PLACEHOLDER.format(m.group(3)) + m.group(5), html
    )
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def render_html(data: ReportData, *, now: datetime | None = None) -> RenderedReport:
    """Render the report to one self-contained HTML document.

    Parameters
    ----------
    data : ReportData
        From :func:`~cuegap.reports.build_report`.
    now : datetime, optional
        Generation time (default: now, UTC).

    Returns
    -------
    RenderedReport
    """
    ctx = report_context(data)
    ctx.update({k.replace("-", "_"): _PLACEHOLDER.format(k) for k in _MARKERS})
    ctx["css"] = (TEMPLATES_DIR / "report.css").read_text(encoding="utf-8")
    template = environment().get_template("report.html.j2")
    canonical = template.render(ctx)
    digest = hashlib.sha256(canonical.encode("utf-8")).hexdigest()
    report_id = f"CG-{data.analysis_id}-{digest[:12]}"
    generated = (now or datetime.now(UTC)).astimezone(UTC).isoformat(timespec="seconds")
    html = _fill(
        canonical,
        {"generated-at": generated, "content-hash": digest, "report-id": report_id},
    )
    return RenderedReport(html, digest, report_id, generated)


def _harfbuzz_subsets() -> bool:
    """Whether WeasyPrint can subset fonts with HarfBuzz (libharfbuzz-subset0 >= 4.1).

    Without it WeasyPrint subsets with fontTools, which stamps each embedded font with the
    current time: the same report would not give the same PDF bytes. Then the fonts are
    embedded whole (``full_fonts``: larger files, same bytes every time) instead.
    """
    try:
        from weasyprint.pdf import fonts
    except ImportError:  # pragma: no cover - WeasyPrint moved its internals: be safe
        return False
    harfbuzz = getattr(fonts, "harfbuzz", None)
    try:
        return bool(getattr(fonts, "harfbuzz_subset", None)) and bool(
            harfbuzz.hb_version_atleast(4, 1, 0)
        )
    except AttributeError:  # pragma: no cover
        return False


def render_pdf(html: str) -> bytes:
    """Render report HTML to PDF with WeasyPrint, fetching nothing outside the templates.

    Raises
    ------
    ValueError
        When the document tried to load a resource from outside (a bug: report HTML
        escapes all data, so only the templates could ask for one).
    """
    from weasyprint import HTML

    fetcher = TemplateOnlyFetcher()
    pdf = HTML(string=html, base_url=TEMPLATES_DIR.as_uri() + "/", url_fetcher=fetcher).write_pdf(
        full_fonts=not _harfbuzz_subsets()
    )
    if fetcher.refused:
        raise ValueError(f"the report tried to load outside resources: {fetcher.refused}")
    return pdf


def write_report(
    data: ReportData,
    out_dir: Path | str,
    *,
    formats: Iterable[Format] = FORMATS,
    now: datetime | None = None,
    stem: str | None = None,
) -> dict[str, Path]:
    """Render and write the report files.

    Parameters
    ----------
    data : ReportData
        Report content.
    out_dir : Path
        Created if missing.
    formats : iterable of {"html", "pdf"}
        Which files to write.
    stem : str, optional
        File name without extension; default ``cuegap-report-<analysis id>``.

    Returns
    -------
    dict of str to Path
        ``{"html": ..., "pdf": ...}`` for the formats written.
    """
    wanted = list(dict.fromkeys(formats))
    bad = [f for f in wanted if f not in FORMATS]
    if bad or not wanted:
        raise ValueError(f"format should be html, pdf or both but got {bad or wanted!r}")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    name = stem or f"cuegap-report-{data.analysis_id}"
    rendered = render_html(data, now=now)
    paths: dict[str, Path] = {}
    if "html" in wanted:
        paths["html"] = out / f"{name}.html"
        paths["html"].write_text(rendered.html, encoding="utf-8")
    if "pdf" in wanted:
        paths["pdf"] = out / f"{name}.pdf"
        paths["pdf"].write_bytes(render_pdf(rendered.html))
    return paths
