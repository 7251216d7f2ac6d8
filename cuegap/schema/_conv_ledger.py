"""Ledger parts of revision 0010: the conversations an ingest pass stored.

Added to a batch's digest only when the batch stored conversations, so that the digests
of batches sealed before revision 0010 do not change. The parts cover the batch's
``conversation`` rows (raw transcript text included), their ``conv_opinion`` rows, and
the configurations and agents those conversations point to.
"""

from __future__ import annotations

from sqlalchemy.engine import Connection

from cuegap.schema._qa_ledger import EMPTY, _digest_query

CONVERSATION_COLUMNS = (
    "id", "transcript_id", "content_hash", "run_id", "batch_id", "config_id", "question_id",
    "status", "rounds", "consensus", "retries", "source_file", "source_line", "raw",
)  # fmt: skip
OPINION_COLUMNS = (
    "id", "conversation_id", "round", "role", "agent_id", "opinion", "rationale", "retry_count",
)  # fmt: skip
CONFIG_COLUMNS = (
    "id", "config_key", "system_id", "experiment_name", "benchmark", "category", "subcategory",
    "demographics", "persona", "instantiation", "reveal", "reveal_persona",
    "reveal_demographics", "reveal_presence_mode", "max_rounds", "routing_strategy",
    "snapshot_path",
)  # fmt: skip
AGENT_COLUMNS = (
    "id", "config_id", "agent_id", "role", "agent_role", "demographics", "persona",
    "if_as_human", "model", "temperature",
)  # fmt: skip


def _cols(names: tuple[str, ...], alias: str) -> str:
    return ", ".join(f'{alias}."{c}"' for c in names)


def conv_batch_parts(conn: Connection, batch_id: int) -> dict[str, str]:
    """The conversation parts of an ingest batch (none when it stored no conversation)."""
    convs = _digest_query(
        conn,
        f"SELECT {_cols(CONVERSATION_COLUMNS, 'c')} FROM conversation c "
        "WHERE c.batch_id = ? ORDER BY c.id",
        (batch_id,),
    )
    if convs == EMPTY:
        return {}
    opinions = _digest_query(
        conn,
        f"SELECT {_cols(OPINION_COLUMNS, 'o')} FROM conv_opinion o "
        "JOIN conversation c ON c.id = o.conversation_id WHERE c.batch_id = ? ORDER BY o.id",
        (batch_id,),
    )
    used = "SELECT DISTINCT config_id FROM conversation WHERE batch_id = ?"
    configs = _digest_query(
        conn,
        f"SELECT {_cols(CONFIG_COLUMNS, 'g')} FROM conv_config g WHERE g.id IN ({used}) "
        "ORDER BY g.id",
        (batch_id,),
    )
    agents = _digest_query(
        conn,
        f"SELECT {_cols(AGENT_COLUMNS, 'a')} FROM conv_agent a WHERE a.config_id IN ({used}) "
        "ORDER BY a.id",
        (batch_id,),
    )
    snapshots = _digest_query(
        conn,
        f"SELECT g.id, g.snapshot FROM conv_config g WHERE g.id IN ({used}) ORDER BY g.id",
        (batch_id,),
    )
    return {
        "conversations": convs,
        "conv_opinions": opinions,
        "conv_configs": configs,
        "conv_agents": agents,
        "conv_snapshots": snapshots,
    }
