"""Listing and reading stored analyses and their result tables.

What ``cuegap analyses``, ``cuegap tables`` and ``cuegap export`` read: every stored
analysis with what it compared, the tables of each, one table as a DataFrame, CSV or
Parquet. Reads the database through :mod:`cuegap.schema`; computes nothing.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
from sqlalchemy import select
from sqlalchemy.engine import Engine

from cuegap.audit._table_codec import table_from_json
from cuegap.files import open_output, refuse_link
from cuegap.schema import Analysis, AnalysisTable


def analysis_kinds() -> tuple[str, ...]:
    """Kinds of stored analyses, of every registered design (:mod:`cuegap.designs`)."""
    from cuegap.designs import analysis_kinds as registered_kinds

    return registered_kinds()


def list_analyses(engine: Engine) -> pd.DataFrame:
    """Every stored analysis, newest first, with what it compared and how.

    Returns
    -------
    DataFrame
        ``id``, ``kind``, ``status``, ``created_at``, ``compared`` ("direct vs
        puzzled-hard"; "explicit vs implicit (zero-shot)" for the QA design), ``consequences``
        (with / without), ``delta_pp`` (the dilemma policy's δ), ``delta`` (the δ the
        analysis used, with its unit),
        ``sampling`` ("1000 boot" replicates, or "4×1000 draws" of a Bayesian fit) and
        ``data_fingerprint``.
    """
    stmt = select(
        Analysis.id,
        Analysis.kind,
        Analysis.status,
        Analysis.created_at,
        Analysis.settings,
        Analysis.data_fingerprint,
    ).order_by(Analysis.id.desc())
    rows = []
    with engine.connect() as conn:
        for r in conn.execute(stmt):
            st = r.settings if not isinstance(r.settings, str) else json.loads(r.settings)
            st = st or {}
            rows.append(
                {
                    "id": int(r.id),
                    "kind": r.kind,
                    "status": r.status,
                    "created_at": r.created_at,
                    **_describe(r.kind, st),
                    "data_fingerprint": r.data_fingerprint,
                }
            )
    columns = [
        "id",
        "kind",
        "status",
        "created_at",
        "compared",
        "consequences",
        "delta_pp",
        "delta",
        "sampling",
        "data_fingerprint",
    ]
    return pd.DataFrame(rows, columns=columns)


def require_analysis(engine: Engine, analysis_id: int) -> None:
    """Refuse an analysis id the store does not hold, naming it and the newest one.

    Raises
    ------
    ValueError
        When there is no analysis ``analysis_id``.
    """
    with engine.connect() as conn:
        if conn.execute(select(Analysis.id).where(Analysis.id == analysis_id)).first():
            return
        newest = conn.execute(select(Analysis.id).order_by(Analysis.id.desc()).limit(1)).scalar()
    held = f"the newest is {newest}" if newest is not None else "it has none"
    raise ValueError(
        f"no analysis {analysis_id} in the store ({held}; `cuegap analyses` lists them)"
    )


def list_tables(engine: Engine, analysis_id: int | None = None) -> pd.DataFrame:
    """Names, kinds, row counts and descriptions of the stored tables of an analysis.

    Parameters
    ----------
    analysis_id : int, optional
        Defaults to the newest table of each name and analysis kind over all analyses (a
        Bayesian analysis stores its own ``verdicts`` beside the frequentist one).

    Raises
    ------
    ValueError
        When there is no analysis ``analysis_id``.
    """
    stmt = select(
        AnalysisTable.analysis_id,
        Analysis.kind,
        AnalysisTable.name,
        AnalysisTable.n_rows,
        AnalysisTable.description,
    ).join(Analysis, Analysis.id == AnalysisTable.analysis_id)
    if analysis_id is not None:
        require_analysis(engine, analysis_id)
        stmt = stmt.where(AnalysisTable.analysis_id == analysis_id)
    with engine.connect() as conn:
        df = pd.DataFrame(
            conn.execute(stmt.order_by(AnalysisTable.analysis_id.desc())).fetchall(),
            columns=["analysis_id", "kind", "name", "rows", "description"],
        )
    df = df.drop_duplicates(["name", "kind"])
    return df.sort_values(["name", "kind"]).reset_index(drop=True)


def find_table(
    engine: Engine, name: str, analysis_id: int | None = None, kind: str | None = None
) -> tuple[int, str]:
    """Which stored table :func:`load_table` reads: (analysis id, analysis kind).

    Parameters
    ----------
    name : str
        Table name (see :data:`TABLES` and :func:`list_tables`).
    analysis_id : int, optional
        Which analysis; by default the newest one (of ``kind``) that has this table.
    kind : str, optional
        Only analyses of this kind (one of :func:`cuegap.designs.analysis_kinds`).

    Raises
    ------
    KeyError
        When no such table is stored; the message lists the stored ones.
    ValueError
        For an unknown ``kind`` or ``analysis_id``.
    """
    if kind is not None and kind not in (known := analysis_kinds()):
        raise ValueError(f"kind must be one of {', '.join(known)}, but got {kind!r}")
    stmt = (
        select(AnalysisTable.analysis_id, Analysis.kind)
        .join(Analysis, Analysis.id == AnalysisTable.analysis_id)
        .where(AnalysisTable.name == name)
    )
    if analysis_id is not None:
        require_analysis(engine, analysis_id)
        stmt = stmt.where(AnalysisTable.analysis_id == analysis_id)
    if kind is not None:
        stmt = stmt.where(Analysis.kind == kind)
    with engine.connect() as conn:
        row = conn.execute(stmt.order_by(AnalysisTable.analysis_id.desc()).limit(1)).first()
    if row is None:
        known = ", ".join(sorted(set(list_tables(engine, analysis_id)["name"])))
        where = f" in analysis {analysis_id}" if analysis_id is not None else ""
        where += f" of a {kind} analysis" if kind is not None else ""
        raise KeyError(
            f"no result table {name!r}{where}; stored tables: "
            f"{known or 'none (run cuegap analyze)'}"
        )
    return int(row[0]), str(row[1])


def load_table(
    engine: Engine, name: str, analysis_id: int | None = None, kind: str | None = None
) -> pd.DataFrame:
    """A stored result table as a DataFrame (which one: see :func:`find_table`).

    Raises
    ------
    KeyError
        When no analysis has stored a table of that name; the message lists the known ones.
    """
    found, _ = find_table(engine, name, analysis_id, kind)
    stmt = select(AnalysisTable.data).where(
        AnalysisTable.name == name, AnalysisTable.analysis_id == found
    )
    with engine.connect() as conn:
        return table_from_json(conn.execute(stmt).scalar_one())


def export_table(
    engine: Engine,
    name: str,
    out: Path | str,
    analysis_id: int | None = None,
    kind: str | None = None,
) -> Path:
    """Write a stored result table to CSV or Parquet, chosen by the file extension.

    Raises
    ------
    ValueError
        When the extension is neither ``.csv`` nor ``.parquet``, or ``out`` is a symbolic
        link (never written through).
    KeyError
        When the table does not exist.
    """
    out = Path(out)
    suffix = out.suffix.lower()
    if suffix not in (".csv", ".parquet"):
        raise ValueError(f"{out}: the output must end in .csv or .parquet, not {suffix!r}")
    refuse_link(out)  # before the table is read: fail fast
    df = load_table(engine, name, analysis_id, kind)
    out.parent.mkdir(parents=True, exist_ok=True)
    with open_output(out) as fh:
        if suffix == ".csv":
            fh.write(df.to_csv(index=False).encode("utf-8"))
        else:
            df.to_parquet(fh, index=False)
    return out


def _describe(kind: str, st: dict) -> dict[str, object]:
    """What an analysis of ``kind`` with settings ``st`` compared, its δ and its sampling,
    in its design's own terms (a conversation's δ is on the shift-rate scale, not pp)."""
    from cuegap.designs import for_kind, registered

    design = registered().get(str(st.get("design", "")))
    if design is None:
        try:
            design = for_kind(kind)
        except ValueError:  # a kind no registered design stores (a plug-in removed)
            return {"compared": "", "consequences": "", "delta_pp": None, "delta": "",
                    "sampling": ""}  # fmt: skip
    return design.describe(kind, st)
