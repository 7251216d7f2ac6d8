"""The notebook API: one object for a store, :class:`Audit`, opened with :func:`open_store`
(``cuegap.open(url)``).

::

    import cuegap

    audit = cuegap.open("sqlite:///cuegap.db")
    audit.designs              # ('qa',): the designs the store holds
    audit.analyze(boot=200)    # run (or reuse) the design's analysis; its id
    audit.verdicts()           # every design's current verdicts, one DataFrame
    audit.table("qa_cue_gap")  # any stored result table by name
    audit.report(out="reports")

Every CLI command that works on a store's audit goes through these methods: ``ingest``,
``simulate``, ``analyze``, ``report``, ``reanalyze``, ``analyses``, ``export``. Nothing
here computes: it asks the design registry (:mod:`cuegap.designs`), ingest
(:mod:`cuegap.ingest`), the analysis store (:mod:`cuegap.audit`) and publishing
(:mod:`cuegap.reanalysis`). ``docs/notebook.md`` has one runnable example per design.
"""

from typing import Any

from cuegap.api._audit import Audit
from cuegap.api._ingest import IngestPlan, ingest_failures, plan_ingest
from cuegap.api._open import open_store
from cuegap.api._options import analyze_options
from cuegap.api._report import Steps
from cuegap.api._simulate import simulate

__all__ = [
    "EXIT_CHANGED", "EXIT_FAILED", "EXIT_UNCHANGED", "Audit", "IngestPlan", "LockHeld",
    "Steps", "analyze_options", "ingest_failures", "open_store", "plan_ingest", "simulate",
]  # fmt: skip

_LAZY = {"LockHeld": "cuegap.compliance", "EXIT_CHANGED": "cuegap.reanalysis",
         "EXIT_FAILED": "cuegap.reanalysis", "EXIT_UNCHANGED": "cuegap.reanalysis"}  # fmt: skip


def __getattr__(name: str) -> Any:
    """``LockHeld`` (another re-analysis holds the store) and the re-analysis exit codes,
    imported when first asked for (they bring SQLAlchemy and pandas)."""
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'cuegap.api' has no attribute {name!r}")
