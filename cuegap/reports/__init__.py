"""Report rendering every design shares: the one report loader, page 1 from the verdict
record, the generic report, formatters, the figure style, and HTML/PDF rendering.

Reports only read: nothing here runs an analysis (``tests/test_reports_only_read.py``).
Each design builds its own report data and context in its package
(``cuegap/designs/<name>/_report*.py``) from :mod:`cuegap.reports._loader`, and hands them
out through ``Design.report_data`` and ``Design.report_context``.

Depends on cuegap.audit and cuegap.models result types, cuegap.schema queries, jinja2,
matplotlib and weasyprint; never on cuegap.ingest. Templates live in ``cuegap/templates``.

    from cuegap.designs import get
    from cuegap.reports import write_report
    from cuegap.schema import make_engine

    engine = make_engine("sqlite:///cuegap.db")
    design = get("dilemma")
    data = design.report_data(engine, design.report_analysis(engine), None)
    paths = write_report(data, "reports/")   # {"html": ..., "pdf": ...}
"""

from cuegap.reports._board import BoardData, board_report_data
from cuegap.reports._fetcher import TEMPLATES_DIR, RefusedFetch, TemplateOnlyFetcher
from cuegap.reports._figure_style import (
    DIRECT_COLOUR,
    OKABE_ITO,
    PUZZLED_COLOUR,
    VERDICT_STYLE,
    legend_above,
    to_svg,
)
from cuegap.reports._figure_style import _style as figure_style
from cuegap.reports._format import _date as fmt_date
from cuegap.reports._format import _num as to_float
from cuegap.reports._format import _p as fmt_p
from cuegap.reports._format import _pct as fmt_pct
from cuegap.reports._format import _text as fmt_text
from cuegap.reports._format import counted_rows, provenance_rows, signoff_rows
from cuegap.reports._generic import (
    GenericReportData,
    change_rows,
    generic_report_context,
    generic_report_data,
)
from cuegap.reports._loader import (
    REPORT_SCHEMA_VERSION,
    load_plan,
    load_stored,
    load_tables,
    load_verdict_page,
    matching_fit,
    report_versions,
)
from cuegap.reports._plan_figure import plan_figure
from cuegap.reports._plan_section import plan_section
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
    "DIRECT_COLOUR",
    "FORMATS",
    "OKABE_ITO",
    "PUZZLED_COLOUR",
    "REPORT_SCHEMA_VERSION",
    "TEMPLATES_DIR",
    "VERDICT_STYLE",
    "BoardData",
    "GenericReportData",
    "RefusedFetch",
    "RenderedReport",
    "TemplateOnlyFetcher",
    "board_report_data",
    "change_rows",
    "content_hash",
    "counted_rows",
    "decimals_for",
    "environment",
    "figure_style",
    "fmt_date",
    "fmt_interval",
    "fmt_num",
    "fmt_p",
    "fmt_pct",
    "fmt_pm",
    "fmt_text",
    "generic_report_context",
    "generic_report_data",
    "legend_above",
    "load_plan",
    "load_stored",
    "load_tables",
    "load_verdict_page",
    "matching_fit",
    "plan_figure",
    "plan_section",
    "provenance_rows",
    "render_files",
    "render_html",
    "render_pdf",
    "render_signed",
    "report_versions",
    "signoff_rows",
    "to_float",
    "to_svg",
    "write_files",
    "write_report",
]
