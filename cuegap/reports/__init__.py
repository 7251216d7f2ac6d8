"""Report building: analysis results to report objects, figures and HTML/PDF.

Depends on cuegap.models result types, jinja2, matplotlib and weasyprint; never on ingest.
"""
