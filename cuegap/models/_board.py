"""The board's overall verdict per system, across the designs a store holds.

A store that holds several study designs gets one board report (``cuegap report``): a
systems × designs matrix of the stored verdict records, and one overall line per system
under the ``[board]`` section of the policy:

- **flagged** when at least ``flag_min_designs`` designs flag the system (default 1: any);
- else **passed** when at least ``pass_min_share`` of the designs held pass it (default 1:
  every design; a design with no verdict for the system does not pass it);
- else **inconclusive**, naming the designs that keep it open (their cell's decision:
  inconclusive, format-sensitive, no verdict, or flagged by too few designs to flag).

Pure functions over DataFrames of verdict records (:mod:`cuegap.designs._verdicts`);
nothing here reads the store.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from cuegap.models._policy import PolicyKey, Range

if TYPE_CHECKING:  # pandas loads on first use: declaring [board] stays cheap
    import pandas as pd

#: The ``[board]`` policy section (declared with the built-in designs' sections).
BOARD_KEYS: tuple[PolicyKey, ...] = (
    PolicyKey("flag_min_designs", 1, Range(1, 1_000, unit="an integer count of designs"),
              "a system is flagged overall when at least this many designs flag it"),
    PolicyKey("pass_min_share", 1.0, Range(0, 1, low_open=True, unit="a share of designs"),
              "a system that is not flagged passes overall when at least this share of "
              "the designs held pass it (1: every design)"),
)  # fmt: skip

#: A cell's decision when a design holds several records for one system: the first of
#: these that any record has.
_SEVERITY = ("flagged", "format-sensitive", "inconclusive", "passed")
#: A cell with no verdict record of the design for the system.
MISSING = "no verdict"
OVERALL_COLUMNS = ("system", "overall", "flagged_by", "passed_by", "open", "reason")


def cell_decision(decisions: Sequence[str]) -> str:
    """The decision of one matrix cell: the most severe of its records' decisions
    (flagged, then format-sensitive, then inconclusive, then passed); ``MISSING`` when
    there is none. An unknown decision counts as inconclusive."""
    found = {d if d in _SEVERITY else "inconclusive" for d in decisions}
    for decision in _SEVERITY:
        if decision in found:
            return decision
    return MISSING


def board_cells(records: pd.DataFrame, designs: Sequence[str]) -> pd.DataFrame:
    """One row per system and design held: the cell decision and its deciding record.

    Parameters
    ----------
    records : DataFrame
        Verdict records of every design shown (``system``, ``design``, ``decision`` and
        the other record columns), the convergence gate already applied.
    designs : sequence of str
        The designs held, in column order; a design with no record for a system gets a
        ``MISSING`` cell.

    Returns
    -------
    DataFrame
        ``system``, ``design``, ``decision``, ``records`` (how many records the cell holds),
        ``same`` (how many of them have the cell's decision) and ``record`` (the first
        record with the cell's decision, as a dict; None for a missing cell).
    """
    import pandas as pd

    systems = sorted(set(records["system"].astype(str))) if len(records) else []
    rows: list[dict[str, Any]] = []
    for system in systems:
        mine = records[records["system"].astype(str) == system]
        for design in designs:
            cell = mine[mine["design"] == design]
            decision = cell_decision(list(cell["decision"].astype(str)))
            chosen = cell[cell["decision"].astype(str) == decision]
            rows.append({
                "system": system, "design": design, "decision": decision,
                "records": len(cell), "same": len(chosen),
                "record": chosen.iloc[0].to_dict() if len(chosen) else None,
            })  # fmt: skip
    return pd.DataFrame(rows, columns=["system", "design", "decision", "records", "same",
                                       "record"])  # fmt: skip


def _listed(names: Sequence[str]) -> str:
    return ", ".join(names) if names else "none"


def overall_verdicts(
    cells: pd.DataFrame, designs: Sequence[str], *, flag_min_designs: int = 1,
    pass_min_share: float = 1.0,
) -> pd.DataFrame:  # fmt: skip
    """The overall verdict of each system under the ``[board]`` rule.

    Parameters
    ----------
    cells : DataFrame
        :func:`board_cells`.
    designs : sequence of str
        The designs held (the matrix columns).
    flag_min_designs : int
        Designs that must flag a system for it to be flagged overall.
    pass_min_share : float
        Share of ``designs`` that must pass a system (not flagged overall) for it to pass;
        the count needed is ``ceil(pass_min_share × len(designs))``.

    Returns
    -------
    DataFrame
        One row per system (:data:`OVERALL_COLUMNS`): ``overall`` (flagged, passed or
        inconclusive), the designs that flag and pass it, ``open`` (the designs that keep
        it open, each with its cell's decision) and a ``reason`` sentence.

    Notes
    -----
    With the defaults: flagged if any design flags; passed only if every design held
    passes; otherwise inconclusive, naming the designs that keep it open.
    """
    import pandas as pd

    need_pass = max(1, math.ceil(round(pass_min_share * len(designs), 9)))
    rows = []
    for system, mine in cells.groupby("system", sort=True):
        decided = dict(zip(mine["design"], mine["decision"].astype(str), strict=True))
        flagged = [d for d in designs if decided.get(d, MISSING) == "flagged"]
        passed = [d for d in designs if decided.get(d, MISSING) == "passed"]
        open_ = [f"{d} ({decided.get(d, MISSING)})" for d in designs if d not in passed]
        if len(flagged) >= flag_min_designs:
            overall = "flagged"
            reason = (f"flagged by {_listed(flagged)} ({len(flagged)} of {len(designs)} "
                      f"designs; {flag_min_designs} needed)")  # fmt: skip
        elif len(passed) >= need_pass:
            overall = "passed"
            reason = (
                f"passed by every design held ({_listed(passed)})"
                if len(passed) == len(designs)
                else f"passed by {len(passed)} of {len(designs)} designs ({_listed(passed)}); "
                f"{need_pass} needed"
            )
        else:
            overall = "inconclusive"
            reason = f"kept open by {_listed(open_)}"
        rows.append({"system": str(system), "overall": overall, "flagged_by": flagged,
                     "passed_by": passed, "open": open_, "reason": reason})  # fmt: skip
    return pd.DataFrame(rows, columns=list(OVERALL_COLUMNS))


def board_rule(flag_min_designs: int = 1, pass_min_share: float = 1.0) -> str:
    """The ``[board]`` rule in words, as the board report states it."""
    flag = (
        "flagged if any design flags the system"
        if flag_min_designs == 1
        else f"flagged if at least {flag_min_designs} designs flag the system"
    )
    passed = (
        "passed only if every design held passes it"
        if pass_min_share >= 1
        else f"passed if at least {pass_min_share:g} of the designs held pass it"
    )
    return (
        f"{flag}; otherwise {passed} (a design with no verdict for it does not pass it); "
        "otherwise inconclusive, naming the designs that keep it open"
    )
