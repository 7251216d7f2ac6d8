"""The conversation report's verdict cells and limitations follow the stored analysis
(issue 26, defect 3): no empty "deciding condition" cells, no "– to –" intervals, and no
fixed "six personas, two Discrim-Eval categories" whatever the data hold.

Stores: the CLI's small simulation of one system (every benchmark), and a subset of it
(only the BBQ transcripts). The expected numbers come from the simulation's own
``counts.csv``, not from the code under test.
"""

from __future__ import annotations

import re
import shutil
from collections import namedtuple
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from cuegap.cli import app
from cuegap.designs.conversation._report import build_conv_report
from cuegap.designs.conversation._report_scope import limitation_text, verdict_cells
from cuegap.reports import render_html
from cuegap.schema import make_engine

V = namedtuple("V", "system condition low high")
TESTS = pd.DataFrame(
    [dict(system="a", demographic="black", reference="white", instantiation="human",
          benchmark="BBQ", sd=np.nan, df=0.0, n_units=1,
          note="fewer than two units with a contrast")]
)  # fmt: skip


def test_verdict_cells_say_what_decides_and_why_there_is_no_interval() -> None:
    cells = verdict_cells(V("a", "black vs white, human", -0.01, 0.04), TESTS, TESTS, 200)
    assert cells == ("black vs white, human", "-0.010 to +0.040")
    untested = verdict_cells(V("a", "black vs white, human", np.nan, np.nan), TESTS, TESTS, 200)
    assert untested[1] == "no interval: BBQ: fewer than two units with a contrast"
    gate = verdict_cells(V("a", "", np.nan, np.nan), TESTS, TESTS, 200)
    assert gate == (
        "none: the policy minimum of 200 disagreements per shift rate decides",
        "no interval: no test is used",
    )
    none = verdict_cells(V("b", "", np.nan, np.nan), TESTS, TESTS, 200)
    assert none[0] == "none: no condition of the contrast could be computed"


def test_limitation_text_states_the_numbers_it_is_given() -> None:
    scope = dict(systems=1, benchmarks=["BBQ"], unit="question", units_min=2, units_max=2,
                 tests=4, personas=None, categories=None, questions=None,
                 why="the store holds no conversations of its own")  # fmt: skip
    text = limitation_text(scope)
    assert text.startswith(
        "Each t-test of the policy's contrast ran over 2 questions (1 degree of freedom), "
        "across 1 benchmark (BBQ) and 1 system (persona and category counts are not shown: "
        "the store holds no conversations of its own)."
    )
    assert "six" not in text and "Discrim" not in text


def cli(db: Path, *args: object) -> str:
    res = CliRunner().invoke(app, ["--db", str(db), *map(str, args)], env={"COLUMNS": "250"})
    assert res.exit_code == 0, res.output
    return res.output


@pytest.fixture(scope="module")
def sim(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("convscope")
    cli(root / "unused.db", "simulate", root / "sim", "--design", "conversation",
        "--systems", 1, "--seed", 7)  # fmt: skip
    return root / "sim"


def _report(db: Path, data: Path) -> tuple[str, object]:
    cli(db, "ingest", data)
    cli(db, "analyze", "--design", "conversation")
    engine = make_engine(f"sqlite:///{db}")
    report = build_conv_report(engine)
    html = render_html(report).html
    engine.dispose()
    return html, report


def _limitation(html: str) -> str:
    part = html[html.index('id="appendix-limitations"') :]
    return re.sub(r"\s+", " ", part[part.index("<li>") + 4 : part.index("</li>")]).replace(
        "&#39;", "'"
    )


@pytest.mark.parametrize("subset", [False, True], ids=["small-simulation", "bbq-only"])
def test_report_text_follows_the_data(sim: Path, tmp_path: Path, subset: bool) -> None:
    truth = pd.read_csv(sim / "counts.csv")
    data = sim
    if subset:  # only the BBQ transcripts (and the config snapshots they name)
        data = tmp_path / "bbq"
        shutil.copytree(sim / "bookkeeping", data / "bookkeeping")
        for d in (sim / "experiment").glob("bbq_*"):
            shutil.copytree(d, data / "experiment" / d.name)
        truth = truth[truth["benchmark"] == "BBQ"]
    html, report = _report(tmp_path / "conv.db", data)
    text = _limitation(html)
    benches = sorted(set(truth["benchmark"]))
    personas, categories = truth["persona"].nunique(), truth["category"].nunique()
    where = f"across {len(benches)} benchmark{'s' if len(benches) > 1 else ''} "
    assert where + f"({', '.join(benches)}) and 1 system;" in text
    assert f"the data hold {personas} personas and {categories} categories" in text
    tests = report.tables["conv_tests"]
    units = tests[tests["contrast"] == "demo_rc_base_pair"]["n_units"]
    lo, hi = int(units.min()), int(units.max())
    assert f"ran over {lo} to {hi} personas" in text or f"ran over {hi} personas" in text
    assert "six personas" not in html and "two Discrim-Eval" not in html
    summary = html[html.index('id="summary"') : html.index('id="findings"')]
    assert "– to –" not in summary and '<td></td><td class="num">' not in summary
    for row in re.findall(r'<td class="verdict">.*?</span></td>\s*<td>(.*?)</td>', summary, re.S):
        assert row.strip(), summary
