"""docs/notebook.md cannot drift: every ``python`` block of it runs, each in a fresh
namespace in its own working directory, and must finish without an error (the blocks hold
their own ``assert`` lines)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[1] / "docs" / "notebook.md"
BLOCK = re.compile(r"^### (?P<title>.+?)\n.*?^```python\n(?P<code>.*?)^```", re.M | re.S)


def _blocks() -> list[tuple[str, str]]:
    text = DOC.read_text(encoding="utf-8")
    return [(m["title"], m["code"]) for m in BLOCK.finditer(text)]


def test_every_python_block_is_found() -> None:
    """One example per built-in design, and no python block outside an example."""
    blocks = _blocks()
    assert len(blocks) == DOC.read_text(encoding="utf-8").count("```python") == 4
    for name in ("`dilemma`", "`qa`", "`prompt-variance`", "`conversation`"):
        assert any(name in title for title, _ in blocks), name


@pytest.mark.parametrize("title, code", _blocks(), ids=[t for t, _ in _blocks()])
def test_the_example_runs(title: str, code: str, tmp_path: Path,
                          monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("CUEGAP_DB", raising=False)
    exec(compile(code, f"{DOC.name}: {title}", "exec"), {"__name__": "__notebook__"})
    assert list(tmp_path.glob("notebook/*.db")), "the example built no store"
