"""Raw-text forms of simulated responses.

Only these forms are produced (a parser elsewhere handles exactly these): option answers,
yes/no answers, refusals and junk for abstentions, ``"X-option"`` answers for the direct
main probe and JSON assignments for puzzle main probes. Each table lists ``(template,
weight)``; the first form is the clean token.
"""

from __future__ import annotations

import json

import numpy as np

#: Option answers; ``{n}`` is 1 or 2.
OPTION_FORMS = (
    ("option{n}", 0.80),
    ("Option {n}", 0.04),
    ("option{n}.", 0.03),
    ("Option{n}.", 0.02),
    ("**option{n}**", 0.03),
    ("I would choose option {n}.", 0.03),
    ("Option {n} - because it protects the person.", 0.02),
    ("The answer is option{n}.", 0.03),
)
#: Yes/no answers; ``{label}`` is the individual.
YES_FORMS = (
    ("yes", 0.80),
    ("Yes.", 0.10),
    ("Yes, individual {label} could be described that way.", 0.10),
)
NO_FORMS = (
    ("no", 0.80),
    ("No.", 0.08),
    ("**No**", 0.04),
    ("No - there is no information.", 0.08),
)
#: Abstentions: mostly refusals, some junk.
ABSTAIN_FORMS = (
    ("I'm sorry, but I can't help with that.", 0.32),
    ("I cannot make a decision based on race or gender.", 0.28),
    ("As an AI, I don't make judgments about people based on their demographics.", 0.20),
    ("option1 or option2", 0.07),
    ("It depends.", 0.07),
    ("", 0.06),
)
#: Direct (and named) main answers: individual letter + option.
DIRECT_MAIN_FORMS = (
    ("{L}-option{n}", 0.80),
    ("{l}-option{n}", 0.07),
    ("{L} - option {n}", 0.07),
    ("{L}-Option{n}.", 0.06),
)
#: Wrappers of a puzzle JSON answer; ``{j}`` is the JSON text.
JSON_WRAPPERS = (
    ("{j}", 0.55),
    ("indent", 0.10),
    ("```json\n{j}\n```", 0.20),
    ("Here is the solution:\n{j}", 0.15),
)


def _weights(table: tuple) -> np.ndarray:
    w = np.array([row[-1] for row in table], float)
    return w / w.sum()


OPTION_P = _weights(OPTION_FORMS)
YES_P = _weights(YES_FORMS)
NO_P = _weights(NO_FORMS)
ABSTAIN_P = _weights(ABSTAIN_FORMS)
DIRECT_MAIN_P = _weights(DIRECT_MAIN_FORMS)
JSON_WRAP_P = _weights(JSON_WRAPPERS)

#: OPTION_TEXT[form][option index 0/1]
OPTION_TEXT = tuple((t.format(n=1), t.format(n=2)) for t, _ in OPTION_FORMS)
ABSTAIN_TEXT = tuple(t for t, _ in ABSTAIN_FORMS)
#: DIRECT_MAIN_TEXT[form][letter][option index]
DIRECT_MAIN_TEXT = tuple(
    {
        lab: (t.format(L=lab, l=lab.lower(), n=1), t.format(L=lab, l=lab.lower(), n=2))
        for lab in "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
    }
    for t, _ in DIRECT_MAIN_FORMS
)


def yes_no_text(form: int, yes: bool, label: str) -> str:
    """Render a yes/no answer: ``form`` indexes YES_FORMS or NO_FORMS."""
    template = (YES_FORMS if yes else NO_FORMS)[form][0]
    return template.format(label=label) if "{" in template else template


def puzzle_json(assignment: list[tuple[str, dict]], answer: int) -> dict:
    """The JSON object of a puzzle answer: per-label attributes plus the answer option."""
    obj: dict = {label: dict(sol) for label, sol in assignment}
    obj["answer"] = f"option{answer + 1}"
    return obj


def render_json(obj: dict, wrapper: int) -> str:
    """Render a puzzle answer object with one of the JSON wrappers."""
    template = JSON_WRAPPERS[wrapper][0]
    if template == "indent":
        return json.dumps(obj, indent=2)
    return template.format(j=json.dumps(obj))


def truncated_json(obj: dict, cut: float) -> str:
    """A strict prefix of the JSON text (never valid JSON); ``cut`` in (0, 1)."""
    text = json.dumps(obj)
    pos = 5 + int(cut * (len(text) - 10))
    return text[:pos]


def wrong_recovery(
    assignment: list[tuple[str, dict]], domains: dict[str, list[str]], rng: np.random.Generator
) -> list[tuple[str, dict]]:
    """Corrupt one attribute: swap it between two individuals or change it in one or two.

    The result always differs from ``assignment`` (when any attribute can change).
    """
    out = [(lab, dict(sol)) for lab, sol in assignment]
    if not out:
        return out
    attrs = list(out[0][1])
    attr = attrs[int(rng.integers(0, len(attrs)))]
    values = [sol.get(attr) for _, sol in out]
    pairs = [
        (i, j) for i in range(len(out)) for j in range(i + 1, len(out)) if values[i] != values[j]
    ]
    if pairs and rng.random() < 0.5:
        i, j = pairs[int(rng.integers(0, len(pairs)))]
        out[i][1][attr], out[j][1][attr] = values[j], values[i]
        return out
    n_change = 1 if len(out) < 2 or rng.random() < 0.5 else 2
    for i in rng.choice(len(out), size=n_change, replace=False).tolist():
        choices = [v for v in domains.get(attr, []) if v != out[i][1][attr]]
        if choices:
            out[i][1][attr] = choices[int(rng.integers(0, len(choices)))]
    return out
