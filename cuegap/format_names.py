"""The names of the input formats, in the reader registry's order, without the readers.

Pure constants, importing nothing: the CLI's ``--format`` help lists them without importing
:mod:`cuegap.ingest` (SQLAlchemy, SQLModel and every reader), which would slow every
``cuegap --help``. :mod:`cuegap.ingest.registry` uses them in its messages, and
``tests/test_cli_startup.py`` holds them equal to the registry's keys.
"""

FORMAT_NAMES: tuple[str, ...] = (
    "itembank",
    "moral-safety",
    "generic",
    "mac-fairness-conversation",
    "mac-fairness-transcript",
    "inspect-bbq",
    "lm-eval-bbq",
    "inspect-ai",
    "lm-eval",
    "openai-batch",
    "promptfoo",
    "helm",
    "bbq",
    "implicit-bbq",
    "diffaware",
    "cuegap-qa-itembank",
    "bbq-results",
)
"""Every registered format's name, in the order the registry tries them."""
