"""Reports only read stored analyses (issue 26): no module under ``cuegap/reports/``
imports, names or calls an analysis function.

What counts as an analysis function, explicitly:

- any name matching :data:`ANALYSIS_NAME` (``analyze``, ``analyse_…``, ``analyze_bayes``,
  ``analyze_qa``, ``analyze_prompt_variance``, ``analyze_conversation``, ``reanalyze…``,
  ``run_…``, ``fit_…``, and the CLI's ``under_policy``), whether imported (``from X import
  analyze``), called through a module or object (``audit.analyze(...)``,
  ``design.under_policy(...)``) or named at all;
- any import of the packages that run analyses on purpose: :data:`RUNNING_MODULES`
  (re-analysis, publishing and the CLI).

Reading helpers (``load_table``, ``latest_analysis_id``, ``settings_from_dict``) are fine.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import cuegap

PACKAGE = Path(cuegap.__file__).parent
REPORTS = PACKAGE / "reports"
ANALYSIS_NAME = re.compile(r"^(_?analy[sz]e\w*|_?reanaly[sz]e\w*|run_\w+|fit_\w+|under_policy)$")
RUNNING_MODULES = re.compile(
    r"^cuegap\.(reanalysis\w*|publish|cli|designs\.\w+\.(_reanalysis|_cli\w*))(\.|$)"
)
#: Imports the rule checks names from (every cuegap package; ``designs`` has analyze too).
CUEGAP = re.compile(r"^cuegap(\.|$)")


def analysis_uses(source: str) -> list[str]:
    """Each import or name in ``source`` that runs an analysis (empty: it only reads)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module and CUEGAP.match(node.module):
            if RUNNING_MODULES.match(node.module):
                found.append(f"line {node.lineno}: imports {node.module}")
            found += [
                f"line {node.lineno}: imports {a.name} from {node.module}"
                for a in node.names
                if ANALYSIS_NAME.match(a.name) or RUNNING_MODULES.match(f"{node.module}.{a.name}")
            ]
        elif isinstance(node, ast.Import):
            found += [
                f"line {node.lineno}: imports {a.name}"
                for a in node.names
                if RUNNING_MODULES.match(a.name)
            ]
        elif isinstance(node, ast.Attribute) and ANALYSIS_NAME.match(node.attr):
            found.append(f"line {node.lineno}: uses .{node.attr}")
        elif isinstance(node, ast.Name) and ANALYSIS_NAME.match(node.id):
            found.append(f"line {node.lineno}: uses {node.id}")
    return found


def test_the_rule_catches_each_way_of_running_an_analysis() -> None:
    """The checker itself: each form is caught, reading helpers are not."""
    caught = {
        "from cuegap.audit import analyze": 1,
        "from cuegap.audit import analyze_bayes as ab": 1,
        "from cuegap.designs.conversation._analysis import ConvSettings, analyze_conversation": 1,
        "from cuegap.audit import qa\nqa.analyze_qa(engine, s)": 1,
        "def f(design, engine):\n    return design.under_policy(engine, 1, None, None)": 1,
        "import cuegap.designs.qa._reanalysis": 1,
        "from cuegap.designs.prompt_variance._cli import something": 1,
        "from cuegap import reanalysis": 1,
    }
    for source, n in caught.items():
        assert len(analysis_uses(source)) >= n, source
    reading = (
        "from cuegap.audit import load_table, latest_analysis_id, settings_from_dict\n"
        "analysis_id = latest_analysis_id(engine, 'qa')\nanalysis = 1\n"
    )
    assert analysis_uses(reading) == []


def test_reports_only_read_stored_analyses() -> None:
    """The shared report layer and every design's report modules (``_report*.py``)."""
    modules = sorted([*REPORTS.rglob("*.py"), *PACKAGE.glob("designs/*/_report*.py")])
    assert len(modules) > 20  # the walk found both
    found = {
        str(path.relative_to(PACKAGE)): uses
        for path in modules
        if (uses := analysis_uses(path.read_text(encoding="utf-8")))
    }
    assert found == {}, f"report modules that run analyses: {found}"
