"""The QA data-quality table ``qa_parse_agreement``: how often cuegap's reading of an
answer's text agrees with the runner's own reading, old answers included.

Ingest notes the agreement of each answer the runner read (:mod:`cuegap.ingest.qa_agreement`);
answers stored before it did are read again here from their stored text, so every answer
the runner read with a text is counted, and the rest are counted as having no text.
"""

from __future__ import annotations

import pandas as pd
from sqlalchemy.engine import Connection

_READ_AGAIN = ("agree", "differ", "unreadable", "from_text")


def parse_agreement(conn: Connection) -> pd.DataFrame:
    """Per system: answers, those the runner read, and of those how many cuegap's reading
    agrees with, differs from or cannot read; ``from_text`` of them were stored without a
    note and read again now, ``no_text`` had no text to compare.

    Parameters
    ----------
    conn : Connection
        The store, inside the analysis's snapshot.

    Returns
    -------
    DataFrame
        ``system``, ``answers``, ``runner_read``, ``agree``, ``differ``, ``unreadable``,
        ``from_text``, ``no_text``; ``runner_read = agree + differ + unreadable + no_text``.
    """
    from cuegap.ingest.qa_agreement import agreement_from_stored_text
    from cuegap.schema import qa_runner_agreement

    df = qa_runner_agreement(conn)
    again = agreement_from_stored_text(conn)
    df["from_text"] = 0
    for col in _READ_AGAIN:
        extra = df["system"].map(lambda s, col=col: again.get(s, {}).get(col, 0))
        df[col] = (df[col] + extra.astype("int64")).astype("int64")
    df["no_text"] = df["runner_read"] - df["agree"] - df["differ"] - df["unreadable"]
    return df
