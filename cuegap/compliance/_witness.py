"""Witness files: ledger heads kept outside the store, and the check against them.

:func:`write_witness` appends the current head (``cuegap witness FILE``);
:func:`read_witness` reads them back for ``cuegap verify --against FILE``.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from sqlalchemy.engine import Engine

from cuegap.compliance._registry import ComplianceError
from cuegap.compliance._verify_ledger import Verification
from cuegap.files import append_output
from cuegap.schema import ledger


def read_witness(path: Path | str) -> list[dict]:
    """The ledger heads recorded in a witness file (one JSON object per line)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ComplianceError(f"{path}: cannot read the witness file ({exc})") from None
    out = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
            out.append({"seq": int(obj["seq"]), "entry_hash": str(obj["entry_hash"])})
        except (ValueError, KeyError, TypeError):
            raise ComplianceError(
                f"{path}, line {n}: not a witness record (expected seq and entry_hash)"
            ) from None
    if not out:
        raise ComplianceError(f"{path}: the witness file holds no ledger heads")
    return out


def write_witness(engine: Engine, path: Path | str) -> ledger.Entry:
    """Append the ledger's current head to a witness file kept outside the store.

    Keep the file where the store's editors cannot change it (a compliance repository,
    write-once storage, an e-mail to the review board): ``cuegap verify --against FILE``
    then detects any rewrite or truncation of the ledger up to that head.
    """
    with engine.connect() as conn:
        top = ledger.head(conn)
    if top is None:
        raise ComplianceError("the store has no ledger (run `cuegap init` to upgrade it)")
    line = json.dumps(
        {
            "seq": top.seq,
            "entry_hash": top.entry_hash,
            "recorded_at": top.recorded_at,
            "witnessed_at": datetime.now(UTC).isoformat(timespec="seconds"),
        },
        sort_keys=True,
    )
    path = Path(path)
    try:
        append_output(path, (line + "\n").encode("utf-8"))
    except ValueError as exc:  # a link, a folder, a pipe
        raise ComplianceError(str(exc)) from None
    except OSError as exc:
        raise ComplianceError(f"{path}: cannot write the witness file: {exc.strerror}") from None
    return top


def _check_witness(entries: list[ledger.Entry], witness: list[dict], out: Verification) -> None:
    by_seq = {e.seq: e.entry_hash for e in entries}
    for w in witness:
        have = by_seq.get(w["seq"])
        if have is None:
            out.problems.append(
                f"ledger entry {w['seq']}, witnessed outside the store, is gone: the ledger "
                "was truncated"
            )
        elif have != w["entry_hash"]:
            out.problems.append(
                f"ledger entry {w['seq']} differs from the witnessed one "
                f"({have[:12]}… != {w['entry_hash'][:12]}…): the ledger was rewritten"
            )
        else:
            out.anchors.append((have, f"witnessed {w.get('witnessed_at') or 'head'}"))
