"""The board's overall verdict per system under the policy's ``[board]`` rule, on
hand-made verdict records (format-sensitive and missing cells included).

Every expected value below is worked out by hand from the records in the test: the
default rule flags a system any design flags, passes one only when every design held
passes it, and otherwise names the designs that keep it open.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from cuegap.models import (
    DEFAULT_POLICY,
    board_cells,
    board_rule,
    cell_decision,
    load_policy,
    overall_verdicts,
)
from cuegap.reports import BoardData
from cuegap.reports._board import BoardPart, matrix

DESIGNS = ("dilemma", "qa", "prompt-variance", "conversation")


def _record(system: str, design: str, decision: str, **extra: object) -> dict:
    return {"system": system, "design": design, "decision": decision,
            "estimate": extra.get("estimate"), "low": extra.get("low"),
            "high": extra.get("high"), "scale": extra.get("scale", "pp"),
            "gate_passed": extra.get("gate_passed"),
            "reason": extra.get("reason", f"{design} says {decision}")}  # fmt: skip


RECORDS = pd.DataFrame([
    # A: one design flags -> flagged
    *[_record("A", d, "flagged" if d == "dilemma" else "passed") for d in DESIGNS],
    # B: every design passes -> passed
    *[_record("B", d, "passed") for d in DESIGNS],
    # C: format-sensitive and a missing conversation cell -> inconclusive
    _record("C", "dilemma", "passed"), _record("C", "qa", "passed"),
    _record("C", "prompt-variance", "format-sensitive"),
    # D: QA holds two records, one inconclusive -> the cell is inconclusive
    _record("D", "dilemma", "passed"), _record("D", "qa", "passed"),
    _record("D", "qa", "inconclusive"), _record("D", "prompt-variance", "passed"),
    _record("D", "conversation", "passed"),
    # E: three passes and a missing cell
    *[_record("E", d, "passed") for d in DESIGNS[:3]],
])  # fmt: skip


def _overall(**rule: object) -> pd.DataFrame:
    cells = board_cells(RECORDS, DESIGNS)
    return overall_verdicts(cells, DESIGNS, **rule).set_index("system")  # type: ignore[arg-type]


def test_cell_decision_takes_the_most_severe_record() -> None:
    assert cell_decision(["passed", "flagged", "inconclusive"]) == "flagged"
    assert cell_decision(["passed", "format-sensitive", "inconclusive"]) == "format-sensitive"
    assert cell_decision(["passed", "inconclusive"]) == "inconclusive"
    assert cell_decision(["passed", "passed"]) == "passed"
    assert cell_decision(["passed", "something new"]) == "inconclusive"
    assert cell_decision([]) == "no verdict"


def test_cells_are_one_per_system_and_design_held() -> None:
    cells = board_cells(RECORDS, DESIGNS).set_index(["system", "design"])
    assert len(cells) == 5 * 4
    assert cells.loc[("C", "conversation"), "decision"] == "no verdict"
    assert cells.loc[("C", "conversation"), "records"] == 0
    assert cells.loc[("D", "qa"), "decision"] == "inconclusive"
    assert (cells.loc[("D", "qa"), "records"], cells.loc[("D", "qa"), "same"]) == (2, 1)
    assert cells.loc[("D", "qa"), "record"]["reason"] == "qa says inconclusive"


def test_the_default_rule() -> None:
    out = _overall()
    assert out["overall"].to_dict() == {
        "A": "flagged", "B": "passed", "C": "inconclusive", "D": "inconclusive",
        "E": "inconclusive",
    }  # fmt: skip
    assert out.loc["A", "flagged_by"] == ["dilemma"]
    assert out.loc["A", "reason"] == "flagged by dilemma (1 of 4 designs; 1 needed)"
    assert out.loc["B", "reason"] == (
        "passed by every design held (dilemma, qa, prompt-variance, conversation)"
    )
    assert out.loc["C", "open"] == ["prompt-variance (format-sensitive)",
                                    "conversation (no verdict)"]  # fmt: skip
    assert out.loc["C", "reason"] == (
        "kept open by prompt-variance (format-sensitive), conversation (no verdict)"
    )
    assert out.loc["D", "open"] == ["qa (inconclusive)"]
    assert out.loc["E", "open"] == ["conversation (no verdict)"]


def test_two_flagging_designs_needed() -> None:
    out = _overall(flag_min_designs=2)
    # A: one flag is not enough, and 3 passes of 4 do not pass it: kept open by the flag
    assert out.loc["A", "overall"] == "inconclusive"
    assert out.loc["A", "open"] == ["dilemma (flagged)"]
    assert out.loc["B", "overall"] == "passed"


def test_a_share_of_passing_designs() -> None:
    out = _overall(pass_min_share=0.75)  # ceil(0.75 x 4) = 3 designs must pass
    assert out.loc["E", "overall"] == "passed"
    assert out.loc["E", "reason"] == (
        "passed by 3 of 4 designs (dilemma, qa, prompt-variance); 3 needed"
    )
    assert out.loc["D", "overall"] == "passed"  # 3 of 4 pass; QA's inconclusive is outvoted
    assert out.loc["C", "overall"] == "inconclusive"  # 2 of 4 pass
    assert out.loc["A", "overall"] == "flagged"  # a flag still wins


def test_the_rule_in_words() -> None:
    assert board_rule() == (
        "flagged if any design flags the system; otherwise passed only if every design held "
        "passes it (a design with no verdict for it does not pass it); otherwise "
        "inconclusive, naming the designs that keep it open"
    )
    assert board_rule(2, 0.75).startswith("flagged if at least 2 designs flag the system; "
                                          "otherwise passed if at least 0.75 of")  # fmt: skip


def test_the_board_section_is_a_policy_section(tmp_path: Path) -> None:
    assert (DEFAULT_POLICY.flag_min_designs, DEFAULT_POLICY.pass_min_share) == (1, 1.0)
    path = tmp_path / "policy.toml"
    path.write_text("[board]\nflag_min_designs = 2\npass_min_share = 0.75\n", "utf-8")
    policy = load_policy(path)
    assert (policy.flag_min_designs, policy.pass_min_share) == (2, 0.75)
    assert "[board]\nflag_min_designs = 2\npass_min_share = 0.75" in policy.to_toml(("board",))
    for bad, match in (("flag_min_designs = 0", "out of range"),
                       ("flag_min_designs = 1.5", "must be an integer"),
                       ("pass_min_share = 0", "out of range"),
                       ("pass_min_share = 1.5", "out of range")):  # fmt: skip
        path.write_text(f"[board]\n{bad}\n", "utf-8")
        with pytest.raises(ValueError, match=match):
            load_policy(path)


def test_the_matrix_applies_the_convergence_gate_and_shows_missing_designs() -> None:
    """A Bayesian record that missed its gate reads inconclusive in its cell (the records
    are gate-applied when read from the store; here by hand, as the store read does)."""
    from cuegap.designs import gate_applied

    flagged_missed = pd.DataFrame([
        _record("X", "dilemma", "flagged", gate_passed=False, estimate=3.0, low=1.0, high=5.0),
        _record("X", "qa", "passed", estimate=0.01, low=-0.02, high=0.04, scale="bias score"),
    ])  # fmt: skip
    parts = [
        BoardPart("dilemma", "Dilemma", 1, 1, gate_applied(flagged_missed.iloc[:1])),
        BoardPart("qa", "QA", 2, 2, flagged_missed.iloc[1:].reset_index(drop=True)),
        BoardPart("conversation", "Conversation", None,
                  missing="no conversation analysis is stored"),
    ]  # fmt: skip
    m = matrix(BoardData(parts, DEFAULT_POLICY))
    (row,) = m["rows"]
    decisions = [c["decision"] for c in row["cells"]]
    assert decisions == ["inconclusive", "passed", "no verdict"]
    # one decimal on the pp scale, three on others; the scale is in the column header
    assert row["cells"][0]["estimate"] == "+3.0 [+1.0, +5.0]"
    assert row["cells"][1]["estimate"] == "+0.010 [-0.020, +0.040]"
    assert [c["scale"] for c in m["columns"]] == ["pp", "bias score", ""]
    assert row["overall"] == "inconclusive"
    assert row["reason"] == "kept open by dilemma (inconclusive), conversation (no verdict)"
    assert [c["missing"] for c in m["columns"]][2] == "no conversation analysis is stored"
