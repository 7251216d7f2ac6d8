"""Untrusted text on the terminal: printed literally through the real CLI, on real stores.

System names, file names, reviewers, comments and quarantine reasons used to be read as
Rich markup: ``[/]`` raised a traceback after the data or sign-off was committed,
``[conceal]`` hid text, and ANSI escapes reached the terminal. Each test runs the real
commands (Typer's runner) on a SQLite file and on PostgreSQL (the ``db_url`` fixture).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sqlalchemy import func, select
from typer.testing import CliRunner

from cuegap.audit import save_analysis
from cuegap.cli import app
from cuegap.compliance import register_report
from cuegap.designs.dilemma.simulate import simulate, synthetic_item_bank
from cuegap.schema import SignOff, make_engine, upgrade
from cuegap.terminal import BIDI_CONTROLS, safe, visible

ESC = "\x1b"
CLOSE = "evil[/]"
CONCEAL = "[conceal]hidden\u202elivee"  # and a right-to-left override
ANSI = f"red{ESC}[31mALERT{ESC}[0m"
NAMES = (CLOSE, CONCEAL, ANSI)
runner = CliRunner()


def cli(db_url: str, *args: str):
    result = runner.invoke(app, ["--db", db_url, *args], env={"COLUMNS": "250"})
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result


def assert_literal(output: str, *texts: str) -> None:
    """Each text appears exactly as written (control characters as \\x escapes), and no
    escape character reaches the terminal."""
    for text in texts:
        assert visible(text) in output, (text, output)
    assert ESC not in output and "\r" not in output
    assert not [c for c in output if c in BIDI_CONTROLS]  # shown as \u202e, never reordering


def test_safe_shows_markup_and_control_characters_literally() -> None:
    from rich.console import Console

    console = Console(width=200, emoji=False, color_system=None)
    for text in (*NAMES, "[bold]x[/bold]", "a\rb\u202ec", "tab\there", "[link=file:///x]l"):
        with console.capture() as cap:
            console.print(f"[bold]{safe(text)}[/] end", end="")
        assert cap.get() == visible(text) + " end"
    assert visible("a\x00\x07\x7f\x9b\u202e\u2028b") == "a\\x00\\x07\\x7f\\x9b\\u202e\\u2028b"
    assert visible("l1\nl2") == "l1\\x0al2" and visible("l1\nl2", newlines=True) == "l1\nl2"


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small simulated audit whose three systems carry the hostile names, in a response
    file whose own name is markup, plus one quarantined line with markup in its item id."""
    root = tmp_path_factory.mktemp("terminal-data")
    bank = synthetic_item_bank(seed=1, n_dilemmas=12)
    result = simulate(root / "sim", systems=3, seed=1, item_bank=bank)
    text = result.responses_path.read_text("utf-8")
    for i, name in enumerate(NAMES, start=1):
        text = text.replace(json.dumps(f"sim-system-{i:02d}"), json.dumps(name))
    bad = {"system": CLOSE, "item_id": "nope[/]", "probe": "main", "response": "x"}
    (root / "[conceal]responses.jsonl").write_text(text + json.dumps(bad) + "\n", "utf-8")
    (root / "bank.json").write_bytes(result.itembank_path.read_bytes())
    return root


def test_ingest_status_and_analyze_print_hostile_names_literally(
    db_url: str, dataset: Path
) -> None:
    responses = dataset / "[conceal]responses.jsonl"
    out = cli(db_url, "ingest", str(dataset / "bank.json"), str(responses))
    assert out.exit_code == 0, out.output
    assert_literal(out.output, "[conceal]responses.jsonl", "unknown item_id 'nope[/]'")
    out = cli(db_url, "status")
    assert out.exit_code == 0, out.output
    assert_literal(out.output, *NAMES)
    out = cli(db_url, "analyze", "--boot", "5")
    assert out.exit_code == 0, out.output
    assert_literal(out.output, *NAMES)


def test_signoff_and_verify_print_reviewer_comment_and_paths_literally(
    db_url: str, tmp_path: Path
) -> None:
    engine = make_engine(db_url)
    upgrade(engine)
    analysis_id = save_analysis(
        engine,
        kind="frequentist",
        status="ok",
        data_fingerprint="e" * 64,
        system_fingerprints={},
        settings={},
        tables={},
    )
    report = tmp_path / "[conceal]report.pdf"
    report.write_bytes(b"%PDF-1.7 fake")
    register_report(engine, report, analysis_id=analysis_id)
    reviewer = f"[/]Ada{ESC}[2J[conceal]"
    out = cli(
        db_url,
        "signoff",
        str(report),
        "--reviewer",
        reviewer,
        "--decision",
        "reject",
        "--comment",
        CLOSE,
    )
    assert out.exit_code == 0, out.output
    assert_literal(out.output, reviewer)
    with engine.connect() as conn:
        assert conn.execute(select(func.count()).select_from(SignOff)).scalar_one() == 1
    report.unlink()
    out = cli(db_url, "verify")
    assert out.exit_code == 1, out.output
    assert_literal(out.output, "[conceal]report.pdf is missing")
    engine.dispose()


def test_error_messages_are_printed_literally(tmp_path: Path) -> None:
    """An error quoting a policy section once lost its brackets: "unknown section ; known: ,"."""
    policy = tmp_path / "policy.toml"
    policy.write_text("[verdicts]\ndelta_pp = 3\n")
    out = runner.invoke(app, ["--db", str(tmp_path / "x.db"), "init"])
    assert out.exit_code == 0, out.output
    out = cli(f"sqlite:///{tmp_path / 'x.db'}", "analyze", "--policy", str(policy))
    assert out.exit_code == 2
    assert "unknown section [verdicts]; known sections: [verdict], [data]" in out.output
