"""Ingest: one reader per runner format, answer parsing, validation and bulk loading.

Depends on cuegap.schema (and sqlalchemy, orjson, jsonschema); never imports
cuegap.models or cuegap.reports.
"""

from cuegap.ingest._loader import IngestSummary, file_sha256, ingest_path
from cuegap.ingest._plan import ingest_order, with_system
from cuegap.ingest._records import IngestError, Rejected, ResponseRecord, ResponseStream, RunInfo
from cuegap.ingest.registry import (
    READERS,
    Reader,
    detect_reader,
    expand_path,
    get_reader,
    known_formats,
)

__all__ = [
    "READERS",
    "IngestError",
    "IngestSummary",
    "Reader",
    "Rejected",
    "ResponseRecord",
    "ResponseStream",
    "RunInfo",
    "detect_reader",
    "expand_path",
    "file_sha256",
    "get_reader",
    "ingest_order",
    "ingest_path",
    "known_formats",
    "with_system",
]
