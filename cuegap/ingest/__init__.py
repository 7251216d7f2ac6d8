"""Ingest: one reader per runner format, answer parsing, validation and bulk loading.

Depends on cuegap.schema (and sqlalchemy, orjson, jsonschema); never imports
cuegap.models or cuegap.reports.
"""

from cuegap.ingest._conv_loader import ConversationLoader
from cuegap.ingest._count_parse import dilemma_count_context, parse_dilemma_lines
from cuegap.ingest._count_recount import recount_problems
from cuegap.ingest._count_store import QUARANTINE_SAMPLE, count_files, start_spark
from cuegap.ingest._loader import IngestSummary, file_sha256, ingest_dilemma_bank, ingest_path
from cuegap.ingest._plan import ingest_order, with_system
from cuegap.ingest._qa_bank import ingest_qa_bank
from cuegap.ingest._qa_count_parse import (
    QA_CONFLICT_FIELD,
    parse_qa_lines,
    qa_conflict_reason,
    qa_count_context,
    qa_count_notes,
)
from cuegap.ingest._qa_loader import QAResponseLoader
from cuegap.ingest._records import IngestError, Rejected, ResponseRecord, ResponseStream, RunInfo
from cuegap.ingest._recover import recover_interrupted
from cuegap.ingest._responses import _ResponseLoader as ResponseLoader
from cuegap.ingest.registry import (
    READERS,
    Reader,
    detect_reader,
    expand_path,
    get_reader,
    known_formats,
)

__all__ = [
    "QA_CONFLICT_FIELD",
    "QUARANTINE_SAMPLE",
    "READERS",
    "ConversationLoader",
    "IngestError",
    "IngestSummary",
    "QAResponseLoader",
    "Reader",
    "Rejected",
    "ResponseLoader",
    "ResponseRecord",
    "ResponseStream",
    "RunInfo",
    "count_files",
    "detect_reader",
    "dilemma_count_context",
    "expand_path",
    "file_sha256",
    "get_reader",
    "ingest_dilemma_bank",
    "ingest_order",
    "ingest_path",
    "ingest_qa_bank",
    "known_formats",
    "parse_dilemma_lines",
    "parse_qa_lines",
    "qa_conflict_reason",
    "qa_count_context",
    "qa_count_notes",
    "recount_problems",
    "recover_interrupted",
    "start_spark",
    "with_system",
]
