"""Result tables as stored: JSON serialisation and an order-independent content digest.

Pure pandas; shared by the analyses' writer (:mod:`cuegap.audit._store`) and reader
(:mod:`cuegap.audit._catalog`).
"""

from __future__ import annotations

import hashlib
import io

import numpy as np
import pandas as pd


def frame_digest(df: pd.DataFrame) -> str:
    """Order-independent digest of a table's content (rows hashed, sorted, hashed again)."""
    cols = sorted(df.columns)
    h = hashlib.sha256("\x1e".join(cols).encode())
    if not df.empty:
        rows = pd.util.hash_pandas_object(df[cols].astype(object), index=False).to_numpy()
        h.update(np.sort(rows).tobytes())
    return h.hexdigest()


def table_to_json(df: pd.DataFrame) -> str:
    """Serialise a result table losslessly enough for storage (pandas ``orient="table"``)."""
    return df.to_json(orient="table", index=False, double_precision=15)


def table_from_json(text: str) -> pd.DataFrame:
    """Inverse of :func:`table_to_json`."""
    return pd.read_json(io.StringIO(text), orient="table")
