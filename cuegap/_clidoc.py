"""Render the CLI reference in Markdown from the real Typer/Click commands.

``python -m cuegap._clidoc --write docs/cli.md`` (or ``--write`` alone) refreshes the section
of ``docs/cli.md`` between the ``<!-- cli-reference -->`` markers; ``tests/test_cli.py`` fails
when it is out of date.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import typer

START, END = "<!-- cli-reference:start -->", "<!-- cli-reference:end -->"
#: The document that holds the reference, relative to the repository root.
DOC = Path("docs") / "cli.md"


def _is_argument(p: Any) -> bool:
    return p.param_type_name == "argument"


def _metavar(p: Any) -> str:
    return p.name.upper() + ("..." if p.nargs == -1 else "")


def _param_line(p: Any) -> str:
    if _is_argument(p):
        return f"- `{_metavar(p)}`" + (f": {p.help}" if getattr(p, "help", None) else "")
    opts = " / ".join(f"`{o}`" for o in [*p.opts, *p.secondary_opts])
    text = f"- {opts}"
    help_ = getattr(p, "help", None)
    if help_:
        text += f": {help_}"
    default = p.default
    if isinstance(default, str | int | float | Path) and not isinstance(default, bool):
        text += f" (default: `{default}`)"
    return text


def render(app: typer.Typer) -> str:
    """The CLI reference as Markdown."""
    root = typer.main.get_command(app)
    lines = ["Global options (before the command):", ""]
    lines += [_param_line(p) for p in root.params if p.name != "help"]
    for name in sorted(root.commands):
        cmd = root.commands[name]
        args = " ".join(_metavar(p) for p in cmd.params if _is_argument(p))
        lines += ["", f"## `cuegap {name}{' ' + args if args else ''}`", ""]
        lines += [(cmd.help or "").strip().split("\n\n")[0].replace("\n", " ")]
        params = [p for p in cmd.params if p.name != "help"]
        if params:
            lines.append("")
            lines += [_param_line(p) for p in params]
    return "\n".join(lines) + "\n"


def section(doc: str) -> str:
    """The current CLI-reference section of a document (``docs/cli.md``)."""
    return doc.split(START, 1)[1].split(END, 1)[0].strip("\n") + "\n"


def main(argv: list[str]) -> int:
    from cuegap.cli import app

    text = render(app)
    if argv[:1] == ["--write"] and len(argv) <= 2:
        path = Path(argv[1]) if len(argv) == 2 else DOC
        doc = path.read_text("utf-8")
        head, rest = doc.split(START, 1)
        tail = rest.split(END, 1)[1]
        from cuegap.files import open_output

        with open_output(path) as fh:
            fh.write(f"{head}{START}\n{text}{END}{tail}".encode())
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
