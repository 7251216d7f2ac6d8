"""``cuegap verify``'s checks of the conversation design's derived data.

The conversation tally (:mod:`cuegap.schema._conv_tally`) is what the count query reads;
an edit to it would change every shift rate without touching a ledgered row, so verify
recounts every configuration from the stored opinions.
"""

from __future__ import annotations

from sqlalchemy.engine import Connection

from cuegap.schema import conv_tally_mismatches


def conv_problems(conn: Connection) -> list[str]:
    """What no longer agrees in the conversation tables (empty when all agree)."""
    differ = conv_tally_mismatches(conn)
    if not differ:
        return []
    return [
        f"conversation tally: {differ} configuration(s) whose transition counts no longer "
        "match the stored opinions (the count table conversation analyses read was edited)"
    ]
