"""The prompt-variance design through the CLI on a SQLite file: simulate, ingest a folder,
analyze with --design, export; wrong options are one readable line, not a traceback."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from cuegap.cli import app


def cli(db: Path, *args: object, code: int = 0) -> str:
    res = CliRunner().invoke(app, ["--db", str(db), *map(str, args)], env={"COLUMNS": "250"})
    assert res.exit_code == code, res.output
    return re.sub(r"\s+", " ", res.output)


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> dict:
    root = tmp_path_factory.mktemp("pvcli")
    db, sim = root / "pv.db", root / "sim"
    # small: 2 systems x 2 categories x 80 questions x 8 combinations x 3 replicates (BBQ)
    # = 7,680 answers, + 2 x 2 subsets x 40 x 8 x 3 (DA) = 3,840.
    out = cli(db, "simulate", sim, "--design", "prompt-variance", "--systems", 2, "--seed", 5)
    assert "Simulated 2 systems and 11,520 answers" in out
    ingested = cli(db, "ingest", sim)
    assert "quarantined 0" in ingested and "truth.csv" in ingested
    return {"db": db, "root": root, "sim": sim}


def test_analyze_needs_the_design_then_stores_the_tables(store: dict) -> None:
    db = store["db"]
    out = cli(db, "analyze", code=2)
    assert "several designs (qa, prompt-variance)" in out and "Traceback" not in out
    out = cli(db, "analyze", "--design", "prompt-variance")
    assert "Prompt-variance analysis" in out and "computed and stored" in out
    assert "factors choice_format, field_order" in out and "η²" in out
    assert "pv_rank_discordance" in out and "pv_cue_gap_formats" not in out  # no cue gap
    again = cli(db, "analyze", "--design", "prompt-variance")
    assert "reused" in again
    listed = cli(db, "analyses")  # what it compared: the formats, δ on the bias-score scale
    assert "prompt formats: choice_format, field_order (zero-shot)" in listed
    assert "(bias score)" in listed and " pp " not in listed
    csv = store["root"] / "anova.csv"
    cli(db, "export", "pv_anova", "--out", csv)
    anova = pd.read_csv(csv)
    assert len(anova) == 2 * 2 * 4  # systems x categories (BBQ 2 + DA 2) x 2 metrics each
    assert anova["eta2"].between(0, 1).all()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--design", "prompt-variance", "--factors", "font"), "are not on any response"),
        (("--design", "prompt-variance", "--factors", "a,,b"), "comma-separated factor"),
        (("--design", "qa", "--factors", "choice_format"), "prompt-variance design only"),
    ],
)
def test_bad_options_are_one_line(store: dict, args: tuple, message: str) -> None:
    out = cli(store["db"], "analyze", *args, code=2)
    assert message in out and "Traceback" not in out


def test_simulate_refuses_cue_gap_elsewhere(tmp_path: Path) -> None:
    out = cli(tmp_path / "x.db", "simulate", tmp_path / "s", "--cue-gap", code=2)
    assert "--cue-gap applies to the prompt-variance design only" in out


def test_report_of_the_design_stands_alone_and_the_qa_report_keeps_the_section(
    store: dict,
) -> None:
    db, root = store["db"], store["root"]
    cli(db, "analyze", "--design", "prompt-variance")
    cli(db, "report", "--design", "prompt-variance", "--out", root / "r0", "--format", "html")
    (page,) = (root / "r0").glob("*.html")
    html = page.read_text("utf-8")
    assert "Prompt-construction variance report" in html and 'id="fig-pv-eta2"' in html
    assert 'id="findings"' not in html  # the QA findings are the QA report's
    out = cli(db, "report", "--design", "qa", "--out", root / "r1", code=2)
    assert "no QA analysis is stored: run cuegap analyze --design qa" in out
    cli(db, "analyze", "--design", "qa", "--boot", 100)
    cli(db, "report", "--design", "qa", "--out", root / "r1", "--format", "html")
    (page,) = (root / "r1").glob("*.html")
    html = page.read_text("utf-8")
    assert 'id="prompt-variance"' in html and 'id="fig-pv-eta2"' in html
    policy = root / "policy.toml"  # another policy re-runs the QA analysis with it first
    policy.write_text("[qa]\ndelta_bias = 0.2\n")
    cli(db, "report", "--design", "qa", "--policy", policy, "--out", root / "r2", "-f", "html")
    (page,) = (root / "r2").glob("*.html")
    assert "δ = 0.2" in page.read_text("utf-8")


#: Phrases of the QA design's report that a prompt-variance-only report must not carry.
QA_ONLY = ("explicit ones", "zero-shot strategy", "zero-shot", "implicit cue",
           "stereotyped when", "identity is implied", "Cue Visibility", "What-if")  # fmt: skip


def test_prompt_variance_report_speaks_of_its_own_design_only(store: dict) -> None:
    db, root = store["db"], store["root"]
    out = cli(db, "analyze", "--design", "prompt-variance")
    assert "Verdicts (formats)" in out
    cli(db, "report", "--design", "prompt-variance", "--out", root / "r3", "--format", "html")
    (page,) = (root / "r3").glob("*.html")
    html = page.read_text("utf-8")
    text = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))
    for phrase in QA_ONLY:
        assert phrase not in text, phrase
    methods = text[text.index("Appendix A. Methods") : text.index("Software")]
    # the counts come from the data: 2 systems, 2 + 2 categories, 4 × 2 combinations, 3 runs
    assert (
        "one of 2 systems answering one of 2 BBQ categories and 2 Difference-Awareness "
        "subsets under one of 8 combinations of 2 prompt-construction factors "
        "(choice_format (4 levels) × field_order (2 levels)), one of 3 replicates" in methods
    )
    assert "the implied − stated gap" not in methods  # no cue contrast in this store
    assert "describe these 2 systems and 2 BBQ categories" in methods
