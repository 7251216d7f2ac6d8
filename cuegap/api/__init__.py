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

The CLI's ``analyses``, ``export`` (of a table) and ``analyze`` go through the same methods.
Nothing here computes: it asks the design registry (:mod:`cuegap.designs`), the analysis
store (:mod:`cuegap.audit`) and publishing (:mod:`cuegap.reanalysis`). ``docs/notebook.md``
has one runnable example per design.
"""

from cuegap.api._audit import Audit
from cuegap.api._open import open_store
from cuegap.api._options import analyze_options

__all__ = ["Audit", "analyze_options", "open_store"]
