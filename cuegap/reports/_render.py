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
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape
from markupsafe import Markup

from cuegap.files import write_new_files
from cuegap.reports._fetcher import TEMPLATES_DIR, TemplateOnlyFetcher
from cuegap.reports._format import signoff_rows
from cuegap.reports._plan_section import plan_section
from cuegap.reports._verdict_page import verdict_page_context
from cuegap.terminal import show_bidi

Format = Literal["html", "pdf"]
FORMATS: tuple[Format, ...] = ("html", "pdf")

_MARKERS = ("generated-at", "content-hash", "report-id")
_PLACEHOLDER = "@@cuegap:{}@@"
# <tag ... data-cuegap="NAME" ...>VALUE</tag>: the values excluded from the content hash.
_MARKED = re.compile(
    r'(<(\w+)[^>]*\sdata-cuegap="(' + "|".join(_MARKERS) + r')"[^>]*>)(.*?)(</\2>)'
)


def _finalize(value: Any) -> Any:
    """Every printed value's bidirectional-text controls made visible (``\\u202e``): a
    system name, a response, a comment or a figure's labels (the SVG arrives as Markup)
    cannot then reorder the text around it, in the HTML or the PDF."""
    return show_bidi(value) if isinstance(value, str) else value


def environment() -> Environment:
    """The Jinja2 environment of the report templates, autoescaping everything and
    neutralising bidirectional-text controls in every printed value (:func:`_finalize`)."""
    env = Environment(
        loader=FileSystemLoader(TEMPLATES_DIR),
        finalize=_finalize,
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


# The sign-off records block: left out of the content hash, filled in by a signed copy.
_SIGNOFF_BLOCK = re.compile(
    r'(<div class="signoff-records" data-cuegap="signoff-records">)(.*?)'
    r"(</div><!--/signoff-records-->)",
    re.S,
)


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
    canonical = _SIGNOFF_BLOCK.sub(
        lambda m: m.group(1) + _PLACEHOLDER.format("signoff-records") + m.group(3), canonical
    )
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def _design_context(data: Any) -> tuple[dict[str, Any], str]:
    """The template context and top-level template of a report's study design (a report
    across designs, the board report, gives its own: ``render_context``)."""
    from cuegap.designs import get

    own = getattr(data, "render_context", None)
    if own is not None:
        return own()

    name = getattr(data, "design", None)
    if name is None:
        raise ValueError(f"report data {type(data).__name__} names no design")
    return get(name).report_context(data)


def render_html(data: Any, *, now: datetime | None = None, plan: Any = None) -> RenderedReport:
    """Render the report to one self-contained HTML document.

    Parameters
    ----------
    data : ReportData
        From :func:`~cuegap.designs.dilemma._report.build_report`.
    now : datetime, optional
        Generation time (default: now, UTC).
    plan : (int or None, DataFrame or None), optional
        The stored plan of the report's design (:func:`cuegap.reports.load_plan`), for
        "What it would take to decide"; None: none was read.

    Returns
    -------
    RenderedReport
    """
    ctx, template_name = _design_context(data)
    ctx.setdefault("verdict_page", verdict_page_context(data))  # page 1, shared by every design
    found, rows = plan if plan is not None else (None, None)
    if "plan_section" not in ctx:  # a board report gives each design's its own
        design = getattr(data, "design", "")
        ctx["plan_section"] = plan_section(rows, design=design, plan_analysis=found)
    ctx.update({k.replace("-", "_"): _PLACEHOLDER.format(k) for k in _MARKERS})
    # The package's own stylesheet, trusted: autoescaped, its quotes became &#34; inside
    # <style> (raw text in HTML), which broke the page-number and report-id rules.
    ctx["css"] = Markup((TEMPLATES_DIR / "report.css").read_text(encoding="utf-8"))
    template = environment().get_template(template_name)
    canonical = template.render(ctx)
    digest = content_hash(canonical)
    report_id = f"{getattr(data, 'report_id_prefix', 'CG')}-{data.analysis_id}-{digest[:12]}"
    generated = (now or datetime.now(UTC)).astimezone(UTC).isoformat(timespec="seconds")
    html = _fill(
        canonical,
        {"generated-at": generated, "content-hash": digest, "report-id": report_id},
    )
    return RenderedReport(html, digest, report_id, generated)


def render_signed(
    html: str, records: Sequence[Mapping[str, Any]], *, report_id: int, report_sha256: str
) -> str:
    """A signed copy of a rendered report: its sign-off block filled in, nothing else.

    Parameters
    ----------
    html : str
        The HTML that was reviewed, as kept in the store's report registry.
    records : sequence of mappings
        The report's sign-off records.
    report_id, report_sha256 : int, str
        The registered report that was signed.

    Returns
    -------
    str
        HTML whose content hash equals the reviewed report's.

    Raises
    ------
    ValueError
        When ``html`` has no sign-off block (a report rendered before cuegap 0.2).
    """
    if len(_SIGNOFF_BLOCK.findall(html)) != 1:
        raise ValueError(
            f"report {report_id} has no sign-off block to fill in (rendered by an older "
            "cuegap); re-render and sign it again"
        )
    block = (
        environment()
        .get_template("partials/_signoff_records.html.j2")
        .render(
            signoffs=signoff_rows(records),
            signed_report={"id": report_id, "sha256": report_sha256},
        )
    )
    return _SIGNOFF_BLOCK.sub(lambda m: m.group(1) + block + m.group(3), html, count=1)


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


def render_files(html: str, formats: Iterable[Format] = FORMATS) -> dict[str, bytes]:
    """The bytes of each requested format of a rendered report (PDF via WeasyPrint).

    Raises
    ------
    ValueError
        For an unknown or empty list of formats.
    """
    wanted = list(dict.fromkeys(formats))
    bad = [f for f in wanted if f not in FORMATS]
    if bad or not wanted:
        raise ValueError(f"format should be html, pdf or both but got {bad or wanted!r}")
    out: dict[str, bytes] = {}
    for fmt in wanted:
        out[fmt] = html.encode("utf-8") if fmt == "html" else render_pdf(html)
    return out


def write_files(out_dir: Path | str, stem: str, files: Mapping[str, bytes]) -> dict[str, Path]:
    """Write ``{format: bytes}`` as ``STEM.FORMAT`` files, all or none, never replacing or
    following anything already in ``out_dir`` (a taken name gets ``-2``, ``-3``, ...)."""
    written = write_new_files(out_dir, {f"{stem}.{fmt}": data for fmt, data in files.items()})
    return {fmt: written[f"{stem}.{fmt}"] for fmt in files}


def write_report(
    data: Any,
    out_dir: Path | str,
    *,
    formats: Iterable[Format] = FORMATS,
    now: datetime | None = None,
    stem: str | None = None,
) -> dict[str, Path]:
    """Render and write the report files.

    Every format is rendered before anything is written; files are written without
    replacing or following anything already in ``out_dir``.

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
    rendered = render_html(data, now=now)
    files = render_files(rendered.html, formats)
    return write_files(out_dir, stem or f"cuegap-report-{data.analysis_id}", files)
