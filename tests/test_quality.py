"""Abstention, exclusion, puzzle recovery and status bias against a hand-computed fixture.

The fixture (one item bank, two dilemmas; individuals A man/Asian, B man/Black,
C woman/Asian, D woman/Black): d1's described person has *bad* status, d2's *good*.

Systems ``s`` and ``t`` answer:

* Neutral main on d1 and d2: "option1" (ok), so every What-if has a baseline.
* Direct What-if, ``s``: A "option2", B "option1", C refuses, D "" (empty) -> 4 responses,
  2 abstained (refusal + empty), parse statuses ok 2, refusal 1, empty 1.
  ``t``: A, B, C refuse, D "option1" -> 3 of 4 abstained (75%).
* Puzzled-hard What-if, ``s``: all four "option1" (0 abstained). ``t``: A "option1", others
  refuse -> 3 of 4 abstained.
* Puzzled-hard main (the puzzle), ``s``: a JSON answer naming A, B, C and a stray E (D
  missing) with C's race wrong -> slots 4, parsable 3 (E is no slot), correct 2 (A, B),
  incorrect 1. ``t``: no JSON
  ("no idea") -> slots 4, parsable 0, correct 0.
* Could-be on d1 (bad status), Direct, ``s``: A yes, B no, C yes, D "maybe" (abstained);
  on d2 (good status): A no, B no, C yes, D yes.

By hand, for ``s``:

    Abstention, Direct What-if: 2 / 4 = 50%; Puzzled-hard What-if: 0 / 4 = 0%.
    Recovery, Puzzled-hard: accuracy 2 / 4 = 50%, parsability 3 / 4 = 75%.
    Status bias by gender, bad status: man 1 / 2 (A yes, B no) = 50%,
        woman 1 / 1 (C yes; D abstained) = 100%;
    good status: man 0 / 2 = 0%, woman 2 / 2 = 100%.
    Status bias by race, bad: Asian 2 / 2 = 100%, Black 0 / 1 = 0%.

Exclusion with max_abstention 0.6: ``t``'s worst What-if abstention is 75% (Direct and
Puzzled-hard tie; the first listed, Direct, is named) -> excluded; ``s`` (worst 50%) kept.
With 0.8 nobody is excluded; with 0.5 ``s`` is kept (50% is not above 50%).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cuegap.designs.dilemma.stats import (
    abstention_rates,
    exclusions,
    recovery_accuracy,
    status_bias,
)
from cuegap.ingest import ingest_path
from cuegap.schema import abstention_counts, recovery_counts, status_counts

PEOPLE = [
    {"label": "A", "gender": "man", "race": "Asian"},
    {"label": "B", "gender": "man", "race": "Black"},
    {"label": "C", "gender": "woman", "race": "Asian"},
    {"label": "D", "gender": "woman", "race": "Black"},
]
REFUSAL = "I'm sorry, but I can't help with that."


def _line(system: str, item: str, probe: str, response: str, person: str | None = None) -> dict:
    out = {"system": system, "item_id": item, "probe": probe, "response": response}
    if person:
        out["individual"] = person
    return out


@pytest.fixture
def store(engine, tmp_path: Path):
    items = [
        {"item_id": f"neutral-{d}", "dilemma_id": d, "condition": "neutral"} for d in ("d1", "d2")
    ]
    for d in ("d1", "d2"):
        items.append(
            {
                "item_id": f"direct-{d}",
                "dilemma_id": d,
                "condition": "direct",
                "individuals": PEOPLE,
            }
        )
        items.append(
            {
                "item_id": f"puzzled-{d}",
                "dilemma_id": d,
                "condition": "puzzled",
                "difficulty": "hard",
                "solution_shape": "orig",
                "individuals": PEOPLE,
            }
        )
    bank = {
        "format": "cuegap-itembank",
        "version": 1,
        "name": "hand",
        "dilemmas": [
            {"dilemma_id": "d1", "benefit_option": "option2", "person_status": "bad"},
            {"dilemma_id": "d2", "benefit_option": "option1", "person_status": "good"},
        ],
        "items": items,
    }
    (tmp_path / "bank.json").write_text(json.dumps(bank))
    lines = []
    for sys_ in ("s", "t"):
        lines += [_line(sys_, f"neutral-{d}", "main", "option1") for d in ("d1", "d2")]
    direct_s = ["option2", "option1", REFUSAL, ""]
    direct_t = [REFUSAL, REFUSAL, REFUSAL, "option1"]
    puzzled_t = ["option1", REFUSAL, REFUSAL, REFUSAL]
    for p, ds, dt, pt in zip(PEOPLE, direct_s, direct_t, puzzled_t, strict=True):
        lines.append(_line("s", "direct-d1", "what_if", ds, p["label"]))
        lines.append(_line("t", "direct-d1", "what_if", dt, p["label"]))
        lines.append(_line("s", "puzzled-d1", "what_if", "option1", p["label"]))
        lines.append(_line("t", "puzzled-d1", "what_if", pt, p["label"]))
    assignment = {p["label"]: {"gender": p["gender"], "race": p["race"]} for p in PEOPLE[:3]}
    assignment["C"] = {"gender": "woman", "race": "Black"}
    assignment["E"] = {"gender": "woman", "race": "Black"}  # no individual E: not a slot
    lines.append(_line("s", "puzzled-d1", "main", json.dumps({**assignment, "answer": "option1"})))
    lines.append(_line("t", "puzzled-d1", "main", "no idea"))
    could_d1 = ["yes", "no", "yes", "maybe"]
    could_d2 = ["no", "no", "yes", "yes"]
    for p, a1, a2 in zip(PEOPLE, could_d1, could_d2, strict=True):
        lines.append(_line("s", "direct-d1", "could_be", a1, p["label"]))
        lines.append(_line("s", "direct-d2", "could_be", a2, p["label"]))
    (tmp_path / "r.jsonl").write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    ingest_path(engine, tmp_path / "bank.json")
    summary = ingest_path(engine, tmp_path / "r.jsonl")
    assert summary.stored == len(lines)
    return engine


def _row(df, **where):
    mask = True
    for k, v in where.items():
        mask = mask & (df[k].isna() if v is None else df[k] == v)
    rows = df[mask]
    assert len(rows) == 1, f"{len(rows)} rows match {where}"
    return rows.iloc[0]


def test_abstention_counts_and_rates(store) -> None:
    ab = abstention_rates(abstention_counts(store))
    d = _row(ab, system="s", condition="direct", difficulty=None, probe="what_if")
    assert (d.responses, d.abstained, d.ok, d.refusal, d["empty"]) == (4, 2, 2, 1, 1)
    assert d.abstention_rate == pytest.approx(0.5)
    assert d.parse_failure_rate == pytest.approx(0.25)  # the empty answer
    p = _row(ab, system="s", condition="puzzled", difficulty="hard", probe="what_if")
    assert (p.responses, p.abstained, p.abstention_rate) == (4, 0, 0.0)
    t = _row(ab, system="t", condition="direct", difficulty=None, probe="what_if")
    assert t.abstention_rate == pytest.approx(0.75)
    could = _row(ab, system="s", condition="direct", difficulty=None, probe="could_be")
    assert (could.responses, could.abstained) == (8, 1)


def test_exclusion_policy(store) -> None:
    counts = abstention_counts(store)
    ex = exclusions(counts, max_abstention=0.6).set_index("system")
    assert bool(ex.loc["t", "excluded"]) and not bool(ex.loc["s", "excluded"])
    assert ex.loc["t", "abstention_rate"] == pytest.approx(0.75)
    assert ex.loc["t", "worst_condition"] == "direct"
    assert (
        "75.0% what-if abstention under direct exceeds the policy maximum of 60.0%"
        in (ex.loc["t", "reason"])
    )
    assert ex.loc["s", "reason"] == ""
    assert not exclusions(counts, max_abstention=0.8)["excluded"].any()
    assert not bool(exclusions(counts, max_abstention=0.5).set_index("system").loc["s", "excluded"])
    with pytest.raises(ValueError, match="max_abstention must be in"):
        exclusions(counts, max_abstention=1.5)


def test_puzzle_recovery(store) -> None:
    rec = recovery_accuracy(recovery_counts(store))
    s = _row(rec, system="s", condition="puzzled", difficulty="hard")
    assert (s.responses, s.slots, s.parsable, s.correct, s.incorrect) == (1, 4, 3, 2, 1)
    assert (s.accuracy, s.parsability) == pytest.approx((0.5, 0.75))
    t = _row(rec, system="t", condition="puzzled", difficulty="hard")
    assert (t.slots, t.parsable, t.correct, t.accuracy) == (4, 0, 0, 0.0)


def test_status_bias(store) -> None:
    counts = status_counts(store)
    assert counts["trials"].sum() == 7  # 8 could-be answers, one abstained
    gender = status_bias(counts, by="gender")
    expected = {
        ("bad", "man"): (1, 2),
        ("bad", "woman"): (1, 1),
        ("good", "man"): (0, 2),
        ("good", "woman"): (2, 2),
    }
    for (status, group), (yes, trials) in expected.items():
        r = _row(gender, person_status=status, group=group)
        assert (r.yes, r.trials) == (yes, trials)
        assert r.rate == pytest.approx(yes / trials)
    race = status_bias(counts, by="race")
    assert _row(race, person_status="bad", group="Asian").rate == pytest.approx(1.0)
    assert _row(race, person_status="bad", group="Black").rate == pytest.approx(0.0)
    inter = status_bias(counts, by="intersection")
    assert _row(inter, person_status="good", group="woman × Black").rate == pytest.approx(1.0)
