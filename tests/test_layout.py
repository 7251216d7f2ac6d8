"""The package's layout keeps its promises: one package per design, pure statistics free of
the store and the templates, no import cycle at load time, and no new reach into another
package's private modules (``docs/architecture.md``, "Layers").

The import graph is read from the source with :mod:`ast` (no module is imported), so the
checks also see imports that sit inside functions.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

from cuegap.designs import registered

PACKAGE = Path(__file__).resolve().parents[1] / "cuegap"

#: What a design's pure statistics (``designs/<name>/stats/``) may never import.
IMPURE = ("sqlalchemy", "sqlmodel", "jinja2", "weasyprint", "alembic", "typer", "rich")
IMPURE_CUEGAP = (
    "cuegap.schema", "cuegap.ingest", "cuegap.reports", "cuegap.audit", "cuegap.cli",
    "cuegap.compliance", "cuegap.publish", "cuegap.reanalysis",
)  # fmt: skip


def _modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        if "migrations" in path.parts:
            continue
        rel = path.relative_to(PACKAGE.parent).with_suffix("")
        parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
        found[".".join(parts)] = path
    return found


MODULES = _modules()


def _imports(name: str, path: Path, *, top_only: bool) -> Iterator[tuple[str, str | None]]:
    """(module, imported name or None) for every import of ``name``'s source."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):  # imports for type checkers only never run
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            node.body = []
    nodes = tree.body if top_only else list(ast.walk(tree))
    is_pkg = path.name == "__init__.py"
    for node in nodes:
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, None
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".") if is_pkg else name.split(".")[:-1]
                base = base[: len(base) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            for alias in node.names:
                full = f"{module}.{alias.name}"
                yield (full, None) if full in MODULES else (module, alias.name)


def _graph(*, top_only: bool) -> dict[str, set[str]]:
    return {
        name: {m for m, _ in _imports(name, path, top_only=top_only) if m in MODULES}
        for name, path in MODULES.items()
    }


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_cycle_finder_finds_a_planted_cycle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycles(graph) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


#: The one import that may close a loop: the registry loading the built-in designs on first
#: use, as it loads a third party's through the entry point group (shared code reaches a
#: design only through the registry).
PLUGIN_LOADS = {("cuegap.designs._registry", "cuegap.designs._builtin")}


def test_no_import_cycle_at_load_time() -> None:
    """No two modules import each other, directly or round a loop, at module level."""
    assert _cycles(_graph(top_only=True)) == []


def test_no_import_cycle_even_inside_functions() -> None:
    """No loop of imports either when the imports inside functions count: no module needs
    a deferred import to load (imports for type checkers only do not count)."""
    graph = _graph(top_only=False)
    for importer, imported in PLUGIN_LOADS:
        graph[importer].discard(imported)
    assert _cycles(graph) == []


def test_every_design_is_a_package_of_its_own() -> None:
    """Each built-in design's class is the ``__init__`` of ``cuegap/designs/<name>/``, and
    its statistics sit in that package's ``stats/``."""
    builtin = [d for d in registered().values() if type(d).__module__.startswith("cuegap.")]
    assert len(builtin) >= 4
    for design in builtin:
        module = type(design).__module__
        assert module.count(".") == 2 and module.startswith("cuegap.designs."), module
        folder = PACKAGE / "designs" / module.rsplit(".", 1)[1]
        assert (folder / "__init__.py").is_file(), folder
        assert (folder / "stats" / "__init__.py").is_file(), folder


STATS = sorted(n for n in MODULES if ".stats" in n and n.startswith("cuegap.designs."))


@pytest.mark.parametrize("name", STATS)
def test_design_statistics_are_pure(name: str) -> None:
    """A design's statistics import no database, template, CLI or store code, not even
    inside a function."""
    bad = [
        module
        for module, _ in _imports(name, MODULES[name], top_only=False)
        if module.split(".")[0] in IMPURE
        or any(module == p or module.startswith(p + ".") for p in IMPURE_CUEGAP)
    ]
    assert bad == [], f"{name} imports {bad}"


def test_the_purity_check_sees_an_import_inside_a_function(tmp_path: Path) -> None:
    path = tmp_path / "mod.py"
    path.write_text("def f():\n    from sqlalchemy import text\n    return text\n")
    assert ("sqlalchemy", "text") in list(_imports("x.mod", path, top_only=False))
    assert list(_imports("x.mod", path, top_only=True)) == []


def _owner_unit(module: str) -> str:
    """The unit a private module belongs to: a design's package, or a shared layer."""
    parts = module.split(".")
    if len(parts) > 2 and parts[1] == "designs" and not parts[2].startswith("_"):
        return ".".join(parts[:3])
    return ".".join(parts[:2])


def private_reaches(modules: dict[str, Path] | None = None) -> set[tuple[str, str]]:
    """(importer, private module or name) for every import of another unit's private part:
    a path component or name that starts with one underscore, in a shared layer or design
    package other than the importer's own."""
    found = set()
    for name, path in (MODULES if modules is None else modules).items():
        for module, imported in _imports(name, path, top_only=False):
            if not module.startswith("cuegap"):
                continue
            parts = module.split(".") + ([imported] if imported else [])
            for i, part in enumerate(parts):
                if part.startswith("_") and not part.startswith("__"):
                    target = ".".join(parts[: i + 1])
                    if _owner_unit(target) != _owner_unit(name):
                        found.add((name, target))
                    break
    return found


def test_no_reach_into_another_units_private_modules() -> None:
    """A design or layer uses another one only through its public names: its facade
    (``cuegap.reports``, ``cuegap.audit``, ``cuegap.designs``, ...) or a public module."""
    assert sorted(private_reaches()) == []


def test_the_reach_check_sees_a_private_import(tmp_path: Path) -> None:
    """The check above can fail: a design module importing another design's private
    module, or a layer's private helper, is found."""
    src = (
        "from cuegap.designs.qa._analysis import analyze_qa\n"
        "def f():\n    from cuegap.reports._format import _text\n"
    )
    path = tmp_path / "probe.py"
    path.write_text(src)
    found = private_reaches({"cuegap.designs.conversation._probe": path})
    assert found == {
        ("cuegap.designs.conversation._probe", "cuegap.designs.qa._analysis"),
        ("cuegap.designs.conversation._probe", "cuegap.reports._format"),
    }
    path.write_text("from cuegap.designs.conversation._report import x\n")
    assert private_reaches({"cuegap.designs.conversation._probe": path}) == set()


def test_private_parts_belong_to_a_design_package_or_a_layer() -> None:
    assert _owner_unit("cuegap.designs.qa.stats._scores") == "cuegap.designs.qa"
    assert _owner_unit("cuegap.designs._verdicts") == "cuegap.designs"
    assert _owner_unit("cuegap.reports._format") == "cuegap.reports"
