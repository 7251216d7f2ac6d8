""" "What changed since the last signed report": one comparison of verdict records for every
design (:mod:`cuegap.changes`), on hand-built records and hand-built stores."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from cuegap.audit import save_analysis
from cuegap.changes import (
    CHANGE_COLUMNS,
    changes_since_signed,
    compare_records,
    last_signed,
    shown_records,
)
from cuegap.designs._verdicts import RECORD_COLUMNS
from cuegap.schema import make_engine, upgrade

W = 3.29  # half-width of a 90 % interval with se 2: 1.645 * 2


def records(rows: list[tuple], *, scale: str = "pp", level: float = 0.9) -> pd.DataFrame:
    """Verdict records of (system, decision, estimate[, compared[, gate_passed]])."""
    out = []
    for row in rows:
        system, decision, estimate, *rest = row
        compared = rest[0] if rest else "x vs y"
        gate = rest[1] if len(rest) > 1 else None
        rec = dict.fromkeys(RECORD_COLUMNS)
        rec.update(system=system, design="d", kind="k", compared=compared, estimate=estimate,
                   low=estimate - W, high=estimate + W, level=level, scale=scale,
                   method="bootstrap", gate_passed=gate, decision=decision, reason="r")  # fmt: skip
        out.append(rec)
    return pd.DataFrame(out, columns=list(RECORD_COLUMNS))


def test_decision_change_move_and_systems_that_come_and_go() -> None:
    """SEs from 90 % intervals of half-width 3.29: 2 each, so the spread is sqrt(8) = 2.83
    and a move must exceed 2 · 2.83 = 5.66.

    a: 2 -> 9, moved by 7 and inconclusive -> flagged; b: 5 -> 6 (1 < 5.66), no change;
    c: 0 -> 6 (6 > 5.66), same decision, moved; d: gone; e: new.
    """
    old = records([("a", "inconclusive", 2.0), ("b", "flagged", 5.0), ("c", "passed", 0.0),
                   ("d", "passed", 1.0)])  # fmt: skip
    new = records([("a", "flagged", 9.0), ("b", "flagged", 6.0), ("c", "passed", 6.0),
                   ("e", "passed", 0.0)])  # fmt: skip
    out = compare_records(old, new)
    assert tuple(out.columns) == CHANGE_COLUMNS
    out = out.set_index("system")
    assert list(out.index) == ["a", "b", "c", "d", "e"]
    assert out.loc["a", "note"] == "verdict changed from inconclusive to flagged"
    assert bool(out.loc["a", "gap_moved"]) and bool(out.loc["a", "verdict_changed"])
    assert out.loc["a", "gap_change_pp"] == pytest.approx(7.0)
    assert out.loc["b", "note"] == "no material change" and not out.loc["b", "gap_moved"]
    assert out.loc["c", "note"] == "gap moved by +6.0 pp, beyond its uncertainty"
    assert out.loc["d", "note"] == "no longer in the data" and pd.isna(out.loc["d", "new_verdict"])
    assert out.loc["e", "note"] == "new system: passed" and math.isnan(out.loc["e", "old_gap_pp"])


def test_the_interval_level_sets_the_standard_error() -> None:
    """A 95 % interval of half-width 3.29 has se 3.29 / 1.96 = 1.679: spread 2.37, so a move
    of 5 (> 4.75) counts; read as 90 % (se 2, bound 5.66) it would not."""
    old = records([("a", "passed", 0.0)], scale="bias score", level=0.95)
    new = records([("a", "passed", 5.0)], scale="bias score", level=0.95)
    out = compare_records(old, new)
    assert out.loc[0, "note"] == "gap moved by +5.000 (bias score), beyond its uncertainty"
    as90 = compare_records(records([("a", "passed", 0.0)]), records([("a", "passed", 5.0)]))
    assert as90.loc[0, "note"] == "no material change"


def test_several_verdicts_per_system_are_matched_by_what_they_compared() -> None:
    old = records([("a", "passed", 0.0, "s_dis"), ("a", "passed", 0.0, "s_amb")])
    new = records([("a", "passed", 0.0, "s_dis"), ("a", "format-sensitive", 0.0, "s_amb"),
                   ("a", "passed", 0.0, "gap")])  # fmt: skip
    out = compare_records(old, new).set_index("compared")
    assert out.loc["s_dis", "note"] == "s_dis: no material change"
    assert out.loc["s_amb", "note"] == "s_amb: verdict changed from passed to format-sensitive"
    assert out.loc["gap", "note"] == "gap: new: passed"
    assert set(out["system"]) == {"a"}


def test_one_verdict_per_system_that_compared_something_else() -> None:
    """The conversation design's deciding condition: the same decision of another
    comparison is named, not measured as a move."""
    old = records([("a", "passed", 0.0, "C at x, human")])
    new = records([("a", "passed", 9.0, "C at y, ai")])
    out = compare_records(old, new)
    assert out.loc[0, "note"] == "what was compared changed from C at x, human to C at y, ai"


# -- stores: which records a report showed --------------------------------------------------


@pytest.fixture
def engine(tmp_path):
    eng = make_engine(f"sqlite:///{tmp_path / 's.db'}")
    upgrade(eng)
    yield eng
    eng.dispose()


def _stored(engine, kind: str, status: str, settings: dict, rows: list[tuple], fp: str) -> int:
    """A QA analysis (or fit) whose verdicts are ``rows`` of (system, verdict, gap)."""
    table = pd.DataFrame(
        [{"system": s, "verdict": v, "reason": "why", "gap": g, "gap_low": g - 0.0329,
          "gap_high": g + 0.0329} for s, v, g in rows]
    )  # fmt: skip
    return save_analysis(engine, kind=kind, status=status, data_fingerprint=fp,
                         system_fingerprints={}, settings=settings,
                         tables={"verdicts": table})  # fmt: skip


def _sign(engine, analysis_id: int, tmp_path) -> None:
    from cuegap.compliance import register_report, sign_off

    path = tmp_path / f"report-{analysis_id}.html"
    path.write_text(f"<p>{analysis_id}</p>")
    register_report(engine, path, analysis_id=analysis_id)
    sign_off(engine, path, reviewer="Ada", decision="approve")


QA = {"strategy": "zero-shot", "delta": 0.05}


def test_a_missed_gate_reads_inconclusive_in_what_changed(engine, tmp_path) -> None:
    """The signed QA report showed a converged fit's flag; the new one has a fit that
    missed its gate, so every verdict it shows is inconclusive, even a fit that stored
    another decision."""
    freq = _stored(engine, "qa", "ok", QA, [("s", "passed", 0.0)], "a" * 64)
    _stored(engine, "qa_bayesian", "ok", {**QA, "bayes": {}}, [("s", "flagged", 0.2)], "a" * 64)
    _sign(engine, freq, tmp_path)
    assert last_signed(engine, ("qa", "qa_bayesian")) == freq
    assert shown_records(engine, freq)["decision"].tolist() == ["flagged"]
    new = _stored(engine, "qa", "ok", QA, [("s", "passed", 0.0)], "b" * 64)
    _stored(engine, "qa_bayesian", "not_converged", {**QA, "bayes": {}},
            [("s", "passed", 0.01)], "b" * 64)  # fmt: skip
    shown = shown_records(engine, new)
    assert shown["decision"].tolist() == ["inconclusive"] and not shown["gate_passed"][0]
    changes = changes_since_signed(engine, new)
    assert changes.loc[0, "note"] == "verdict changed from flagged to inconclusive"
    assert changes.loc[0, "old_gap_pp"] == pytest.approx(0.2)


def test_a_fit_of_other_data_or_settings_is_not_what_the_report_showed(engine) -> None:
    freq = _stored(engine, "qa", "ok", QA, [("s", "passed", 0.0)], "a" * 64)
    _stored(engine, "qa_bayesian", "ok", {**QA, "bayes": {}}, [("s", "flagged", 0.2)], "b" * 64)
    _stored(engine, "qa_bayesian", "ok", {**QA, "strategy": "cot"}, [("s", "flagged", 0.2)],
            "a" * 64)  # fmt: skip
    assert shown_records(engine, freq)["decision"].tolist() == ["passed"]


def test_nothing_signed_of_this_design_gives_no_changes(engine, tmp_path) -> None:
    """A signed report of another design is not this design's baseline."""
    dilemma = _stored(engine, "frequentist", "ok", {}, [("s", "passed", 0.0)], "a" * 64)
    _sign(engine, dilemma, tmp_path)
    qa = _stored(engine, "qa", "ok", QA, [("s", "passed", 0.0)], "a" * 64)
    assert changes_since_signed(engine, qa) is None


def test_an_analysis_stored_before_verdict_records_gets_them_built(
    engine, tmp_path, monkeypatch
) -> None:
    """An older cuegap stored no verdict records: its design builds them from ``verdicts``."""
    import cuegap.audit._store as store

    with monkeypatch.context() as m:
        m.setattr(store, "_verdict_records", lambda *a: None)
        old = _stored(engine, "qa", "ok", QA, [("s", "flagged", 0.3)], "a" * 64)
    _sign(engine, old, tmp_path)
    new = _stored(engine, "qa", "ok", QA, [("s", "flagged", 0.1)], "b" * 64)
    changes = changes_since_signed(engine, new)
    assert changes.loc[0, "old_gap_pp"] == pytest.approx(0.3)
    assert changes.loc[0, "note"] == "gap moved by -0.200 (bias score), beyond its uncertainty"
