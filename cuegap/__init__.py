"""cuegap: statistical analysis and reporting engine for LLM fairness audits.

It works on stored results of fairness probes (it never runs the audited systems) and
measures the Cue Visibility Gap of Shafiei et al.: net decision bias under an explicit
demographic cue minus the same under an implicit cue.
"""

__version__ = "0.1.0"


def _declare_design_policies() -> None:
    """Load the design registry, whose designs declare their policy sections."""
    from cuegap.designs import registered

    registered()


def _wire() -> None:
    # A policy knows the keys of every registered design (``[qa] delta_bias``, ...), even
    # where only ``cuegap.models`` was imported; the registry loads on first need.
    from cuegap.models import set_section_loader

    set_section_loader(_declare_design_policies)


_wire()


def __getattr__(name: str) -> object:
    """``cuegap.open`` and ``cuegap.Audit``, the notebook API (:mod:`cuegap.api`), loaded on
    first use so that ``import cuegap`` stays fast."""
    if name == "open":
        from cuegap.api import open_store

        return open_store
    if name == "Audit":
        from cuegap.api import Audit

        return Audit
    raise AttributeError(f"module 'cuegap' has no attribute {name!r}")
