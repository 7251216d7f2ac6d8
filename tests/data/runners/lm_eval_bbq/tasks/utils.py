"""lm-eval's own BBQ functions, re-exported so that the local task uses them unchanged."""

from lm_eval.tasks.bbq.utils import (  # noqa: F401
    agg_accuracy_amb,
    agg_accuracy_disamb,
    agg_amb_bias_scores,
    agg_disamb_bias_scores,
    doc_to_choice,
    doc_to_target,
    process_docs,
    process_results_multiple_choice,
)
