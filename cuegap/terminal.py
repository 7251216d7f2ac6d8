"""Printing untrusted text on a terminal: literally, never as Rich markup or control codes.

System names, file names, reviewers, comments and quarantine reasons come from input files
and the store. Printed through Rich as they are, ``[/]`` raises a markup error (after the
data was already committed), ``[conceal]`` hides what follows, and an ANSI escape sequence
or a carriage return can repaint what the terminal shows. :func:`safe` turns such text into
what it literally is.
"""

from __future__ import annotations

import unicodedata

from rich.markup import escape

# Bidirectional-text controls can reorder what a reader sees; line and paragraph separators
# break a line like a newline does. Visible as \\u escapes, like C0/C1 controls.
_INVISIBLE = frozenset(
    "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u2028\u2029"
)


#: The bidirectional-text controls (ALM, LRM, RLM, LRE-RLO, LRI-PDI): each shown in a report
#: as its escape (``\\u202e``), so that untrusted text cannot reorder what is around it.
BIDI_CONTROLS = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
_BIDI_TABLE = {ord(c): f"\\u{ord(c):04x}" for c in BIDI_CONTROLS}


def show_bidi(text: str) -> str:
    """``text`` with every bidirectional-text control replaced by its visible escape.

    For HTML (reports), where line breaks and tabs must stay as they are; :func:`visible`
    also shows the other control characters, for terminals.

    Parameters
    ----------
    text : str
        Any text; a :class:`markupsafe.Markup` stays Markup (the escapes hold no HTML
        special character).

    Returns
    -------
    str
        Of the same type as ``text``; ``text`` itself when it has no control.
    """
    if not any(c in text for c in BIDI_CONTROLS):
        return text
    return type(text)(str.translate(text, _BIDI_TABLE))


def _visible(ch: str) -> str:
    if ch in _INVISIBLE or unicodedata.category(ch) == "Cc":
        code = ord(ch)
        return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"
    return ch


def visible(text: object, *, newlines: bool = False) -> str:
    """``text`` with control characters shown as escapes, as :func:`repr` shows them.

    Parameters
    ----------
    text : object
        Anything; converted with :class:`str`.
    newlines : bool
        Keep ``\\n`` as a line break (for multi-line messages of cuegap's own); by default
        it is shown as ``\\x0a`` like every other control character, so that a name cannot
        start a line of its own that looks like cuegap's output.

    Returns
    -------
    str
        The text with every C0/C1 control character (ESC, CR, BEL, ...), DEL and
        bidirectional-text control replaced by ``\\xNN`` / ``\\uNNNN``; a backslash already in
        the text stays as it is.
    """
    s = str(text)
    if newlines:
        return "\n".join("".join(map(_visible, part)) for part in s.split("\n"))
    return "".join(map(_visible, s))


def safe(text: object, *, newlines: bool = False) -> str:
    """Untrusted ``text`` ready to embed in a Rich markup string, to be shown literally.

    Control characters are made visible (see :func:`visible`) and Rich markup is escaped,
    so ``f"[bold]{safe(name)}[/]"`` prints the name exactly, whatever it contains.

    Parameters
    ----------
    text : object
        Anything; converted with :class:`str`.
    newlines : bool
        Keep line breaks (see :func:`visible`).

    Returns
    -------
    str

    Notes
    -----
    A trailing backslash is doubled, as :func:`rich.markup.escape` does, so that it cannot
    escape a tag that follows it.
    """
    return escape(visible(text, newlines=newlines))
