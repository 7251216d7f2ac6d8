"""The README and docs/ hold together: every relative link and anchor resolves, every
document is reachable from the README, and the README stays a front door."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent
DOCS = sorted((ROOT / "docs").glob("*.md"))
PAGES = [ROOT / "README.md", *DOCS]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def _outside_code(text: str) -> str:
    """The text without fenced code blocks and inline code spans."""
    text = re.sub(r"^```.*?^```", "", text, flags=re.M | re.S)
    return re.sub(r"`[^`\n]*`", "", text)


def anchors(path: Path) -> set[str]:
    """GitHub's heading anchors of a Markdown file: lower case, punctuation dropped, spaces
    to hyphens, repeats numbered."""
    seen: dict[str, int] = {}
    out = set()
    text = re.sub(r"^```.*?^```", "", path.read_text("utf-8"), flags=re.M | re.S)
    for line in text.splitlines():
        m = re.match(r"#{1,6} (.*)", line)
        if not m:
            continue
        slug = re.sub(r"[^\w\- ]", "", m.group(1).strip().lower()).replace(" ", "-")
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        out.add(slug if n == 0 else f"{slug}-{n}")
    return out


def test_anchor_slugs_follow_github() -> None:
    """Backticks, apostrophes, colons and parentheses drop out; spaces become hyphens."""
    page = ROOT / "docs" / "formats.md"
    assert "input-cuegaps-own-format" in anchors(page)
    assert "qa-item-banks-and-answers-the-qa-design" in anchors(page)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_relative_links_and_anchors_resolve(page: Path) -> None:
    bad = []
    for target in LINK.findall(_outside_code(page.read_text("utf-8"))):
        if re.match(r"[a-z]+:", target):
            continue  # http(s), mailto: not checked here
        file, _, anchor = target.partition("#")
        dest = (page.parent / file).resolve() if file else page
        if not dest.exists():
            bad.append(f"{target}: no such file")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            bad.append(f"{target}: no heading with anchor #{anchor}")
    assert not bad, f"{page.relative_to(ROOT)}: " + "; ".join(bad)


def test_every_document_is_linked_from_the_readme() -> None:
    readme = (ROOT / "README.md").read_text("utf-8")
    missing = [p.name for p in DOCS if p.name != "README.md" and f"(docs/{p.name}" not in readme]
    assert not missing, f"README.md links no {missing}"


def test_readme_is_a_front_door() -> None:
    """Reference material belongs in docs/: the README stays short."""
    assert len((ROOT / "README.md").read_bytes()) < 15_000
