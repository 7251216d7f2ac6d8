"""cuegap: statistical analysis and reporting engine for LLM fairness audits.

It works on stored results of fairness probes (it never runs the audited systems) and
measures the Cue Visibility Gap of Shafiei et al.: net decision bias under an explicit
demographic cue minus the same under an implicit cue.
"""

__version__ = "0.1.0"
