"""``python -m cuegap.cli``: the same as the ``cuegap`` command."""

from cuegap.cli import app

app()
