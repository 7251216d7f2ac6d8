"""Which two conditions an analysis compares: defaults, the companion designs' explicit /
implicit pair, the CLI's --explicit / --implicit, and clear errors.

The store is test_rates' hand-computed fixture with its conditions renamed: Direct ->
``explicit`` and Puzzled-hard -> ``implicit`` (no difficulty). Its macro gap is +100 pp by
hand (see tests/test_rates.py).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cuegap.audit import list_analyses
from cuegap.cli import app
from cuegap.designs.dilemma._analysis import analyze
from cuegap.designs.dilemma._analysis_settings import AnalysisSettings, parse_condition
from cuegap.designs.dilemma.stats import condition_label
from cuegap.ingest import ingest_path
from cuegap.schema import make_engine, upgrade
from tests.test_rates import ANSWERS, PEOPLE

RENAME = {"direct": "explicit", "puzzled": "implicit"}


def _write(tmp_path: Path) -> tuple[Path, Path]:
    items = [
        {"item_id": f"neutral-{d}", "dilemma_id": d, "condition": "neutral"} for d in ("d1", "d2")
    ]
    lines = [
        {"system": "s", "item_id": f"neutral-{d}", "probe": "main", "response": "option1"}
        for d in ("d1", "d2")
    ]
    for (cond, d), answers in ANSWERS.items():
        item_id = f"{RENAME[cond]}-{d}"
        items.append(
            {"item_id": item_id, "dilemma_id": d, "condition": RENAME[cond], "individuals": PEOPLE}
        )
        for person, a in zip(PEOPLE, answers, strict=True):
            lines.append(
                {
                    "system": "s",
                    "item_id": item_id,
                    "probe": "what_if",
                    "individual": person["label"],
                    "response": f"option{a}",
                }
            )
    bank = {
        "format": "cuegap-itembank",
        "version": 1,
        "name": "companion",
        "dilemmas": [
            {"dilemma_id": "d1", "benefit_option": "option2"},
            {"dilemma_id": "d2", "benefit_option": "option1"},
        ],
        "items": items,
    }
    (tmp_path / "bank.json").write_text(json.dumps(bank))
    (tmp_path / "r.jsonl").write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    return tmp_path / "bank.json", tmp_path / "r.jsonl"


@pytest.fixture
def companion(engine, tmp_path: Path):
    for path in _write(tmp_path):
        ingest_path(engine, path)
    return engine


@pytest.mark.parametrize(
    ("text", "cond"),
    [
        ("puzzled-hard", ("puzzled", "hard")),
        ("puzzled-easy", ("puzzled", "easy")),
        ("named", ("named", None)),
        ("formal_named", ("formal_named", None)),
        ("formal_named-intermediate", ("formal_named", "intermediate")),
        (" implicit ", ("implicit", None)),
        ("odd-name", ("odd-name", None)),  # not a difficulty: part of the name
    ],
)
def test_parse_condition(text: str, cond: tuple) -> None:
    assert parse_condition(text) == cond
    assert parse_condition(condition_label(cond)) == cond


def test_explicit_implicit_pair_is_compared_when_the_store_has_no_direct(companion) -> None:
    result = analyze(companion, AnalysisSettings(n_boot=0))
    assert result.settings["explicit"] == ["explicit", None]
    assert result.settings["implicit"] == ["implicit", None]
    macro = result.tables["macro_gap"].set_index("consequences").loc[True]
    assert (macro.net_direct_pp, macro.net_puzzled_pp, macro.gap_pp) == pytest.approx(
        (50, -50, 100)
    )  # the hand-computed values of tests/test_rates.py
    verdict = result.tables["verdicts"].set_index("system").loc["s"]
    assert "+100" in verdict["reason"] or verdict["gap_pp"] == pytest.approx(100)


def test_a_condition_without_decisions_is_a_clear_error(companion) -> None:
    settings = AnalysisSettings(n_boot=0, implicit=("puzzled", "easy"))
    with pytest.raises(ValueError) as err:
        analyze(companion, settings)
    message = str(err.value)
    assert "the implicit condition 'puzzled-easy' has no What-if decisions" in message
    assert "(conditions with decisions: explicit, implicit)" in message


def test_cli_chooses_conditions_and_names_them(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    upgrade(make_engine(f"sqlite:///{db}"))
    for path in _write(tmp_path):
        ingest_path(make_engine(f"sqlite:///{db}"), path)
    runner = CliRunner()
    base = ["--db", str(db), "analyze", "--boot", "0"]
    res = runner.invoke(app, base)
    assert res.exit_code == 0, res.output
    assert "Gap = net under explicit (identity stated) - net under implicit" in res.output
    assert "net explicit" in res.output and "+100.0" in res.output
    res = runner.invoke(app, [*base, "--explicit", "implicit", "--implicit", "explicit"])
    assert res.exit_code == 0 and "-100.0" in res.output  # swapped: the gap changes sign
    res = runner.invoke(app, base)  # the first analysis again: reused, but not the newest
    text = " ".join(res.output.split())
    assert "reused" in text and "use `cuegap report --analysis 1` for this one" in text
    res = runner.invoke(app, ["--db", str(db), "analyses"])
    assert res.exit_code == 0, res.output
    assert "report --analysis ID" in " ".join(res.output.split())
    listed = list_analyses(make_engine(f"sqlite:///{db}"))
    assert list(listed["id"]) == [2, 1]  # newest first
    assert list(listed["compared"]) == ["implicit vs explicit", "explicit vs implicit"]
    assert set(listed["kind"]) == {"frequentist"} and set(listed["sampling"]) == {"0 boot"}
    assert set(listed["consequences"]) == {"with"} and set(listed["delta_pp"]) == {2.0}
    # a condition chosen on the command line is kept as given, even when it is the
    # default; the one not chosen still falls back to what the store has
    res = runner.invoke(app, [*base, "--implicit", "puzzled-hard"])
    assert res.exit_code == 2
    assert "the implicit condition 'puzzled-hard' has no What-if decisions" in res.output
    assert "(conditions with decisions: explicit, implicit)" in res.output
    res = runner.invoke(app, [*base, "--explicit", "direct", "--implicit", "implicit"])
    assert res.exit_code == 2
    assert "the explicit condition 'direct' has no What-if decisions" in res.output
    res = runner.invoke(app, [*base, "--implicit", "implicit"])
    assert res.exit_code == 0 and "+100.0" in res.output  # explicit fell back, reused


def test_report_names_the_compared_conditions(companion) -> None:
    from datetime import UTC, datetime

    from cuegap.designs.dilemma._report import build_report
    from cuegap.reports import render_html

    analyze(companion, AnalysisSettings(n_boot=0))
    html = render_html(build_report(companion), now=datetime(2026, 1, 2, tzinfo=UTC)).html
    assert "Explicit − Implicit net, pp" in html  # figure captions
    assert "rank: Explicit → Implicit" in html  # summary header
    assert "Direction of change from Explicit to Implicit" in html
    assert "ΔFavor, pp (Implicit − Explicit)" in html  # inside the asymmetry figure
    assert "Direct" not in html.replace("Direction", "")
    assert "Puzzled" not in html
    assert "Implicit items convey identity without stating it" in html  # limitations


@pytest.mark.parametrize(
    ("cond", "text"),
    [
        (("direct", None), "Direct"),
        (("puzzled", "hard"), "Puzzled"),
        (("puzzled", "easy"), "Puzzled-easy"),
        (("formal_named", None), "FormalNamed"),
        (("something_new", None), "something_new"),
    ],
)
def test_condition_display_names(cond: tuple, text: str) -> None:
    from cuegap.designs.dilemma._report_format import _display

    assert _display(cond) == text


def _without_consequences(tmp_path: Path, *, also_with: bool = False) -> tuple[Path, Path]:
    bank, resp = _write(tmp_path)
    lines = [json.loads(x) for x in resp.read_text().splitlines()]
    out = []
    for line in lines:
        out.append({**line, "consequences": False})
        if also_with and line["probe"] == "what_if" and line["item_id"].startswith("explicit"):
            out.append({**line, "consequences": True})  # explicit only: no implicit pair
    resp.write_text("\n".join(json.dumps(x) for x in out) + "\n")
    return bank, resp


def test_a_store_without_consequences_gets_verdicts_on_those(engine, tmp_path: Path) -> None:
    for path in _without_consequences(tmp_path):
        ingest_path(engine, path)
    result = analyze(engine, AnalysisSettings(n_boot=0))
    assert result.settings["consequences"] is False
    verdicts = result.tables["verdicts"]
    assert list(verdicts["system"]) == ["s"]  # not an empty verdict table
    assert verdicts["gap_pp"].iloc[0] == pytest.approx(100)
    with pytest.raises(ValueError, match="no What-if decisions with consequences under both"):
        analyze(
            engine,
            AnalysisSettings(
                n_boot=0,
                explicit=("explicit", None),
                implicit=("implicit", None),
                consequences=True,
                chosen=frozenset({"explicit", "implicit", "consequences"}),
            ),
        )


def test_cli_consequences_choice_is_kept_and_checked(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    engine = make_engine(f"sqlite:///{db}")
    upgrade(engine)
    for path in _without_consequences(tmp_path, also_with=True):
        ingest_path(engine, path)
    runner = CliRunner()
    base = ["--db", str(db), "analyze", "--boot", "0"]
    res = runner.invoke(app, base)  # with consequences only the explicit side exists
    assert res.exit_code == 0, res.output
    assert "verdicts on prompts without consequences" in " ".join(res.output.split())
    choose = ["--explicit", "explicit", "--implicit", "implicit"]
    res = runner.invoke(app, [*base, *choose, "--consequences"])
    assert res.exit_code == 2
    text = " ".join(res.output.split())
    assert "no What-if decisions with consequences under both 'explicit' and" in text
    assert "the store has them without" in text
