"""Report building: stored analysis results to report objects, figures and HTML/PDF.

Reports only read: nothing here runs an analysis (``tests/test_reports_only_read.py``);
every design's report data comes through the one loader, :mod:`cuegap.reports._loader`.

Depends on cuegap.audit and cuegap.models result types, cuegap.schema queries, jinja2,
matplotlib and weasyprint; never on cuegap.ingest. Templates live in ``cuegap/templates``.

    from cuegap.reports import build_report, write_report
    from cuegap.schema import make_engine

    engine = make_engine("sqlite:///cuegap.db")
    paths = write_report(build_report(engine), "reports/")   # {"html": ..., "pdf": ...}
"""

from cuegap.reports._board import BoardData, board_report_data
from cuegap.reports._build import REPORT_SCHEMA_VERSION, ReportData, build_report
from cuegap.reports._context import report_context, signoff_rows
from cuegap.reports._fetcher import TEMPLATES_DIR, RefusedFetch, TemplateOnlyFetcher
from cuegap.reports._figure_style import legend_above
from cuegap.reports._generic import (
    GenericReportData,
    change_rows,
    generic_report_context,
    generic_report_data,
)
from cuegap.reports._loader import load_stored, load_tables, load_verdict_page, matching_fit
from cuegap.reports._plan_figure import plan_figure
from cuegap.reports._render import (
    FORMATS,
    RenderedReport,
    content_hash,
    environment,
    render_files,
    render_html,
    render_pdf,
    render_signed,
    write_files,
    write_report,
)
from cuegap.reports._rounding import decimals_for, fmt_interval, fmt_num, fmt_pm

__all__ = [
    "FORMATS",
    "REPORT_SCHEMA_VERSION",
    "TEMPLATES_DIR",
    "BoardData",
    "GenericReportData",
    "RefusedFetch",
    "RenderedReport",
    "ReportData",
    "TemplateOnlyFetcher",
    "board_report_data",
    "build_report",
    "change_rows",
    "content_hash",
    "decimals_for",
    "environment",
    "fmt_interval",
    "fmt_num",
    "fmt_pm",
    "generic_report_context",
    "generic_report_data",
    "legend_above",
    "load_stored",
    "load_tables",
    "load_verdict_page",
    "matching_fit",
    "plan_figure",
    "render_files",
    "render_html",
    "render_pdf",
    "render_signed",
    "report_context",
    "signoff_rows",
    "write_files",
    "write_report",
]
